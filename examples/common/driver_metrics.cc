#include "common/driver_metrics.h"

#include <charconv>

#include "absl/strings/str_cat.h"

namespace example {
namespace {

constexpr char kPrefix[] = "dra_example_driver_";

// A float as Prometheus' Go client writes it: the shortest form that reads
// back as the same value.
std::string Number(double value) {
  char text[32];
  return std::string(text, std::to_chars(text, text + sizeof(text), value).ptr);
}

}  // namespace

void DriverMetrics::ObservePrepare(bool ok, absl::Duration duration) {
  std::scoped_lock lock(mu_);
  Observe(prepare_, ok, duration);
}

void DriverMetrics::ObserveUnprepare(bool ok, absl::Duration duration) {
  std::scoped_lock lock(mu_);
  Observe(unprepare_, ok, duration);
}

void DriverMetrics::Observe(Operation& operation, bool ok, absl::Duration duration) {
  const std::string result = ok ? "success" : "error";
  const double seconds = absl::ToDoubleSeconds(duration);
  ++operation.totals[result];
  Histogram& histogram = operation.durations[result];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++histogram.buckets[i];
  }
  ++histogram.count;
  histogram.sum += seconds;
}

void DriverMetrics::CountFatalError() {
  std::scoped_lock lock(mu_);
  ++fatal_errors_;
}

void DriverMetrics::Write(const Operation& operation, const std::string& what, std::string& out) {
  const std::string total = absl::StrCat(kPrefix, what, "_claims_total");
  absl::StrAppend(&out, "# HELP ", total, " [BETA] Total number of resource claim ", what,
                  " operations handled by the driver.\n# TYPE ", total, " counter\n");
  for (const auto& [result, count] : operation.totals) {
    absl::StrAppend(&out, total, "{result=\"", result, "\"} ", count, "\n");
  }
  if (operation.durations.empty()) return;
  const std::string duration = absl::StrCat(kPrefix, what, "_claim_duration_seconds");
  absl::StrAppend(&out, "# HELP ", duration, " [BETA] Latency in seconds of resource claim ", what,
                  " operations handled by the driver.\n# TYPE ", duration, " histogram\n");
  for (const auto& [result, histogram] : operation.durations) {
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      absl::StrAppend(&out, duration, "_bucket{result=\"", result, "\",le=\"", Number(kBuckets[i]), "\"} ",
                      histogram.buckets[i], "\n");
    }
    absl::StrAppend(&out, duration, "_bucket{result=\"", result, "\",le=\"+Inf\"} ", histogram.count, "\n");
    absl::StrAppend(&out, duration, "_sum{result=\"", result, "\"} ", Number(histogram.sum), "\n");
    absl::StrAppend(&out, duration, "_count{result=\"", result, "\"} ", histogram.count, "\n");
  }
}

std::string DriverMetrics::Text() const {
  std::scoped_lock lock(mu_);
  std::string out;
  Write(prepare_, "prepare", out);
  Write(unprepare_, "unprepare", out);
  const std::string fatal = absl::StrCat(kPrefix, "fatal_background_errors_total");
  absl::StrAppend(&out, "# HELP ", fatal, " [BETA] Total number of fatal background errors reported by the driver.\n",
                  "# TYPE ", fatal, " counter\n", fatal, " ", fatal_errors_, "\n");
  return out;
}

}  // namespace example
