// dra-example-driver's metrics as the example drivers export them: names,
// labels, help, buckets and the series present before the first call.
#include "common/driver_metrics.h"

#include <catch2/catch.hpp>

TEST_CASE("driver metrics: the reference's counters from the start, histograms from the first call", "[metrics]") {
  example::DriverMetrics metrics;
  CHECK(metrics.Text() ==
        "# HELP dra_example_driver_prepare_claims_total [BETA] Total number of resource claim prepare operations "
        "handled by the driver.\n"
        "# TYPE dra_example_driver_prepare_claims_total counter\n"
        "dra_example_driver_prepare_claims_total{result=\"error\"} 0\n"
        "dra_example_driver_prepare_claims_total{result=\"success\"} 0\n"
        "# HELP dra_example_driver_unprepare_claims_total [BETA] Total number of resource claim unprepare "
        "operations handled by the driver.\n"
        "# TYPE dra_example_driver_unprepare_claims_total counter\n"
        "dra_example_driver_unprepare_claims_total{result=\"error\"} 0\n"
        "dra_example_driver_unprepare_claims_total{result=\"success\"} 0\n"
        "# HELP dra_example_driver_fatal_background_errors_total [BETA] Total number of fatal background errors "
        "reported by the driver.\n"
        "# TYPE dra_example_driver_fatal_background_errors_total counter\n"
        "dra_example_driver_fatal_background_errors_total 0\n");

  metrics.ObservePrepare(true, absl::Milliseconds(30));
  metrics.ObservePrepare(true, absl::Milliseconds(100));
  metrics.ObservePrepare(false, absl::Seconds(20));
  metrics.ObserveUnprepare(true, absl::Microseconds(10));
  metrics.CountFatalError();
  const std::string text = metrics.Text();
  CHECK_THAT(text, Catch::Contains("dra_example_driver_prepare_claims_total{result=\"success\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("# TYPE dra_example_driver_prepare_claim_duration_seconds histogram\n"
                                   "dra_example_driver_prepare_claim_duration_seconds_bucket{result=\"error\",le="
                                   "\"0.005\"} 0\n"));
  CHECK_THAT(text, Catch::Contains("prepare_claim_duration_seconds_bucket{result=\"error\",le=\"10\"} 0\n"
                                   "dra_example_driver_prepare_claim_duration_seconds_bucket{result=\"error\",le="
                                   "\"+Inf\"} 1\n"
                                   "dra_example_driver_prepare_claim_duration_seconds_sum{result=\"error\"} 20\n"
                                   "dra_example_driver_prepare_claim_duration_seconds_count{result=\"error\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("prepare_claim_duration_seconds_bucket{result=\"success\",le=\"0.025\"} 0\n"));
  CHECK_THAT(text, Catch::Contains("prepare_claim_duration_seconds_bucket{result=\"success\",le=\"0.05\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("prepare_claim_duration_seconds_bucket{result=\"success\",le=\"0.1\"} 2\n"));
  CHECK_THAT(text, Catch::Contains("prepare_claim_duration_seconds_sum{result=\"success\"} 0.13\n"));
  CHECK_THAT(text,
             Catch::Contains("dra_example_driver_unprepare_claim_duration_seconds_count{result=\"success\"} 1\n"));
  CHECK_THAT(text, Catch::Contains("dra_example_driver_unprepare_claims_total{result=\"error\"} 0\n"));
  CHECK_THAT(text, Catch::Contains("dra_example_driver_fatal_background_errors_total 1\n"));
}
