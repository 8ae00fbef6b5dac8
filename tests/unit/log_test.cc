#include <catch2/catch.hpp>

#include "dra/log.h"
#include "nlohmann/json.hpp"
#include "support/capturing_logger.h"

namespace dra {
namespace {

using testing::CapturingSink;

TEST_CASE("klog text format: header, quoted message and fields", "[log]") {
  LogRecord record;
  record.severity = LogSeverity::kWarning;
  record.time =
      absl::FromCivil(absl::CivilSecond(2026, 11, 29, 9, 29, 22), absl::UTCTimeZone()) + absl::Microseconds(123456);
  record.message = "Prepared \"claim\"";
  record.fields = {{"claim", "ns/name"}, {"count", "2"}};
  const std::string line = FormatLogRecord(record, LogFormat::kKlogText);
  CHECK_THAT(line, Catch::StartsWith("W1129 09:29:22.123456 "));
  CHECK_THAT(line, Catch::EndsWith(" dra] \"Prepared \\\"claim\\\"\" claim=\"ns/name\" count=\"2\""));
}

TEST_CASE("JSON format: one object per record", "[log]") {
  LogRecord record;
  record.severity = LogSeverity::kError;
  record.time = absl::FromUnixSeconds(1700000000);
  record.message = "boom";
  record.fields = {{"driver", "gpu.example.com"}};
  nlohmann::json line = nlohmann::json::parse(FormatLogRecord(record, LogFormat::kJson));
  CHECK(line["ts"] == 1700000000.0);
  CHECK(line["level"] == "error");
  CHECK(line["msg"] == "boom");
  CHECK(line["driver"] == "gpu.example.com");
}

TEST_CASE("the logger drops records above its verbosity", "[log]") {
  auto sink = std::make_shared<CapturingSink>();
  Logger logger(sink, 2);
  logger.Info("zero");
  logger.InfoV(2, "two");
  logger.InfoV(3, "three");
  logger.Error("error");
  REQUIRE(sink->lines().size() == 3);
  CHECK_THAT(sink->lines()[0], Catch::Contains("\"zero\""));
  CHECK_THAT(sink->lines()[1], Catch::Contains("\"two\""));
  CHECK_THAT(sink->lines()[2], Catch::StartsWith("E"));
  CHECK(logger.V(2));
  CHECK_FALSE(logger.V(3));
}

TEST_CASE("WithValues puts its fields before every record's own, and nests", "[log]") {
  auto sink = std::make_shared<CapturingSink>();
  const Logger logger(sink);
  const Logger call = logger.WithValues({{"method", "NodePrepareResources"}, {"requestID", "7"}});
  call.Info("Prepared claim", {{"uid", "u-1"}});
  call.WithValues({{"claim", "ns/c"}}).Error("Claim failed");
  logger.Info("plain");
  const std::vector<std::string> lines = sink->lines();
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0],
             Catch::EndsWith("\"Prepared claim\" method=\"NodePrepareResources\" requestID=\"7\" uid=\"u-1\""));
  CHECK_THAT(lines[1],
             Catch::EndsWith("\"Claim failed\" method=\"NodePrepareResources\" requestID=\"7\" claim=\"ns/c\""));
  CHECK_THAT(lines[2], Catch::EndsWith("\"plain\""));
}

}  // namespace
}  // namespace dra
