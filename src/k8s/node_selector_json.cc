#include "dra/k8s/node_selector_json.h"

#include "k8s/json_fields.h"
#include "k8s/shared_fields.h"

namespace dra::k8s {

absl::StatusOr<NodeSelector> NodeSelectorFromJson(const nlohmann::json& value) {
  return internal::FromJson<NodeSelector>(value);
}

nlohmann::json ToJson(const NodeSelector& selector) { return internal::ToJson(selector); }

}  // namespace dra::k8s
