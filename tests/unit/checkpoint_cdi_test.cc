// The checkpoint's "cdiSpec" field: kept across reloads, optional on read.
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/str_format.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/crc32c.h"
#include "support/temp_dir.h"

namespace dra::kubeletplugin::internal {
namespace {

using dra::testing::TempDir;
using dra::testing::WriteFile;

std::string Line(const std::string& json) { return absl::StrFormat("%08x %s\n", Crc32c(json), json); }

TEST_CASE("a checkpoint written before CDI specs existed still loads", "[checkpoint][cdi]") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  WriteFile(path, Line(R"({"version":2})") +
                      Line(R"({"seq":1,"claims":{"uid-1":{"namespace":"ns","name":"c1","state":"Prepared",)"
                           R"("devices":[{"requests":["gpu"],"poolName":"p","deviceName":"d",)"
                           R"("cdiDeviceIDs":["example.com/gpu=d"]}]}}})") +
                      Line(R"({"seq":2,"set":{"uid-2":{"namespace":"ns","name":"c2","state":"PrepareStarted",)"
                           R"("devices":[]}},"erase":[]})"));
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
  REQUIRE(checkpoint.ok());
  std::optional<CheckpointEntry> entry = (*checkpoint)->Get("uid-1");
  REQUIRE(entry.has_value());
  CHECK(entry->state == ClaimState::kPrepared);
  CHECK(entry->devices.at(0).cdi_device_ids == std::vector<std::string>{"example.com/gpu=d"});
  CHECK(entry->cdi_spec.empty());
  REQUIRE((*checkpoint)->Get("uid-2").has_value());
  CHECK((*checkpoint)->Get("uid-2")->cdi_spec.empty());
}

TEST_CASE("a claim's CDI spec survives commit and reopen", "[checkpoint][cdi]") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const std::string spec =
      "{\n  \"cdiVersion\": \"0.5.0\",\n  \"kind\": \"gpu.example.com/claim\",\n  \"devices\": []\n}\n";
  CheckpointEntry entry{{"ns", "c1", "uid-1"}, ClaimState::kPrepared, {}};
  entry.cdi_spec = spec;
  {
    absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
    REQUIRE(checkpoint.ok());
    REQUIRE((*checkpoint)->Commit({{"uid-1", entry}}).ok());
  }
  absl::StatusOr<std::unique_ptr<Checkpoint>> reopened = Checkpoint::Open(path);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->Get("uid-1") == entry);
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
