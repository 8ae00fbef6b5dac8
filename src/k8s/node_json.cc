#include "dra/k8s/node_json.h"

#include <tuple>

#include "k8s/json_fields.h"
#include "k8s/json_text.h"
#include "k8s/shared_fields.h"

namespace dra::k8s {
namespace internal {

template <>
struct JsonObject<Node> {
  static constexpr auto kFields = std::tuple{
      ConstantField{"apiVersion", "v1"},
      ConstantField{"kind", "Node"},
      Always("metadata", &Node::metadata),
  };
};

}  // namespace internal

absl::StatusOr<Node> NodeFromJson(const nlohmann::json& value) { return internal::FromJson<Node>(value); }

absl::StatusOr<Node> ParseNode(std::string_view json_text) {
  absl::StatusOr<nlohmann::json> value = internal::ParseJsonText(absl::string_view(json_text.data(), json_text.size()));
  if (!value.ok()) return value.status();
  return NodeFromJson(*value);
}

nlohmann::json ToJson(const Node& node) { return internal::ToJson(node); }

}  // namespace dra::k8s
