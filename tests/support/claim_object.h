// The ResourceClaim object the client, kubelet and node tests and the
// claim-fetch bench create: one request "gpu" for exactly one device of
// `device_class`.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace dra::testing {

inline nlohmann::json NewClaimObject(const std::string& ns, const std::string& name,
                                     const std::string& device_class = "gpu.example.com") {
  return nlohmann::json{
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"namespace", ns}, {"name", name}}},
      {"spec",
       {{"devices",
         {{"requests",
           nlohmann::json::array({{{"name", "gpu"}, {"exactly", {{"deviceClassName", device_class}}}}})}}}}}};
}

}  // namespace dra::testing
