/// @file
/// JSON codec for dra::k8s::DeviceClass (resource.k8s.io/v1), with the
/// conventions of resource_claim_json.h. Encoding writes apiVersion
/// "resource.k8s.io/v1" and kind "DeviceClass".
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "dra/k8s/device_class.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Decodes a DeviceClass object.
absl::StatusOr<DeviceClass> DeviceClassFromJson(const nlohmann::json& json);
/// Parses JSON text, then DeviceClassFromJson.
absl::StatusOr<DeviceClass> ParseDeviceClass(std::string_view json_text);
/// Encodes `device_class`; cannot fail.
nlohmann::json ToJson(const DeviceClass& device_class);

}  // namespace dra::k8s
