// NicDriver: the kubelet-facing half of --device-profile=net. Prepare gives
// each allocated NIC the environment dra-example-driver's net profile
// gives: NET_DEVICE_<NAME>_RESOURCE_CLAIM and DRA_ADMIN_ACCESS, then
// NET_DEVICE_<n>_INGRESS_RATE and _EGRESS_RATE (the bandwidth the claim
// consumes, in bits per second: 10G is 10000000000) and, from its NetConfig,
// _INGRESS_BURST and _EGRESS_BURST when set; <n> is the NIC's index. A bad
// config or an unknown device fails that claim only.
#pragma once

#include <set>
#include <span>
#include <string>

#include "common/driver_metrics.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/log.h"

namespace gpu {

class NicDriver : public dra::kubeletplugin::Driver {
 public:
  struct Options {
    std::string driver_name;
    std::string common_cdi_id;
    std::set<std::string> devices;  // the node's NICs
    dra::Logger logger;
  };

  explicit NicDriver(Options options) : options_(std::move(options)) {}

  absl::StatusOr<dra::kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext& ctx, std::span<const dra::k8s::ResourceClaim> claims) override;
  absl::StatusOr<dra::kubeletplugin::UnprepareResults> UnprepareResourceClaims(
      const dra::CallContext& ctx, std::span<const dra::k8s::ClaimRef> claims) override;
  // Counted for /metrics; the Helper has logged it, and a fatal one ends
  // Helper::Wait with exit code 1.
  void HandleError(const absl::Status&, dra::kubeletplugin::ErrorSeverity severity, std::string_view) override {
    if (severity == dra::kubeletplugin::ErrorSeverity::kFatal) metrics_.CountFatalError();
  }
  // dra-example-driver's metrics of this driver's calls, for /metrics.
  const example::DriverMetrics& metrics() const { return metrics_; }

 private:
  dra::kubeletplugin::PrepareResult Prepare(const dra::k8s::ResourceClaim& claim) const;

  const Options options_;
  example::DriverMetrics metrics_;
};

}  // namespace gpu
