/// @file
/// JSON codec for dra::k8s::NodeSelector (core/v1), with the conventions of
/// resource_claim_json.h. Useful on its own to read
/// ResourceClaim.status.allocation.nodeSelector, which the claim model keeps as
/// raw JSON.
#pragma once

#include "absl/status/statusor.h"
#include "dra/k8s/node_selector.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Decodes a NodeSelector object.
absl::StatusOr<NodeSelector> NodeSelectorFromJson(const nlohmann::json& json);
/// "nodeSelectorTerms" is always written (an empty list as []).
nlohmann::json ToJson(const NodeSelector& selector);

}  // namespace dra::k8s
