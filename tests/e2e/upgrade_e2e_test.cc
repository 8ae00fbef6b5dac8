// Upgrade and downgrade between dra-cpp releases with pods running
// (scripts/test-upgrade.sh, which builds the previous release's GPU example
// and image from its commit and passes its tree as
// DRA_E2E_PREVIOUS_RELEASE): installed from that release's chart, upgraded
// to this tree's by `helm upgrade`, rolled back by `helm rollback`. Each
// version unprepares the claims the other prepared, with their CDI specs,
// and prepares new ones.
#include <filesystem>

#include "e2e/runtime_node.h"

namespace dra::e2e {
namespace {

std::string PreviousVersion() {
  const testing::ProcessResult version = Run({absl::StrCat(DRA_E2E_PREVIOUS_RELEASE, "/scripts/version.sh")});
  RequireSuccess(version, "the previous release's scripts/version.sh");
  return std::string(absl::StripAsciiWhitespace(version.out));
}

std::vector<std::string> HelmArgs(const std::string& verb, const std::string& chart, const NodeEnv& node,
                                  const std::string& tag) {
  std::vector<std::string> args = {verb,    kGpu.release,         chart,          "--namespace",
                                   kGpu.ns, "--create-namespace", "--kubeconfig", ClusterDir() + "/admin.kubeconfig"};
  for (const std::string& set : HelmSets(node, tag, {"fabricController.enabled=false"})) {
    args.insert(args.end(), {"--set", set});
  }
  return args;
}

bool PodGone(Client& admin, const std::string& ns, const std::string& name) {
  return absl::IsNotFound(admin.Get(kPods, ns, name).status());
}

TEST_CASE(
    "upgrade from the previous release and back, pods running throughout: each version unprepares the claims the "
    "other prepared and removes their CDI specs, new pods run on both",
    "[e2e][runtime][gpu][upgrade]") {
  const NodeEnv node = RealNode();
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  const std::string previous = PreviousVersion();
  const std::string tar = absl::StrCat(DRA_E2E_PREVIOUS_RELEASE, "/build/images/gpu-driver-", previous, ".tar");
  RequireSuccess(Run({DRA_E2E_CLUSTER_SH, "image-import", ClusterDir(), tar, kGpu.image() + ":" + previous}),
                 "cluster.sh image-import " + tar);
  ImportDriverImage(kGpu, kImageTag);
  DeleteNodeSlices(*admin, node, kGpu.driver);
  const std::string previous_chart = absl::StrCat(DRA_E2E_PREVIOUS_RELEASE, "/examples/gpu/deploy/helm/", kGpu.release);
  struct Uninstall {
    ~Uninstall() { HelmUninstall(kGpu); }
  } uninstall;
  RequireSuccess(Helm(HelmArgs("install", previous_chart, node, previous)), "helm install " + previous);
  WaitForOneDriverPod(*admin, kGpu, previous);
  REQUIRE(Eventually([&] { return PublishedDevices(*admin, node, kGpu.driver) > 0; }, kPodStart));

  Workloads workloads(*admin, "upgrade");
  std::map<std::string, std::string> uid;  // by pod
  const auto run = [&](const std::string& pod) { uid[pod] = RunClaimPod(*admin, workloads.ns, pod + "-gpu", pod).uid; };
  // Its CDI spec, whichever version wrote it: none is left once it goes.
  const auto specs_of = [&](const std::string& pod) {
    size_t specs = 0;
    for (const auto& file : std::filesystem::directory_iterator(node.cdi_dir)) {
      specs += absl::StrContains(file.path().filename().string(), uid[pod]) ? 1 : 0;
    }
    return specs;
  };
  const auto remove = [&](const std::string& pod) {
    REQUIRE(admin->Delete(kPods, workloads.ns, pod).ok());
    CHECK(Eventually([&] { return PodGone(*admin, workloads.ns, pod); }, kPodStart));
    CHECK(Eventually([&] { return specs_of(pod) == 0; }, kPodStart));
  };
  run("a");
  run("b");
  CHECK(specs_of("a") == 1);

  // Up: the claims the previous release prepared are this one's.
  RequireSuccess(Helm(HelmArgs("upgrade", kGpu.chart_dir(), node, kImageTag)),
                 absl::StrCat("helm upgrade to ", kImageTag));
  const json upgraded = WaitForOneDriverPod(*admin, kGpu, kImageTag);
  const std::string log = PodLog(kGpu.ns, upgraded["metadata"]["name"], "plugin");
  INFO("the upgraded driver's log:\n" << log);
  for (const char* pod : {"a", "b"}) CHECK(RunningPod(*admin, workloads.ns, pod)["status"]["phase"] == "Running");
  remove("a");
  run("c");
  CHECK(specs_of("c") == 1);

  // Down: the previous release reads what this one left and unprepares
  // what either prepared.
  RequireSuccess(
      Helm({"rollback", kGpu.release, "1", "--namespace", kGpu.ns, "--kubeconfig", ClusterDir() + "/admin.kubeconfig"}),
      "helm rollback to " + previous);
  WaitForOneDriverPod(*admin, kGpu, previous);
  for (const char* pod : {"b", "c"}) CHECK(RunningPod(*admin, workloads.ns, pod)["status"]["phase"] == "Running");
  remove("b");
  remove("c");
  run("d");
  CHECK(specs_of("d") == 1);
  remove("d");
}

}  // namespace
}  // namespace dra::e2e
