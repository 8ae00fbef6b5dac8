// dractl sanity as a subprocess against a Helper serving in this process,
// its claims on the fake API server (tests/support/fakeapiserver): it passes
// what the Helper does right, fails a driver that returns a CDI ID no spec
// defines, and its list of checks is the one docs/sanity.md documents.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "dra/k8s/client.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/resourceslice/split.h"
#include "support/discard_logger.h"
#include "support/fake_apiserver.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletplugin::Helper;
using nlohmann::json;
using testing::FakeApiServer;
using testing::TestDriver;

constexpr char kNode[] = "node-1";
constexpr char kNamespace[] = "sanity";

testing::ProcessResult RunDractl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {DRACTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<testing::ProcessResult> result = testing::RunProcess(argv);
  REQUIRE(result.ok());
  UNSCOPED_INFO("dractl exit " << result->exit_code << "\nstdout:\n" << result->out << "\nstderr:\n" << result->err);
  return *result;
}

// The fake API server with a Node, a kubeconfig for it, and a Helper
// publishing two devices of that node and reading claims through it.
struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<FakeApiServer> server;
  TestDriver driver{/*reports_health=*/true};
  std::unique_ptr<Helper> helper;
  absl::Notification stopping;
  std::thread health_resender;

  Fixture() {
    FakeApiServer::Options server_options;
    server_options.extra_args = {"--quiet"};
    absl::StatusOr<std::unique_ptr<FakeApiServer>> started = FakeApiServer::Start(server_options);
    REQUIRE(started.ok());
    server = *std::move(started);
    std::ofstream(dir.Join("kubeconfig")) << json{
        {"apiVersion", "v1"},
        {"kind", "Config"},
        {"clusters",
         {{{"name", "fake"}, {"cluster", {{"server", server->url()}, {"certificate-authority", server->ca_file()}}}}}},
        {"users", {{{"name", "admin"}, {"user", {{"token", server->admin_token()}}}}}},
        {"contexts", {{{"name", "fake"}, {"context", {{"cluster", "fake"}, {"user", "admin"}}}}}},
        {"current-context", "fake"}};
    absl::StatusOr<k8s::ClientConfig> config = k8s::LoadKubeconfig(dir.Join("kubeconfig"));
    REQUIRE(config.ok());
    config->protobuf = false;  // the fake speaks JSON only
    absl::StatusOr<std::shared_ptr<k8s::Client>> client = k8s::Client::Create(*config);
    REQUIRE(client.ok());
    REQUIRE((*client)
                ->Create(k8s::kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kNode}}}})
                .ok());
    std::filesystem::create_directories(dir.Join("registry"));
    std::filesystem::create_directories(dir.Join("cdi"));

    kubeletplugin::Options options;
    options.driver_name = testing::kTestDriverName;
    options.node_name = kNode;
    options.registrar_dir = dir.Join("registry");
    options.plugin_data_dir = dir.Join("plugins");
    options.kube_client = *client;
    options.cdi.dir.path = dir.Join("cdi");
    options.logger = testing::DiscardLogger();
    driver.ReturnCdiEdits();
    absl::StatusOr<std::unique_ptr<Helper>> made = Helper::Start(driver, options);
    REQUIRE(made.ok());
    helper = *std::move(made);
    std::vector<k8s::Device> devices(2);
    devices[0].name = "gpu-0";
    devices[1].name = "gpu-1";
    resourceslice::DriverResources resources;
    resources.pools[kNode].slices = resourceslice::SplitIntoSlices(std::move(devices));
    REQUIRE(helper->PublishResources(std::move(resources)).ok());
    std::vector<kubeletplugin::DeviceHealth> health(2);
    for (int i = 0; i < 2; ++i) {
      health[i].pool_name = kNode;
      health[i].device_name = absl::StrCat("gpu-", i);
      health[i].health = kubeletplugin::HealthStatus::kHealthy;
    }
    helper->PublishHealth(health);
    // Again and again, as a driver must within the devices' timeout (HLT-4).
    health_resender = std::thread([this, health] {
      while (!stopping.WaitForNotificationWithTimeout(absl::Milliseconds(200))) helper->PublishHealth(health);
    });
  }

  ~Fixture() {
    stopping.Notify();
    health_resender.join();
  }

  std::vector<std::string> SanityArgs() const {
    return {"sanity",   "--registry-dir", dir.Join("registry"), "--kubeconfig", dir.Join("kubeconfig"), "--namespace",
            kNamespace, "--cdi-dir",      dir.Join("cdi"),      "--junit",      dir.Join("junit.xml")};
  }
};

// Registered before sanity started (REG-6 skipped), no process to stop (SIG
// skipped): everything else passes.
TEST_CASE("dractl sanity passes the Helper with claims on the fake API server", "[sanity]") {
  Fixture f;
  const testing::ProcessResult result = RunDractl(f.SanityArgs());
  CHECK(result.exit_code == 0);
  CHECK(result.out.find("SKIP  REG-6  ") != std::string::npos);
  CHECK(result.out.find("SKIP  SIG-1  ") != std::string::npos);
  CHECK(result.out.find("29 checks: 26 passed, 0 failed, 0 recommended not followed, 3 skipped") != std::string::npos);
  const std::string junit = testing::ReadFile(f.dir.Join("junit.xml"));
  CHECK(junit.find("tests=\"29\" failures=\"0\" skipped=\"3\"") != std::string::npos);
}

TEST_CASE("dractl sanity fails a driver whose CDI ID resolves to no spec, naming the ID", "[sanity]") {
  Fixture f;
  f.driver.AlsoReturnCdiId("example.com/nowhere=gpu-0");
  const testing::ProcessResult result = RunDractl(f.SanityArgs());
  CHECK(result.exit_code == 1);
  CHECK(result.out.find("FAIL  PRE-3  ") != std::string::npos);
  CHECK(result.out.find("example.com/nowhere=gpu-0: no valid spec in ") != std::string::npos);
  CHECK(result.out.find("rule from: tags.cncf.io/container-device-interface") != std::string::npos);
  const std::string junit = testing::ReadFile(f.dir.Join("junit.xml"));
  CHECK(junit.find("<failure type=\"required\" message=\"example.com/nowhere=gpu-0: no valid spec") !=
        std::string::npos);
}

TEST_CASE("dractl sanity that cannot read its kubeconfig says so and exits 1", "[sanity]") {
  testing::TempDir dir;
  const testing::ProcessResult result =
      RunDractl({"sanity", "--registry-dir", dir.path(), "--kubeconfig", "/nonexistent/kubeconfig", "--wait", "0.1"});
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("/nonexistent/kubeconfig") != std::string::npos);
}

TEST_CASE("dractl sanity usage errors exit 2", "[sanity]") {
  CHECK(RunDractl({"sanity"}).exit_code == 2);
  CHECK(RunDractl({"sanity", "--registry-dir", "/tmp", "--pid", "1", "--", "/bin/true"}).exit_code == 2);
  CHECK(RunDractl({"sanity", "--registry-dir", "/tmp", "--wait", "never"}).exit_code == 2);
  CHECK(RunDractl({"prepare", "--endpoint", "/tmp/x", "--claim", "a/b/c", "--", "/bin/true"}).exit_code == 2);
  // A plugin's own --help after "--" is the plugin's.
  CHECK(RunDractl({"sanity", "--", "/bin/true", "--help"}).exit_code == 2);
}

// docs/sanity.md's table holds each check as `dractl sanity --list` prints it.
TEST_CASE("dractl sanity --list is the table of docs/sanity.md", "[sanity]") {
  const testing::ProcessResult result = RunDractl({"sanity", "--list"});
  REQUIRE(result.exit_code == 0);
  const std::string doc = testing::ReadFile(absl::StrCat(DRA_SOURCE_DIR, "/docs/sanity.md"));
  const std::vector<std::string> lines = absl::StrSplit(result.out, '\n', absl::SkipEmpty());
  REQUIRE(lines.size() == 58);
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    // "REG-1  required    rule" and "       from: source"
    const std::string& line = lines[i];
    const size_t level_start = line.find_first_not_of(' ', line.find(' '));
    const size_t rule_start = line.find_first_not_of(' ', line.find(' ', level_start));
    const std::string row =
        absl::StrCat("| ", line.substr(0, line.find(' ')), " | ",
                     line.substr(level_start, line.find(' ', level_start) - level_start), " | ",
                     line.substr(rule_start), " | ", lines[i + 1].substr(lines[i + 1].find("from: ") + 6), " |");
    INFO(row);
    CHECK(doc.find(row) != std::string::npos);
  }
}

}  // namespace
}  // namespace dra
