/// @file
/// JSON codec for dra::k8s::ResourceClaim, in the form the API server reads
/// and writes. The codecs of the metav1 types it embeds (ObjectMeta,
/// Condition) are in object_meta_json.h, included here.
///
/// Decoding accepts what Go's decoder accepts: unknown keys are kept (see
/// object_meta.h), null means unset, apiVersion and kind may be absent. Errors
/// are InvalidArgument naming the JSON path and the rule, e.g.
/// "status.allocation.devices.results[2].pool: Invalid type: expected string,
/// got number".
///
/// Encoding writes apiVersion "resource.k8s.io/v1" and kind "ResourceClaim",
/// omits fields Go would omit or write as null, prints quantities in canonical
/// form, and is deterministic (object keys sorted).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "dra/k8s/object_meta_json.h"  // ObjectMeta and Condition codecs
#include "dra/k8s/resource_claim.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Decodes a ResourceClaim object.
absl::StatusOr<ResourceClaim> ResourceClaimFromJson(const nlohmann::json& json);
/// Parses JSON text, then ResourceClaimFromJson.
absl::StatusOr<ResourceClaim> ParseResourceClaim(std::string_view json_text);
/// Encodes `claim`; cannot fail.
nlohmann::json ToJson(const ResourceClaim& claim);
/// networkData of a status.devices entry (and of KEP-5304 device metadata).
nlohmann::json ToJson(const NetworkDeviceData& data);

}  // namespace dra::k8s
