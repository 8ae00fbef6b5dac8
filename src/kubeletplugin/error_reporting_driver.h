// The driver as the Helper's parts see it: each background error is counted
// for /metrics (dra_background_errors_total) and logged before the driver
// gets it, and a fatal one is remembered and ends Helper::Wait.
#pragma once

#include <atomic>
#include <string>

#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/log.h"
#include "kubeletplugin/metrics.h"

namespace dra::kubeletplugin::internal {

class ErrorReportingDriver final : public Driver {
 public:
  ErrorReportingDriver(Driver& driver, HelperMetrics& metrics, Logger logger)
      : driver_(driver), metrics_(metrics), logger_(std::move(logger)) {}

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
    logger_.Error("Background error", {{"context", std::string(context)},
                                       {"severity", std::string(ErrorSeverityName(severity))},
                                       {"err", status.ToString()}});
    if (severity == ErrorSeverity::kFatal) {
      fatal_ = true;
      if (const TerminationSignals* waiting = waiting_) waiting->Interrupt();
    }
    driver_.HandleError(status, severity, context);
  }
  bool ReportsDeviceHealth() const override { return driver_.ReportsDeviceHealth(); }
  void RestorePreparedClaims(std::span<const PreparedClaim> claims) override { driver_.RestorePreparedClaims(claims); }

  // Helper::Wait is about to wait for `signals`: a fatal error from now on
  // interrupts them. True when one came already (then nothing will).
  bool WaitFor(const TerminationSignals& signals) {
    waiting_ = &signals;
    return fatal_;
  }
  bool fatal() const { return fatal_; }

 private:
  Driver& driver_;
  HelperMetrics& metrics_;
  const Logger logger_;
  // Sequentially consistent, both: HandleError sets fatal_ then reads
  // waiting_, WaitFor sets waiting_ then reads fatal_, so one of them sees
  // the other's store.
  std::atomic<bool> fatal_{false};
  std::atomic<const TerminationSignals*> waiting_{nullptr};
};

}  // namespace dra::kubeletplugin::internal
