#include "dra/k8s/object_meta_json.h"

#include "k8s/json_fields.h"
#include "k8s/shared_fields.h"

namespace dra::k8s {

absl::StatusOr<ObjectMeta> ObjectMetaFromJson(const nlohmann::json& value) {
  return internal::FromJson<ObjectMeta>(value);
}

nlohmann::json ToJson(const ObjectMeta& metadata) { return internal::ToJson(metadata); }

absl::StatusOr<Condition> ConditionFromJson(const nlohmann::json& value) {
  return internal::FromJson<Condition>(value);
}

nlohmann::json ToJson(const Condition& condition) { return internal::ToJson(condition); }

}  // namespace dra::k8s
