#include "kubeletplugin/metrics.h"

#include "absl/strings/str_cat.h"

namespace dra::kubeletplugin::internal {
namespace {

constexpr const char* kMethodNames[] = {"NodePrepareResources", "NodeUnprepareResources"};

void AppendHeader(std::string& out, const char* name, const char* type, const char* help) {
  absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

}  // namespace

void HelperMetrics::ObserveCall(Method method, bool call_failed, int claims, int failed_claims,
                                absl::Duration duration) {
  const double seconds = absl::ToDoubleSeconds(duration);
  std::lock_guard<std::mutex> lock(mu_);
  MethodStats& stats = methods_[static_cast<size_t>(method)];
  ++stats.calls;
  if (call_failed) ++stats.call_errors;
  stats.claims += claims;
  stats.claim_errors += failed_claims;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++stats.buckets[i];
  }
  stats.seconds_sum += seconds;
}

std::string HelperMetrics::Render(const Gauges& gauges) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  auto per_method = [&](const char* name, const char* help, uint64_t MethodStats::*field) {
    AppendHeader(out, name, "counter", help);
    for (size_t m = 0; m < methods_.size(); ++m) {
      absl::StrAppend(&out, name, "{method=\"", kMethodNames[m], "\"} ", methods_[m].*field, "\n");
    }
  };
  per_method("dra_kubelet_calls_total", "Calls from the kubelet, by gRPC method.", &MethodStats::calls);
  per_method("dra_kubelet_call_errors_total", "Calls that failed as a whole.", &MethodStats::call_errors);
  per_method("dra_claims_total", "Claims handled, by gRPC method.", &MethodStats::claims);
  per_method("dra_claim_errors_total", "Claims that failed, by gRPC method.", &MethodStats::claim_errors);
  AppendHeader(out, "dra_kubelet_call_duration_seconds", "histogram", "Time to answer a kubelet call.");
  for (size_t m = 0; m < methods_.size(); ++m) {
    const MethodStats& stats = methods_[m];
    const std::string label = absl::StrCat("method=\"", kMethodNames[m], "\"");
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      absl::StrAppend(&out, "dra_kubelet_call_duration_seconds_bucket{", label, ",le=\"", kBuckets[i], "\"} ",
                      stats.buckets[i], "\n");
    }
    absl::StrAppend(&out, "dra_kubelet_call_duration_seconds_bucket{", label, ",le=\"+Inf\"} ", stats.calls, "\n");
    absl::StrAppend(&out, "dra_kubelet_call_duration_seconds_sum{", label, "} ", stats.seconds_sum, "\n");
    absl::StrAppend(&out, "dra_kubelet_call_duration_seconds_count{", label, "} ", stats.calls, "\n");
  }
  AppendHeader(out, "dra_prepared_claims", "gauge", "Claims recorded as prepared in the checkpoint.");
  absl::StrAppend(&out, "dra_prepared_claims ", gauges.prepared_claims, "\n");
  AppendHeader(out, "dra_checkpoint_writes_total", "counter", "Durable checkpoint writes.");
  absl::StrAppend(&out, "dra_checkpoint_writes_total ", gauges.checkpoint_writes, "\n");
  AppendHeader(out, "dra_serialization_waiting_calls", "gauge",
               "Kubelet calls waiting for an earlier call to leave the driver (serialize on).");
  absl::StrAppend(&out, "dra_serialization_waiting_calls ", gauges.serialization_waiting_calls, "\n");
  AppendHeader(out, "dra_registered", "gauge", "1 when the kubelet accepted the plugin's registration.");
  absl::StrAppend(&out, "dra_registered ", gauges.registered ? 1 : 0, "\n");
  return out;
}

}  // namespace dra::kubeletplugin::internal
