// The ResourceClaim object the client tests and the claim-fetch bench create:
// one request "gpu" for exactly one device of class gpu.example.com.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace dra::testing {

inline nlohmann::json NewClaimObject(const std::string& ns, const std::string& name) {
  return nlohmann::json{
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"namespace", ns}, {"name", name}}},
      {"spec",
       {{"devices",
         {{"requests",
           nlohmann::json::array({{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}}})}}}}}};
}

}  // namespace dra::testing
