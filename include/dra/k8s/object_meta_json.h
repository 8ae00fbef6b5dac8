/// @file
/// JSON codec for the metav1 types every object embeds: ObjectMeta and
/// Condition. Same conventions as resource_claim_json.h: decoding keeps unknown
/// keys and names the JSON path in errors; encoding follows Go's omitempty and
/// is deterministic.
#pragma once

#include "absl/status/statusor.h"
#include "dra/k8s/object_meta.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Decodes an object's metadata.
absl::StatusOr<ObjectMeta> ObjectMetaFromJson(const nlohmann::json& json);
/// Encodes `metadata`; cannot fail.
nlohmann::json ToJson(const ObjectMeta& metadata);

/// Decodes one condition.
absl::StatusOr<Condition> ConditionFromJson(const nlohmann::json& json);
/// Encodes `condition`; cannot fail.
nlohmann::json ToJson(const Condition& condition);

}  // namespace dra::k8s
