// NetConfig: the opaque configuration of NICs (--device-profile=net), as
// dra-example-driver's net profile has it:
//
//   config:
//   - opaque:
//       driver: net.example.com
//       parameters:
//         apiVersion: net.resource.example.com/v1alpha1
//         kind: NetConfig
//         bwBurst:
//           ingressBurst: 1048576   # bytes; 0 or unset: no burst
//           egressBurst: 0
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace gpu {

inline constexpr char kNetConfigApiVersion[] = "net.resource.example.com/v1alpha1";
inline constexpr char kNetConfigKind[] = "NetConfig";

struct NetConfig {
  uint64_t ingress_burst = 0;
  uint64_t egress_burst = 0;

  bool operator==(const NetConfig&) const = default;
};

// Decodes opaque parameters strictly, as DecodeGpuConfig does: apiVersion
// and kind must be ours, bwBurst is required, unknown fields are errors, and
// a burst must be an integer from 0 to below 32 GiB (8 x 2^32 - 8: the
// reference's "cannot be more than 4GB" of a rate in bytes per second).
// InvalidArgument with the field and the rule.
absl::StatusOr<NetConfig> DecodeNetConfig(const nlohmann::json& parameters);

}  // namespace gpu
