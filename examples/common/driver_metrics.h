// example::DriverMetrics: the metrics dra-example-driver's kubelet plugin
// exports (its pkg/metrics), under the same names, labels, help texts and
// buckets, so that dashboards and alerts built for the reference keep
// working on a driver built on dra-cpp. Its /metrics carries them after the
// SDK's own (kubeletplugin::Options::extra_metrics):
//
//   dra_example_driver_prepare_claims_total{result="success"|"error"}
//   dra_example_driver_prepare_claim_duration_seconds{result}   (histogram)
//   dra_example_driver_unprepare_claims_total{result}
//   dra_example_driver_unprepare_claim_duration_seconds{result} (histogram)
//   dra_example_driver_fatal_background_errors_total
//
// Per claim, as the reference observes them: a claim's prepare or
// unprepare is a success or an error of the driver. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/time/time.h"

namespace example {

class DriverMetrics {
 public:
  void ObservePrepare(bool ok, absl::Duration duration);
  void ObserveUnprepare(bool ok, absl::Duration duration);
  void CountFatalError();

  // Prometheus text exposition, with # HELP and # TYPE lines.
  std::string Text() const;

 private:
  // Prometheus' default buckets (prometheus.DefBuckets), as the reference's.
  static constexpr std::array<double, 11> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};  // observations <= the bound, cumulative when written
    uint64_t count = 0;
    double sum = 0;
  };
  struct Operation {
    std::map<std::string, uint64_t> totals = {{"error", 0}, {"success", 0}};  // by result
    std::map<std::string, Histogram> durations;                               // by result, from its first observation
  };
  static void Observe(Operation& operation, bool ok, absl::Duration duration);
  // `what`: "prepare" or "unprepare".
  static void Write(const Operation& operation, const std::string& what, std::string& out);

  mutable std::mutex mu_;
  Operation prepare_;          // guarded by mu_
  Operation unprepare_;        // guarded by mu_
  uint64_t fatal_errors_ = 0;  // guarded by mu_
};

}  // namespace example
