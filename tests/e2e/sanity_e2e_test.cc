// dractl sanity against the three example drivers and against Kubernetes' own
// DRA test driver (test/e2e/dra/test-driver, on the Go kubeletplugin helper),
// on the suite's control plane. Each driver runs as a process with a registry,
// plugin and CDI directory of its own, for a Node object of its own, as the
// drivers' service account; sanity creates its claims as the admin.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "e2e/e2e_cluster.h"
#include "e2e/node_driver.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {
namespace {

using k8s::kNodes;
using nlohmann::json;

// A driver's own directories, a Node for it that declares the features the
// API server asks of nodes whose slices hold node-allocatable resources (the
// CPU driver's), and a namespace whose claims the drivers' identity may read.
class SanityEnv {
 public:
  SanityEnv() : admin_(MakeClient(AdminConfig())), node_(UniqueName("sanity-node")) {
    for (const char* dir : {"registry", "plugins", "cdi"}) std::filesystem::create_directory(dir_.Join(dir));
    json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node_}}}};
    absl::StatusOr<json> created = admin_->Create(kNodes, "", node);
    REQUIRE(created.ok());
    (*created)["status"] = {{"declaredFeatures", {"DRANodeAllocatableResources"}}};
    REQUIRE(admin_->UpdateStatus(kNodes, "", *created).ok());
    ns_ = CreateNamespace(*admin_, "sanity");
    GrantDriverRights(*admin_, ns_, node_);
  }
  ~SanityEnv() { (void)admin_->Delete(kNodes, "", node_); }

  std::string Dir(const std::string& name) const { return dir_.Join(name); }
  const std::string& node() const { return node_; }

  // The sanity command line, before "--" or --pid.
  std::vector<std::string> SanityArgv() const {
    return {DRACTL_PATH,      "sanity",
            "--registry-dir", Dir("registry"),
            "--kubeconfig",   ClusterDir() + "/admin.kubeconfig",
            "--node",         node_,
            "--namespace",    ns_,
            "--cdi-dir",      Dir("cdi"),
            "--junit",        Dir("junit.xml")};
  }

  // Runs sanity and returns its report; the test fails when it exits
  // otherwise than `exit_code` (the report is then printed).
  std::string Run(const std::vector<std::string>& argv, int exit_code = 0) const {
    absl::StatusOr<testing::ProcessResult> result = testing::RunProcess(argv);
    REQUIRE(result.ok());
    INFO(result->out);
    INFO(result->err);
    CHECK(result->exit_code == exit_code);
    const std::string junit = testing::ReadFile(Dir("junit.xml"));
    CHECK(junit.find("<testsuite name=\"dractl sanity\" tests=\"29\"") != std::string::npos);
    return result->out;
  }

 private:
  std::shared_ptr<k8s::Client> admin_;
  testing::TempDir dir_;
  std::string node_;
  std::string ns_;
};

// Sanity starting example driver `binary` (driver name "<prefix>-<random>.example.com", or its own without a
// prefix) with the SDK's kubelet plugin flags (dra::kubeletplugin::PluginFlags); the test appends the driver's own.
std::vector<std::string> SanityOfExample(const SanityEnv& env, const std::string& binary, const std::string& prefix) {
  std::vector<std::string> argv = env.SanityArgv();
  for (const std::string& arg :
       {std::string("--"), binary, "--node-name=" + env.node(), "--kubeconfig=" + DriverKubeconfig(),
        "--cdi-root=" + env.Dir("cdi"), "--kubelet-registrar-directory-path=" + env.Dir("registry"),
        "--kubelet-plugins-directory-path=" + env.Dir("plugins")}) {
    argv.push_back(arg);
  }
  if (!prefix.empty()) argv.push_back("--driver-name=" + UniqueName(prefix) + ".example.com");
  return argv;
}

// Sanity starts the driver after its first look at the registry directory,
// so every check runs, REG-6 and the SIGTERM ones included.
TEST_CASE("dractl sanity: the GPU example passes every check", "[e2e][sanity]") {
  SanityEnv env;
  std::vector<std::string> argv = SanityOfExample(env, DRA_GPU_DRIVER, "gpu");
  argv.push_back("--num-devices=4");
  const std::string report = env.Run(argv);
  INFO(report);
  CHECK(report.find("29 checks: 29 passed, 0 failed, 0 recommended not followed, 0 skipped") != std::string::npos);
}

// The CPU example serves no health stream: the HLT checks are skipped.
TEST_CASE("dractl sanity: the CPU example passes every check but health", "[e2e][sanity]") {
  SanityEnv env;
  std::vector<std::string> argv = SanityOfExample(env, DRA_CPU_DRIVER, "cpu");
  // A device per CPU of this machine, and no NRI runtime to pin with.
  argv.push_back("--mode=individual");
  argv.push_back("--nri-socket=");
  const std::string report = env.Run(argv);
  INFO(report);
  CHECK(report.find("SKIP  HLT-1  ") != std::string::npos);
  CHECK(report.find("29 checks: 25 passed, 0 failed, 0 recommended not followed, 4 skipped") != std::string::npos);
}

// The hello world (examples/minimal, driver minimal.example.com) serves no
// health stream either.
TEST_CASE("dractl sanity: the minimal example passes every check but health", "[e2e][sanity]") {
  SanityEnv env;
  std::vector<std::string> argv = SanityOfExample(env, DRA_MINIMAL_DRIVER, "");
  argv.push_back("--devices=4");
  const std::string report = env.Run(argv);
  INFO(report);
  CHECK(report.find("SKIP  HLT-1  ") != std::string::npos);
  CHECK(report.find("29 checks: 25 passed, 0 failed, 0 recommended not followed, 4 skipped") != std::string::npos);
}

// The test driver installs its SIGTERM handler only after it has registered
// and published, so a SIGTERM that sanity sends right after its checks could
// find the Go runtime's default (exit without cleanup). The test therefore
// starts it itself, waits for its "Waiting for signal." and gives sanity
// its --pid; REG-6 is then skipped, as the driver was registered first.
TEST_CASE("dractl sanity: Kubernetes' DRA test driver on the Go helper", "[e2e][sanity]") {
  absl::StatusOr<testing::ProcessResult> dir =
      testing::RunProcess({DRA_E2E_BUILD_K8S, "--print-dir", "dra-test-driver"});
  REQUIRE(dir.ok());
  REQUIRE(dir->exit_code == 0);
  const std::string binary = absl::StrCat(absl::StripTrailingAsciiWhitespace(dir->out), "/dra-test-driver");

  SanityEnv env;
  const std::string driver = UniqueName("test") + ".example.com";
  // It listens in <datadir>/<driver>, which the kubelet's DaemonSet would
  // have mounted; it creates only <datadir>.
  std::filesystem::create_directory(env.Dir("plugins") + "/" + driver);
  absl::StatusOr<testing::ChildProcess> process = testing::ChildProcess::Spawn(
      {binary, "--kubeconfig=" + DriverKubeconfig(), "--drivername=" + driver, "kubelet-plugin",
       "--node-name=" + env.node(), "--cdi-dir=" + env.Dir("cdi"), "--plugin-registration-path=" + env.Dir("registry"),
       "--datadir=" + env.Dir("plugins"), "--num-devices=4"},
      env.Dir("driver.log"));
  REQUIRE(process.ok());
  REQUIRE(testing::PollUntil(
      [&] { return testing::ReadFile(env.Dir("driver.log")).find("Waiting for signal.") != std::string::npos; },
      absl::Minutes(2)));

  std::vector<std::string> argv = env.SanityArgv();
  argv.push_back(absl::StrCat("--pid=", process->pid()));
  const std::string report = env.Run(argv);
  INFO(report);
  // Two findings about the Go helper and this driver (docs/sanity.md): the
  // helper fails the whole call when one claim of it cannot be read or is
  // not allocated, and the driver's health stream lists no device.
  CHECK(report.find("WARN  PRE-10") != std::string::npos);
  CHECK(report.find("WARN  HLT-2") != std::string::npos);
  // The Go helper leaves device exclusivity to the driver, and this one
  // prepares a device for a second claim while the first holds it.
  CHECK(report.find("WARN  PRE-12") != std::string::npos);
  CHECK(report.find("SKIP  REG-6") != std::string::npos);
  CHECK(report.find("29 checks: 25 passed, 0 failed, 3 recommended not followed, 1 skipped") != std::string::npos);
  std::string how;
  CHECK(testing::PollUntil([&] { return process->Exited(&how); }, absl::Minutes(1)));
}

}  // namespace
}  // namespace dra::e2e
