// The driver as the Helper's parts see it: each background error is counted
// for /metrics (dra_background_errors_total) before the driver gets it.
#pragma once

#include "dra/kubeletplugin/driver.h"
#include "kubeletplugin/metrics.h"

namespace dra::kubeletplugin::internal {

class ErrorCountingDriver final : public Driver {
 public:
  ErrorCountingDriver(Driver& driver, HelperMetrics& metrics) : driver_(driver), metrics_(metrics) {}

  absl::StatusOr<PrepareResults> PrepareResourceClaims(const CallContext& ctx,
                                                       std::span<const k8s::ResourceClaim> claims) override {
    return driver_.PrepareResourceClaims(ctx, claims);
  }
  absl::StatusOr<UnprepareResults> UnprepareResourceClaims(const CallContext& ctx,
                                                           std::span<const k8s::ClaimRef> claims) override {
    return driver_.UnprepareResourceClaims(ctx, claims);
  }
  void HandleError(const absl::Status& status, ErrorSeverity severity, std::string_view context) override {
    metrics_.ObserveBackgroundError(severity);
    driver_.HandleError(status, severity, context);
  }
  bool ReportsDeviceHealth() const override { return driver_.ReportsDeviceHealth(); }
  void RestorePreparedClaims(std::span<const PreparedClaim> claims) override { driver_.RestorePreparedClaims(claims); }

 private:
  Driver& driver_;
  HelperMetrics& metrics_;
};

}  // namespace dra::kubeletplugin::internal
