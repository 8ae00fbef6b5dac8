#include "kubeletplugin/metrics.h"

#include "absl/strings/str_cat.h"
#include "base/mutex.h"

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
  dra::MutexLock lock(&mu_);
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

void HelperMetrics::ObserveExclusivityRefusal() {
  dra::MutexLock lock(&mu_);
  ++exclusivity_refusals_;
}

void HelperMetrics::ObserveQuarantinedClaim() {
  dra::MutexLock lock(&mu_);
  ++quarantined_claims_;
}

void HelperMetrics::ObserveBackgroundError(ErrorSeverity severity) {
  dra::MutexLock lock(&mu_);
  ++background_errors_[severity == ErrorSeverity::kFatal ? 1 : 0];
}

std::string HelperMetrics::Render(const Gauges& gauges) const {
  dra::MutexLock lock(&mu_);
  std::string out;
  auto per_method = [&](const char* name, const char* help,
                        uint64_t MethodStats::*field) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
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
  AppendHeader(out, "dra_device_exclusivity_refusals_total", "counter",
               "Claims refused because another claim on the node holds one of their devices.");
  absl::StrAppend(&out, "dra_device_exclusivity_refusals_total ", exclusivity_refusals_, "\n");
  AppendHeader(out, "dra_checkpoint_quarantined_claims_total", "counter",
               "Claims whose checkpoint entry could not be read or whose files could not be restored at start.");
  absl::StrAppend(&out, "dra_checkpoint_quarantined_claims_total ", quarantined_claims_, "\n");
  AppendHeader(out, "dra_prepared_claims", "gauge", "Claims recorded as prepared in the checkpoint.");
  absl::StrAppend(&out, "dra_prepared_claims ", gauges.prepared_claims, "\n");
  AppendHeader(out, "dra_checkpoint_writes_total", "counter", "Durable checkpoint writes.");
  absl::StrAppend(&out, "dra_checkpoint_writes_total ", gauges.checkpoint_writes, "\n");
  AppendHeader(out, "dra_serialization_waiting_calls", "gauge",
               "Kubelet calls waiting for an earlier call to leave the driver (serialize on).");
  absl::StrAppend(&out, "dra_serialization_waiting_calls ", gauges.serialization_waiting_calls, "\n");
  AppendHeader(out, "dra_registered", "gauge", "1 when the kubelet accepted the plugin's registration.");
  absl::StrAppend(&out, "dra_registered ", gauges.registered ? 1 : 0, "\n");
  AppendHeader(out, "dra_background_errors_total", "counter",
               "Errors reported to the driver's HandleError, by severity.");
  absl::StrAppend(&out, "dra_background_errors_total{severity=\"recoverable\"} ", background_errors_[0], "\n");
  absl::StrAppend(&out, "dra_background_errors_total{severity=\"fatal\"} ", background_errors_[1], "\n");
  if (gauges.slices.has_value()) {
    AppendHeader(out, "dra_resource_slice_published_devices", "gauge",
                 "Devices in the API server as last published, over the pools whose last sync succeeded.");
    absl::StrAppend(&out, "dra_resource_slice_published_devices ", gauges.slices->published_devices, "\n");
    AppendHeader(out, "dra_resource_slice_writes_total", "counter", "ResourceSlice writes, by operation.");
    absl::StrAppend(&out, "dra_resource_slice_writes_total{operation=\"create\"} ", gauges.slices->creates, "\n");
    absl::StrAppend(&out, "dra_resource_slice_writes_total{operation=\"update\"} ", gauges.slices->updates, "\n");
    absl::StrAppend(&out, "dra_resource_slice_writes_total{operation=\"delete\"} ", gauges.slices->deletes, "\n");
  }
  if (gauges.api_requests.has_value()) {
    AppendHeader(out, "dra_api_requests_total", "counter",
                 "Requests to the API server, by verb (HTTP method, WATCH for watches) and status code.");
    for (const k8s::RequestCount& count : *gauges.api_requests) {
      absl::StrAppend(&out, "dra_api_requests_total{verb=\"", count.verb, "\",code=\"", count.code, "\"} ", count.count,
                      "\n");
    }
  }
  return out;
}

}  // namespace dra::kubeletplugin::internal
