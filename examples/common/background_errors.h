// example::BackgroundErrors: what every example driver does with
// Driver::HandleError, which the Helper has logged: a fatal error (the
// kubelet refused the registration) interrupts the driver's
// TerminationSignals, is counted in the DriverMetrics given (dra-example-
// driver's fatal_background_errors_total), and is remembered, so that main
// exits 1 and the DaemonSet restarts the driver. Thread-safe.
#pragma once

#include <atomic>

#include "common/driver_metrics.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/termination_signals.h"

namespace example {

class BackgroundErrors {
 public:
  // `metrics` may be null.
  explicit BackgroundErrors(const dra::kubeletplugin::TerminationSignals& signals, DriverMetrics* metrics = nullptr)
      : signals_(signals), metrics_(metrics) {}

  void Handle(dra::kubeletplugin::ErrorSeverity severity) {
    if (severity != dra::kubeletplugin::ErrorSeverity::kFatal) return;
    if (metrics_ != nullptr) metrics_->CountFatalError();
    fatal_ = true;
    signals_.Interrupt();
  }

  // True after a fatal error.
  bool fatal() const { return fatal_; }

 private:
  const dra::kubeletplugin::TerminationSignals& signals_;
  DriverMetrics* const metrics_;
  std::atomic<bool> fatal_{false};
};

}  // namespace example
