// dractl as a subprocess against a Helper serving in this process.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/kubeletplugin/helper.h"
#include "support/helper_dirs.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletplugin::Helper;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using nlohmann::json;
using testing::TestDriver;

// Runs dractl with `args` and collects its output and exit code.
testing::ProcessResult RunDractl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {DRACTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<testing::ProcessResult> result = testing::RunProcess(argv);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  UNSCOPED_INFO("dractl exit " << result->exit_code << "\nstdout:\n" << result->out << "\nstderr:\n" << result->err);
  return *result;
}

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> documents;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) documents.push_back(json::parse(line));
  return documents;
}

// A Helper for TestDriver with its dirs in a temp dir.
struct Plugin : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();
  TestDriver driver;
  std::unique_ptr<Helper> helper;

  explicit Plugin(bool reports_health = false) : driver(reports_health) { helper = Start(driver, MakeOptions(claims)); }

  const std::string& dra_socket() const { return helper->dra_socket_path(); }
};

TEST_CASE("dractl reports usage errors with exit code 2") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"frobnicate"},
           {"register"},
           {"register", "--registry-dir"},
           {"prepare", "--claim", "ns/name/uid"},
           {"prepare", "--endpoint", "/tmp/x.sock"},
           {"prepare", "--endpoint", "/tmp/x.sock", "--claim", "ns/name"},
           {"prepare", "--endpoint", "/tmp/x.sock", "--claim", "ns/name/uid", "--api", "v2"},
           {"health", "--endpoint", "/tmp/x.sock", "--count", "0"},
           {"health", "--endpoint", "/tmp/x.sock", "--timeout", "soon"},
           {"health", "--endpoint", "/tmp/x.sock", "--json=yes"},
           {"unprepare", "--endpoint", "/tmp/x.sock", "--claim", "ns/name/uid", "extra"},
       }) {
    const testing::ProcessResult result = RunDractl(args);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("Usage: dractl"));
    CHECK(result.out.empty());
  }
}

TEST_CASE("dractl help prints the usage on stdout") {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"help"}, {"--help"}, {"prepare", "--help"}}) {
    const testing::ProcessResult result = RunDractl(args);
    CHECK(result.exit_code == 0);
    CHECK_THAT(result.out, Catch::Contains("Usage: dractl") && Catch::Contains("register"));
  }
}

TEST_CASE("dractl register registers the plugin as the kubelet does") {
  Plugin plugin;
  REQUIRE_FALSE(plugin.helper->registration_status().notified);

  const testing::ProcessResult result = RunDractl({"register", "--registry-dir", plugin.registry});
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::Contains(plugin.helper->registrar_socket_path()) &&
                             Catch::Contains(testing::kTestDriverName) && Catch::Contains("v1.DRAPlugin") &&
                             Catch::Contains(plugin.dra_socket()) && Catch::Contains("registered"));
  const kubeletplugin::RegistrationStatus status = plugin.helper->WaitForRegistration(absl::Seconds(10));
  CHECK(status.notified);
  CHECK(status.registered);
  CHECK(status.error.empty());
}

TEST_CASE("dractl register --json describes each plugin") {
  Plugin plugin;
  const testing::ProcessResult result = RunDractl({"register", "--registry-dir", plugin.registry, "--json"});
  CHECK(result.exit_code == 0);
  const json out = json::parse(result.out);
  CHECK(out["registry_dir"] == plugin.registry);
  REQUIRE(out["plugins"].size() == 1);
  const json& registered = out["plugins"][0];
  CHECK(registered["socket"] == plugin.helper->registrar_socket_path());
  CHECK(registered["type"] == "DRAPlugin");
  CHECK(registered["name"] == testing::kTestDriverName);
  CHECK(registered["endpoint"] == plugin.dra_socket());
  CHECK(registered["service"] == "v1.DRAPlugin");
  CHECK(registered["registered"] == true);
  CHECK(registered["error"] == "");
  CHECK(plugin.helper->WaitForRegistration(absl::Seconds(10)).registered);
}

TEST_CASE("dractl register fails on a socket nobody serves") {
  testing::TempDir dir;
  const std::string stale = dir.Join("gone-reg.sock");
  {
    // Bound and closed without unlinking: what a crashed plugin leaves.
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, stale.c_str(), sizeof(address.sun_path) - 1);
    REQUIRE(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    close(fd);
  }
  const testing::ProcessResult result = RunDractl({"register", "--registry-dir", dir.path()});
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.out, Catch::Contains(stale + ": connect:"));
}

TEST_CASE("dractl prepare and unprepare print the claims' CDI devices") {
  Plugin plugin;
  plugin.claims->Put(testing::AllocatedClaim("default", "claim-1", "uid-1", {"gpu-0", "gpu-1"}));
  const std::string claim_arg = "default/claim-1/uid-1";

  for (const std::string api : {"v1", "v1beta1"}) {
    DYNAMIC_SECTION("DRA API " << api) {
      const testing::ProcessResult prepared =
          RunDractl({"prepare", "--endpoint", plugin.dra_socket(), "--claim", claim_arg, "--api", api});
      CHECK(prepared.exit_code == 0);
      CHECK_THAT(prepared.out, Catch::Contains("default/claim-1 (uid-1): prepared") &&
                                   Catch::Contains(TestDriver::CdiId("uid-1", "gpu-0")) &&
                                   Catch::Contains(TestDriver::CdiId("uid-1", "gpu-1")) &&
                                   Catch::Contains("pool-a/gpu-0"));

      const testing::ProcessResult unprepared =
          RunDractl({"unprepare", "--endpoint", plugin.dra_socket(), "--claim", claim_arg, "--api", api});
      CHECK(unprepared.exit_code == 0);
      CHECK_THAT(unprepared.out, Catch::Contains("default/claim-1 (uid-1): unprepared"));
      CHECK(plugin.driver.unprepared_uids() == std::vector<std::string>{"uid-1"});
    }
  }
}

TEST_CASE("dractl prepare --json lists devices per claim") {
  Plugin plugin;
  plugin.claims->Put(testing::AllocatedClaim("default", "claim-1", "uid-1"));
  const testing::ProcessResult result =
      RunDractl({"prepare", "--endpoint", plugin.dra_socket(), "--claim", "default/claim-1/uid-1", "--json"});
  CHECK(result.exit_code == 0);
  const json out = json::parse(result.out);
  CHECK(out["endpoint"] == plugin.dra_socket());
  CHECK(out["api"] == "v1");
  REQUIRE(out["claims"].size() == 1);
  const json& claim = out["claims"][0];
  CHECK(claim["namespace"] == "default");
  CHECK(claim["name"] == "claim-1");
  CHECK(claim["uid"] == "uid-1");
  CHECK(claim["ok"] == true);
  REQUIRE(claim["devices"].size() == 1);
  const json& device = claim["devices"][0];
  CHECK(device["pool"] == "pool-a");
  CHECK(device["device"] == "gpu-0");
  CHECK(device["requests"] == json::array({"gpu"}));
  CHECK(device["cdi_device_ids"] == json::array({TestDriver::CdiId("uid-1", "gpu-0")}));
}

TEST_CASE("dractl prepare exits 1 when one claim fails and reports each claim") {
  Plugin plugin;
  plugin.claims->Put(testing::AllocatedClaim("default", "good", "uid-good"));
  plugin.claims->Put(testing::AllocatedClaim("default", "bad", "uid-bad", {"gpu-1"}));
  plugin.driver.FailClaim("uid-bad");

  const testing::ProcessResult result =
      RunDractl({"prepare", "--endpoint", plugin.dra_socket(), "--claim", "default/good/uid-good", "--claim",
                 "default/bad/uid-bad", "--json"});
  CHECK(result.exit_code == 1);
  const json out = json::parse(result.out);
  REQUIRE(out["claims"].size() == 2);
  CHECK(out["claims"][0]["ok"] == true);
  CHECK(out["claims"][1]["ok"] == false);
  CHECK_THAT(out["claims"][1]["error"].get<std::string>(), Catch::Contains("injected failure"));
  CHECK_THAT(result.err, Catch::Contains(plugin.dra_socket() + ": NodePrepareResources: 1 of 2 claims failed"));
}

TEST_CASE("dractl prepare against a missing socket names the socket and the step") {
  testing::TempDir dir;
  const std::string missing = dir.Join("dra.sock");
  const testing::ProcessResult result =
      RunDractl({"prepare", "--endpoint", missing, "--claim", "default/claim-1/uid-1"});
  CHECK(result.exit_code == 1);
  CHECK(result.out.empty());
  CHECK_THAT(result.err, Catch::Contains(missing + ": NodePrepareResources: UNAVAILABLE"));

  const testing::ProcessResult as_json =
      RunDractl({"unprepare", "--endpoint", missing, "--claim", "default/claim-1/uid-1", "--json"});
  CHECK(as_json.exit_code == 1);
  CHECK_THAT(json::parse(as_json.out)["error"].get<std::string>(),
             Catch::Contains(missing + ": NodeUnprepareResources:"));
}

TEST_CASE("dractl health streams the published device health") {
  Plugin plugin(/*reports_health=*/true);
  plugin.helper->PublishHealth({{"pool-a", "gpu-0", kubeletplugin::HealthStatus::kHealthy, "all good",
                                 absl::FromUnixSeconds(1700000000), absl::Seconds(60)},
                                {"pool-a", "gpu-1", kubeletplugin::HealthStatus::kUnhealthy, "too hot",
                                 absl::FromUnixSeconds(1700000000), absl::ZeroDuration()}});

  for (const std::string api : {"v1", "v1alpha1"}) {
    DYNAMIC_SECTION("health API " << api) {
      const testing::ProcessResult text = RunDractl({"health", "--endpoint", plugin.dra_socket(), "--api", api});
      CHECK(text.exit_code == 0);
      CHECK_THAT(text.out, Catch::Contains("pool-a/gpu-0: HEALTHY") && Catch::Contains("all good") &&
                               Catch::Contains("pool-a/gpu-1: UNHEALTHY") && Catch::Contains("too hot"));

      const testing::ProcessResult as_json =
          RunDractl({"health", "--endpoint", plugin.dra_socket(), "--api", api, "--json", "--timeout", "10"});
      CHECK(as_json.exit_code == 0);
      const std::vector<json> lists = JsonLines(as_json.out);
      REQUIRE(lists.size() == 1);
      const json& devices = lists[0]["devices"];
      REQUIRE(devices.size() == 2);
      CHECK(devices[0]["pool"] == "pool-a");
      CHECK(devices[0]["device"] == "gpu-0");
      CHECK(devices[0]["health"] == "HEALTHY");
      CHECK(devices[0]["message"] == "all good");
      CHECK(devices[0]["last_updated_time"] == 1700000000);
      CHECK(devices[0]["health_check_timeout_seconds"] == 60);
      CHECK(devices[1]["health"] == "UNHEALTHY");
    }
  }
}

TEST_CASE("dractl health times out when no further list arrives") {
  Plugin plugin(/*reports_health=*/true);
  plugin.helper->PublishHealth({{"pool-a", "gpu-0", kubeletplugin::HealthStatus::kHealthy, "",
                                 absl::FromUnixSeconds(1700000000), absl::ZeroDuration()}});
  const testing::ProcessResult result =
      RunDractl({"health", "--endpoint", plugin.dra_socket(), "--count", "2", "--timeout", "0.3"});
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.out, Catch::Contains("health list 1: 1 device"));
  CHECK_THAT(result.err, Catch::Contains(plugin.dra_socket() + ": NodeWatchResources: no health list within"));
}

}  // namespace
}  // namespace dra
