// Which of a claim's opaque configs applies to each of a driver's allocated
// devices, whatever the config's type (GpuConfig, NetConfig).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dra/k8s/resource_claim.h"
#include "nlohmann/json.hpp"

namespace gpu {

// The config of each allocation result of `driver` in the claim, by index
// into status.allocation.devices.results: Config{} (the default), then the
// class's configs, then the claim's, each in order, a later one replacing an
// earlier one; a config applies when it names no requests or names the
// result's request (or, for a subrequest "r/s", its request "r"). Configs of
// other drivers are ignored. `decode` reads opaque parameters; its error is
// returned naming the config (status.allocation.devices.config[2].opaque.parameters....).
template <typename Config>
absl::StatusOr<std::map<size_t, Config>> ConfigsForResults(
    const dra::k8s::ResourceClaim& claim, const std::string& driver,
    const std::function<absl::StatusOr<Config>(const nlohmann::json&)>& decode) {
  std::map<size_t, Config> configs;
  if (!claim.status.allocation.has_value()) return configs;
  const dra::k8s::DeviceAllocationResult& devices = claim.status.allocation->devices;
  for (size_t i = 0; i < devices.results.size(); ++i) {
    if (devices.results[i].driver == driver) configs[i] = Config{};
  }
  // Class configs first, then the claim's; the API server keeps each group
  // in its own order.
  for (const std::string source : {"FromClass", "FromClaim"}) {
    for (size_t c = 0; c < devices.config.size(); ++c) {
      const dra::k8s::DeviceAllocationConfiguration& entry = devices.config[c];
      if (entry.source != source || !entry.opaque.has_value() || entry.opaque->driver != driver) continue;
      absl::StatusOr<Config> decoded = decode(entry.opaque->parameters);
      if (!decoded.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("status.allocation.devices.config[", c, "].opaque.parameters",
                                                       decoded.status().message().front() == ':' ? "" : ".",
                                                       decoded.status().message()));
      }
      for (auto& [index, config] : configs) {
        const std::string& request = devices.results[index].request;
        const std::string base = request.substr(0, request.find('/'));
        const bool applies = entry.requests.empty() ||
                             std::any_of(entry.requests.begin(), entry.requests.end(),
                                         [&](const std::string& name) { return name == request || name == base; });
        if (applies) config = *decoded;
      }
    }
  }
  return configs;
}

}  // namespace gpu
