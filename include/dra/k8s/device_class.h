/// @file
/// dra::k8s::DeviceClass: resource.k8s.io/v1 DeviceClass (Kubernetes 1.37) as
/// plain values. `unknown_fields` is explained in object_meta.h. JSON codec:
/// device_class_json.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dra/k8s/object_meta.h"
#include "dra/k8s/resource_claim.h"  // DeviceSelector, OpaqueDeviceConfiguration
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Configuration for the devices of a class.
struct DeviceClassConfiguration {
  std::optional<OpaqueDeviceConfiguration> opaque;  ///< the configuration
  nlohmann::json unknown_fields;                    ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceClassConfiguration&) const = default;  ///< member-wise equality
};

/// Which devices are in the class, and their configuration.
struct DeviceClassSpec {
  std::vector<DeviceSelector> selectors;         ///< all must select a device of the class
  std::vector<DeviceClassConfiguration> config;  ///< for every claim that allocates from the class
  /// The extended resource name (e.g. "example.com/gpu") that pods may request
  /// to get a device of this class.
  std::optional<std::string> extended_resource_name;
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceClassSpec&) const = default;  ///< member-wise equality
};

/// A DeviceClass: a kind of device that claims ask for by name.
struct DeviceClass {
  ObjectMeta metadata;            ///< name, labels, ...
  DeviceClassSpec spec;           ///< selectors and configuration
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceClass&) const = default;  ///< member-wise equality
};

}  // namespace dra::k8s
