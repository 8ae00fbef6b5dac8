// GpuConfig: the opaque device configuration of the example GPU driver (API
// group gpu.resource.example.com/v1alpha1, as in the Go dra-example-driver),
// and which config applies to which allocated device.
//
//   config:
//   - opaque:
//       driver: gpu.example.com
//       parameters:
//         apiVersion: gpu.resource.example.com/v1alpha1
//         kind: GpuConfig
//         sharing:
//           strategy: TimeSlicing          # or SpacePartitioning
//           timeSlicingConfig:
//             interval: Long               # Default, Short, Medium, Long
//           # spacePartitioningConfig: {partitionCount: 4}   # 1..16
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "dra/k8s/resource_claim.h"
#include "nlohmann/json.hpp"

namespace gpu {

inline constexpr char kGpuConfigApiVersion[] = "gpu.resource.example.com/v1alpha1";
inline constexpr char kGpuConfigKind[] = "GpuConfig";

struct GpuConfig {
  enum class Strategy { kTimeSlicing, kSpacePartitioning };
  Strategy strategy = Strategy::kTimeSlicing;
  std::string interval = "Default";  // TimeSlicing
  int partition_count = 1;           // SpacePartitioning

  bool operator==(const GpuConfig&) const = default;
};

// Decodes opaque parameters strictly: apiVersion and kind must be ours,
// unknown or misplaced fields are errors. InvalidArgument with the field
// path and rule, e.g. `sharing.timeSlicingConfig.interval: Unsupported value:
// "Fast": unknown time-slice interval: Fast; supported values: "Default",
// "Long", "Medium", "Short"` (the words after the value are the reference
// driver's).
absl::StatusOr<GpuConfig> DecodeGpuConfig(const nlohmann::json& parameters);

// The GpuConfig of each allocation result of `driver` in the claim
// (opaque_configs.h).
absl::StatusOr<std::map<size_t, GpuConfig>> ConfigsForResults(const dra::k8s::ResourceClaim& claim,
                                                              const std::string& driver);

}  // namespace gpu
