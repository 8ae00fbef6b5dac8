/// @file
/// dra::kubeletplugin::TerminationSignals: SIGTERM (how the kubelet stops a
/// DaemonSet pod) and SIGINT for a driver's main(), taken on the thread that
/// waits for them and never on a gRPC thread, which would end the process
/// without a clean Helper::Stop().
///
/// @code
///   int main() {
///     dra::kubeletplugin::TerminationSignals signals;  // first, before any thread
///     auto helper = dra::kubeletplugin::Helper::Start(driver, options);
///     signals.Wait();
///     (*helper)->Stop();
///   }
/// @endcode
#pragma once

#include <csignal>

namespace dra::kubeletplugin {

/// Takes SIGTERM and SIGINT on the thread that waits for them (termination_signals.h).
class TerminationSignals {
 public:
  /// Blocks SIGTERM and SIGINT in the calling thread; threads started after
  /// this inherit the mask.
  TerminationSignals();

  /// Waits until one of them arrives; returns its number.
  int Wait() const;

  /// Makes Wait() return (with SIGTERM) from any thread, e.g. from
  /// Driver::HandleError on a fatal error: sends the process SIGTERM, which
  /// the threads started after the constructor block.
  void Interrupt() const;

 private:
  sigset_t set_;
};

}  // namespace dra::kubeletplugin
