/// @file
/// JSON codec for dra::k8s::Node (core/v1, metadata only), with the
/// conventions of resource_claim_json.h. Encoding writes apiVersion "v1" and
/// kind "Node", plus spec and status exactly as they were read.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "dra/k8s/node.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Decodes a Node object.
absl::StatusOr<Node> NodeFromJson(const nlohmann::json& json);
/// Parses JSON text, then NodeFromJson.
absl::StatusOr<Node> ParseNode(std::string_view json_text);
/// Encodes `node`; cannot fail.
nlohmann::json ToJson(const Node& node);

}  // namespace dra::k8s
