// Prometheus metrics of a Helper, rendered in the text exposition format.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"

#include "absl/time/time.h"
#include "dra/k8s/client.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/resourceslice/publisher.h"

namespace dra::kubeletplugin::internal {

class HelperMetrics {
 public:
  enum class Method { kPrepare, kUnprepare };

  // One kubelet call: whether it failed as a whole, how many of its claims
  // failed, and how long it took.
  void ObserveCall(Method method, bool call_failed, int claims, int failed_claims, absl::Duration duration);

  // A claim refused because another claim holds one of its devices.
  void ObserveExclusivityRefusal();
  // A claim's checkpoint entry quarantined (Checkpoint::Salvage, or its
  // files not restorable at start).
  void ObserveQuarantinedClaim();

  // An error reported to Driver::HandleError.
  void ObserveBackgroundError(ErrorSeverity severity);

  // Values only known at scrape time (checkpoint size, registration...).
  struct Gauges {
    int64_t prepared_claims = 0;
    uint64_t checkpoint_writes = 0;
    int64_t serialization_waiting_calls = 0;
    bool registered = false;
    std::optional<resourceslice::PublisherStats> slices;         // once the Helper publishes
    std::optional<std::vector<k8s::RequestCount>> api_requests;  // with a kube_client
  };

  // The Prometheus text format (version 0.0.4).
  std::string Render(const Gauges& gauges) const;

 private:
  // Upper bounds in seconds, as in client_golang's DefBuckets but finer at
  // the low end: a prepare answered from the checkpoint takes microseconds.
  static constexpr std::array<double, 14> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                      0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
  struct MethodStats {
    uint64_t calls = 0;
    uint64_t call_errors = 0;
    uint64_t claims = 0;
    uint64_t claim_errors = 0;
    std::array<uint64_t, kBuckets.size()> buckets{};
    double seconds_sum = 0;
  };

  mutable dra::Mutex mu_;
  std::array<MethodStats, 2> methods_ ABSL_GUARDED_BY(mu_);
  std::array<uint64_t, 2> background_errors_ ABSL_GUARDED_BY(mu_){};  // recoverable, fatal
  uint64_t exclusivity_refusals_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t quarantined_claims_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dra::kubeletplugin::internal
