/// @file
/// KEP-5304 device metadata (Kubernetes 1.36 alpha, beta in 1.37): device
/// attributes and network data that the Helper writes into a file per claim
/// request and mounts read-only into the containers that use the claim,
/// through a CDI spec, in the layout and JSON of the Go helper
/// (k8s.io/dynamic-resource-allocation/kubeletplugin, metadata.go):
///
/// @code{.unparsed}
///   host:      <plugin data dir>/dra-device-metadata/<ns>_<claim>/<request>/metadata.json
///   CDI spec:  <CDI dir>/<driver>_metadata_<claim UID>_<request>.json, kind <driver>/metadata,
///              device <claim UID>_<request>, one read-only bind mount
///   container: /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/<driver>-metadata.json
///              (.../resourceclaimtemplates/<pod claim name>/... for a claim made from a template)
/// @endcode
///
/// The file is a JSON stream: one DeviceMetadata object per configured API
/// version, in the configured order (newest first), each
/// @code{.unparsed}
///   {"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",
///    "metadata":{"name":..,"namespace":..,"uid":..,"generation":1},
///    "podClaimName":..,"requests":[{"name":"<request[/subrequest]>",
///    "devices":[{"driver":..,"pool":..,"name":..,"attributes":{..},"networkData":{..}}]}]}
/// @endcode
/// which k8s.io/dynamic-resource-allocation/devicemetadata decodes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dra/k8s/resource_claim.h"
#include "dra/k8s/resource_slice.h"

namespace dra::kubeletplugin {

/// The DeviceMetadata API versions the Helper writes
/// (DeviceMetadataOptions::versions).
///@{
inline constexpr char kDeviceMetadataV1beta1[] = "metadata.resource.k8s.io/v1beta1";
inline constexpr char kDeviceMetadataV1alpha1[] = "metadata.resource.k8s.io/v1alpha1";
///@}

/// What one prepared device tells the workload (Device::metadata).
struct DeviceMetadata {
  /// As in a ResourceSlice: unqualified names are the driver's domain, e.g.
  /// "model"; others carry their domain, e.g. k8s::kPciBusIdAttribute.
  std::map<std::string, k8s::DeviceAttribute> attributes;
  std::optional<k8s::NetworkDeviceData> network_data;  ///< for a network device: interface, IPs, MAC

  bool operator==(const DeviceMetadata&) const = default;  ///< member-wise equality
};

/// Whether and how the Helper writes device metadata files (Options::device_metadata).
struct DeviceMetadataOptions {
  /// Off by default, as in the Go helper.
  bool enabled = false;
  /// The API versions to write, in this order. Must include the latest,
  /// kDeviceMetadataV1beta1; kDeviceMetadataV1alpha1 may follow for older
  /// readers. As in the Go helper there is no default: a driver names what its
  /// workloads read, so that an SDK update does not silently change it.
  std::vector<std::string> versions;
};

}  // namespace dra::kubeletplugin
