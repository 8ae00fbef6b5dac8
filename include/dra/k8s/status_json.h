/// @file
/// JSON codec for dra::k8s::Status (metav1.Status, the body of API errors),
/// with the conventions of resource_claim_json.h. Encoding writes apiVersion
/// "v1" and kind "Status". code and retryAfterSeconds must fit in 32 bits.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "dra/k8s/status.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Decodes a Status object.
absl::StatusOr<Status> StatusFromJson(const nlohmann::json& json);
/// Parses JSON text, then StatusFromJson.
absl::StatusOr<Status> ParseStatus(std::string_view json_text);
/// Encodes `status`; cannot fail.
nlohmann::json ToJson(const Status& status);

}  // namespace dra::k8s
