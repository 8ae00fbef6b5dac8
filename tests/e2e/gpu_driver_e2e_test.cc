// The example GPU driver (examples/gpu) as a process on the suite's real
// node, under the driver identity's RBAC: pods with GPUs from templates run
// with the CDI edits the CRI stand-in resolved, GpuConfig reaches the
// container and a bad one fails only its claim, device status shows in the
// claim, partitions and shared GPUs are allocated by the real scheduler
// within their counters and capacity, and fabric GPUs bind after the node
// plugin attached them (or allocates again after a failed attach), and a
// GPU's host memory overhead counts against the node.
//
// The node is shared: these tests run one at a time (RESOURCE_LOCK), each
// with a driver name of its own.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dra/k8s/quantity.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "e2e/node_driver.h"
#include "kubeletplugin/checkpoint.h"
#include "support/checkpoint_file.h"
#include "support/http_get.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {
namespace {

using k8s::Client;
using k8s::kDeviceClasses;
using k8s::kResourceClaims;
using nlohmann::json;

// The GPU driver on the node with a driver name of its own, a namespace and
// the RBAC of its ClusterRole.
struct GpuDriver : ExampleDriverOnNode {
  explicit GpuDriver(const std::vector<std::string>& flags) : ExampleDriverOnNode(DRA_GPU_DRIVER, "gpu", flags) {}

  // A claim (or template) for one device of `device_class`, with `config`
  // (GpuConfig sharing) and `capacity` (memory request) when given.
  json ClaimSpec(const std::string& device_class, const json& sharing = nullptr, const std::string& memory = "") {
    json exactly = {{"deviceClassName", device_class}};
    if (!memory.empty()) exactly["capacity"] = {{"requests", {{"memory", memory}}}};
    json spec = {{"devices", {{"requests", json::array({{{"name", "gpu"}, {"exactly", exactly}}})}}}};
    if (!sharing.is_null()) {
      spec["devices"]["config"] = json::array(
          {{{"requests", json::array({"gpu"})},
            {"opaque",
             {{"driver", driver.name()},
              {"parameters",
               {{"apiVersion", "gpu.resource.example.com/v1alpha1"}, {"kind", "GpuConfig"}, {"sharing", sharing}}}}}}});
    }
    return spec;
  }
};

bool Has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

// "KEY=VALUE" entries whose key starts with `prefix`.
std::vector<std::string> WithPrefix(const std::vector<std::string>& env, const std::string& prefix) {
  std::vector<std::string> found;
  for (const std::string& entry : env) {
    if (absl::StartsWith(entry, prefix)) found.push_back(entry);
  }
  return found;
}

TEST_CASE(
    "the GPU driver: a pod with a GPU from a template runs with its CDI edits and config, the claim shows "
    "the device status, and the claim is unprepared when the pod goes",
    "[e2e][node][gpu]") {
  GpuDriver gpu({"--num-devices=2", "--gpu-device-status"});
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateTemplate(
      "gpu", gpu.ClaimSpec(device_class, {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}));
  const json pod = gpu.RunPod("app", {{"gpu", "gpu"}}, true);

  const std::string claim_name = GeneratedClaimName(pod, "gpu");
  const json claim = gpu.Claim(claim_name);
  INFO("the claim: " << claim.dump(1));
  const json& result = claim["status"]["allocation"]["devices"]["results"][0];
  const std::string device = result["device"].get<std::string>();
  const std::string index = device.substr(device.find('-') + 1);
  const std::vector<std::string> env = gpu.ContainerEnv(pod);
  INFO("env: " << absl::StrJoin(env, " "));
  CHECK(Has(env, absl::StrCat("GPU_DEVICE_", index, "=", device)));
  const std::vector<std::string> uuid = WithPrefix(env, absl::StrCat("GPU_DEVICE_", index, "_UUID=GPU-"));
  REQUIRE(uuid.size() == 1);
  CHECK(Has(env,
            absl::StrCat("GPU_DEVICE_GPU_", index, "_RESOURCE_CLAIM=", claim["metadata"]["uid"].get<std::string>())));
  CHECK(Has(env, "DRA_ADMIN_ACCESS=false"));
  CHECK(Has(env, absl::StrCat("GPU_DEVICE_", index, "_SHARING_STRATEGY=TimeSlicing")));
  CHECK(Has(env, absl::StrCat("GPU_DEVICE_", index, "_TIMESLICE_INTERVAL=Long")));
  // Memory and compute only for what a claim consumes of a shared GPU.
  CHECK(WithPrefix(env, absl::StrCat("GPU_DEVICE_", index, "_MEMORY=")).empty());
  CHECK(Has(env, "KUBERNETES_NODE_NAME=" + gpu.node.name));
  CHECK(Has(env, "DRA_RESOURCE_DRIVER_NAME=" + gpu.driver.name()));
  const std::vector<json> containers = CriContainers(gpu.node, pod["metadata"]["uid"].get<std::string>());
  CHECK(containers[0]["deviceNodes"][0]["path"] == "/dev/mock-gpu" + index);

  // Device status, written while preparing.
  REQUIRE(claim["status"]["devices"].size() == 1);
  const json& status = claim["status"]["devices"][0];
  CHECK(status["device"] == device);
  CHECK(status["data"]["uuid"] == json{{"string", uuid[0].substr(uuid[0].find('=') + 1)}});
  CHECK(status["data"]["model"] == json{{"string", "LATEST-GPU-MODEL"}});
  CHECK(status["data"]["driverVersion"] == json{{"version", "1.0.0"}});
  CHECK(status["conditions"][0]["type"] == "Ready");
  CHECK(status["conditions"][0]["reason"] == "Prepared");

  // Observability.
  CHECK(gpu.driver.Metric("dra_kubelet_calls_total{method=\"NodePrepareResources\"}") >= 1);
  const std::pair<std::string, std::string> health = testing::HttpGet(gpu.driver.port(), "/healthz");
  CHECK_THAT(health.first, Catch::Contains("200"));

  const std::string uid = claim["metadata"]["uid"].get<std::string>();
  gpu.DeletePod("app");
  CHECK(Eventually([&] { return !std::filesystem::exists(gpu.driver.CdiSpecFile(uid)); }, absl::Seconds(60)));
  CHECK(gpu.driver.LoggedFor("Unprepared claim", uid) == 1);
  gpu.driver.Stop();
  // SIGTERM keeps the slices for the next instance.
  CHECK_FALSE(SliceUids(*gpu.admin, gpu.node.name, gpu.driver.name()).empty());
}

// The UID of the claim generated for the pod's claim "gpu".
std::string GpuClaimUid(GpuDriver& gpu, const json& pod) {
  return gpu.Claim(GeneratedClaimName(pod, "gpu"))["metadata"]["uid"].get<std::string>();
}

// The sockets a driver instance logged at start ("DRA plugin started").
std::pair<std::string, std::string> Sockets(const DriverProcess& process) {
  const std::string log = process.Log();
  const size_t registrar = log.find("registrar=\"");
  const size_t endpoint = log.find("endpoint=\"", registrar);
  REQUIRE(registrar != std::string::npos);
  REQUIRE(endpoint != std::string::npos);
  auto value = [&](size_t at, size_t key_length) {
    const size_t begin = at + key_length;
    return log.substr(begin, log.find('"', begin) - begin);
  };
  return {value(registrar, 11), value(endpoint, 10)};
}

TEST_CASE(
    "the GPU driver in a rolling update (maxSurge): two instances serve side by side, no claim is prepared "
    "by both, and the old one's sockets go with it",
    "[e2e][node][gpu]") {
  GpuDriver gpu({"--num-devices=4", "--pod-uid=11111111-1111-4111-8111-111111111111"});
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateTemplate("gpu", gpu.ClaimSpec(device_class));
  const std::string before = GpuClaimUid(gpu, gpu.RunPod("before", {{"gpu", "gpu"}}, true));

  // The DaemonSet's new pod starts beside the old one, with the same driver
  // name and dirs; the kubelet calls the instance registered last.
  DriverProcess surge(gpu.node, gpu.driver.name());
  surge.Start(gpu.Argv(surge, {"--num-devices=4", "--pod-uid=22222222-2222-4222-8222-222222222222"}));
  const std::pair<std::string, std::string> old_sockets = Sockets(gpu.driver);
  const std::pair<std::string, std::string> new_sockets = Sockets(surge);
  CHECK(old_sockets.first != new_sockets.first);
  CHECK(old_sockets.second != new_sockets.second);
  const std::string during = GpuClaimUid(gpu, gpu.RunPod("during", {{"gpu", "gpu"}}, true));
  for (const std::string& uid : {before, during}) {
    INFO("claim " << uid << "\nthe old instance's log:\n" << gpu.driver.Log() << "\nthe new one's:\n" << surge.Log());
    CHECK(gpu.driver.LoggedFor("Prepared claim", uid) + surge.LoggedFor("Prepared claim", uid) == 1);
  }
  CHECK(surge.LoggedFor("Prepared claim", during) == 1);

  // The old one goes (SIGTERM, exit 0) and takes its sockets; the new one
  // unprepares what the old one prepared (one checkpoint).
  gpu.driver.Stop();
  CHECK_FALSE(std::filesystem::exists(old_sockets.first));
  CHECK_FALSE(std::filesystem::exists(old_sockets.second));
  CHECK(std::filesystem::exists(new_sockets.first));
  CHECK(std::filesystem::exists(new_sockets.second));
  for (const char* pod : {"before", "during"}) gpu.DeletePod(pod);
  for (const std::string& uid : {before, during}) {
    CHECK(Eventually([&] { return !std::filesystem::exists(gpu.driver.CdiSpecFile(uid)); }, absl::Seconds(60)));
    CHECK(surge.LoggedFor("Unprepared claim", uid) == 1);
  }
  surge.Stop();
}

TEST_CASE(
    "the GPU driver killed at crash points of the kubelet's prepare and unprepare calls on the real node: "
    "every pod runs, every claim is cleaned up",
    "[e2e][node][gpu][crash]") {
  // A shorter run of the crash harness (tests/crash) under the real kubelet:
  // one point per instance, hit by the next kubelet call; the kubelet's
  // retry then meets a restarted instance.
  const std::vector<std::string> points = {
      "prepare.before_driver",         "prepare.after_driver",      "prepare.after_metadata_files",
      "prepare.after_cdi_spec",        "status.before_write",       "prepare.after_checkpoint",
      "unprepare.before_driver",       "unprepare.after_driver",    "status.after_write",
      "unprepare.after_files_removed", "unprepare.after_checkpoint"};
  const std::vector<std::string> flags = {"--num-devices=4", "--gpu-device-status", "--device-metadata"};
  GpuDriver gpu(flags);
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateTemplate("gpu", gpu.ClaimSpec(device_class));
  gpu.driver.Stop();
  std::vector<std::string> uids;
  int pods = 0;  // pod i is "app-<i>"; pods below `pods - 1` are deleted
  auto run_pod = [&] {
    uids.push_back(GpuClaimUid(gpu, gpu.RunPod(absl::StrCat("app-", pods++), {{"gpu", "gpu"}}, true)));
  };
  auto create_pod = [&] {
    REQUIRE(gpu.admin->Create(kPods, gpu.ns, PodWithClaims(gpu.ns, absl::StrCat("app-", pods), {{"gpu", "gpu"}})).ok());
  };
  std::string table = "| crash point | hit | pod running after the restart | claim cleaned up |\n|---|---|---|---|\n";
  gpu.driver.Start(gpu.Argv(gpu.driver, flags));
  run_pod();
  gpu.driver.Stop();
  for (const std::string& point : points) {
    INFO("crash point " << point << "; the driver's log:\n" << gpu.driver.Log());
    gpu.driver.Start(gpu.Argv(gpu.driver, flags), {absl::StrCat("DRA_CRASH_POINT=", point, ":1")});
    const bool unprepare = absl::StartsWith(point, "unprepare.");
    const std::string previous = absl::StrCat("app-", pods - 1);
    // Unprepare points die in the previous pod's unprepare, the others
    // (the device status is written while preparing) in the next pod's
    // prepare.
    if (unprepare) {
      REQUIRE(gpu.admin->Delete(kPods, gpu.ns, previous).ok());
    } else {
      create_pod();
    }
    std::string how;
    REQUIRE(Eventually([&] { return gpu.driver.Exited(&how); }, absl::Seconds(90)));
    REQUIRE(how == "exited with status 137");
    REQUIRE_THAT(gpu.driver.Log(), Catch::Contains(absl::StrCat("dra crash point ", point, " hit 1")));
    gpu.driver.Start(gpu.Argv(gpu.driver, flags));
    if (unprepare) {
      CHECK(Eventually([&] { return absl::IsNotFound(gpu.admin->Get(kPods, gpu.ns, previous).status()); },
                       absl::Seconds(90)));
      run_pod();
    } else {
      json pod;
      REQUIRE(WaitForPod(*gpu.admin, gpu.ns, absl::StrCat("app-", pods), PodRunning, &pod));
      uids.push_back(GpuClaimUid(gpu, pod));
      ++pods;
      gpu.DeletePod(previous);
    }
    // The previous pod's claim is unprepared, its files gone.
    const std::string cleaned = uids[uids.size() - 2];
    const bool gone =
        Eventually([&] { return !std::filesystem::exists(gpu.driver.CdiSpecFile(cleaned)); }, absl::Seconds(60));
    CHECK(gone);
    table += absl::StrCat("| `", point, "` | yes | yes | ", gone ? "yes" : "NO", " |\n");
    gpu.driver.Stop();
  }
  gpu.driver.Start(gpu.Argv(gpu.driver, flags));
  gpu.DeletePod(absl::StrCat("app-", pods - 1));
  CHECK(Eventually([&] { return !std::filesystem::exists(gpu.driver.CdiSpecFile(uids.back())); }, absl::Seconds(60)));
  gpu.driver.Stop();
  // Nothing of any claim is left: no CDI spec, no metadata, no checkpoint entry.
  for (const std::string& uid : uids) CHECK_FALSE(std::filesystem::exists(gpu.driver.CdiSpecFile(uid)));
  const std::string data = absl::StrCat(gpu.node.plugins_dir, "/", gpu.driver.name());
  absl::StatusOr<std::unique_ptr<kubeletplugin::internal::Checkpoint>> checkpoint =
      kubeletplugin::internal::Checkpoint::Open(testing::CheckpointFile(data));
  REQUIRE(checkpoint.ok());
  CHECK((*checkpoint)->Entries().empty());
  std::error_code error;
  CHECK(std::filesystem::directory_iterator(data + "/dra-device-metadata", error) ==
        std::filesystem::directory_iterator());
  // On stdout, not through WARN: Catch's text wrapping asserts on the table's lines.
  std::cout << table << std::flush;
}

TEST_CASE("the GPU driver: a bad GpuConfig fails only its claim, and the pod's event names the field",
          "[e2e][node][gpu]") {
  GpuDriver gpu({"--num-devices=2"});
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateClaim("good", gpu.ClaimSpec(device_class));
  gpu.CreateClaim(
      "bad", gpu.ClaimSpec(device_class, {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Fast"}}}}));
  REQUIRE(
      gpu.admin->Create(kPods, gpu.ns, PodWithClaims(gpu.ns, "app", {{"good", "good"}, {"bad", "bad"}}, false)).ok());
  std::vector<std::string> events;
  const bool reported = Eventually(
      [&] {
        events = PodEvents(*gpu.admin, gpu.ns, "app");
        return std::any_of(events.begin(), events.end(), [](const std::string& event) {
          return absl::StartsWith(event, "FailedPrepareDynamicResources: ") &&
                 absl::StrContains(event, "sharing.timeSlicingConfig.interval: Unsupported value");
        });
      },
      absl::Seconds(60));
  INFO("events:\n" << absl::StrJoin(events, "\n") << "\nthe driver's log:\n" << gpu.driver.Log());
  REQUIRE(reported);
  const json good = gpu.Claim("good");
  CHECK(gpu.driver.LoggedFor("Prepared claim", good["metadata"]["uid"].get<std::string>()) >= 1);
  gpu.DeletePod("app");
}

TEST_CASE(
    "the GPU driver: partitions share their GPU's counters and shared GPUs their capacity, as the scheduler "
    "allocates them",
    "[e2e][node][gpu]") {
  SECTION("two partitions of one GPU fit, the whole GPU then does not") {
    GpuDriver gpu({"--num-devices=1", "--gpu-partitions=2"});
    const std::string part = gpu.DeviceClass(absl::StrCat("\"partition\" in ", gpu.Attributes()));
    const std::string whole = gpu.DeviceClass(absl::StrCat("!(\"partition\" in ", gpu.Attributes(), ")"));
    gpu.CreateClaim("p0", gpu.ClaimSpec(part));
    gpu.CreateClaim("p1", gpu.ClaimSpec(part));
    gpu.CreateClaim("whole", gpu.ClaimSpec(whole));
    const json first = gpu.RunPod("p0", {{"gpu", "p0"}}, false);
    gpu.RunPod("p1", {{"gpu", "p1"}}, false);
    const std::vector<std::string> env = gpu.ContainerEnv(first);
    CHECK(WithPrefix(env, "GPU_DEVICE_0_PARTITION_").size() >= 4);
    CHECK((Has(env, "GPU_DEVICE_0_PARTITION_0=gpu-0-partition-0") ||
           Has(env, "GPU_DEVICE_0_PARTITION_1=gpu-0-partition-1")));

    REQUIRE(gpu.admin->Create(kPods, gpu.ns, PodWithClaims(gpu.ns, "whole", {{"gpu", "whole"}}, false)).ok());
    std::vector<std::string> events;
    CHECK(Eventually(
        [&] {
          events = PodEvents(*gpu.admin, gpu.ns, "whole");
          return std::any_of(events.begin(), events.end(),
                             [](const std::string& e) { return absl::StartsWith(e, "FailedScheduling: "); });
        },
        absl::Seconds(60)));
    INFO("events:\n" << absl::StrJoin(events, "\n"));
    CHECK_FALSE(gpu.Claim("whole")["status"].contains("allocation"));
    gpu.DeletePod("p0");
    gpu.DeletePod("p1");
    // Freed counters: the whole GPU is allocated now.
    json pod;
    CHECK(WaitForPod(*gpu.admin, gpu.ns, "whole", PodRunning, &pod, absl::Seconds(120)));
    gpu.DeletePod("whole");
  }
  SECTION("two claims share one GPU by memory; a third that does not fit waits") {
    GpuDriver gpu({"--num-devices=1", "--gpu-allow-multiple-allocations"});
    const std::string shared = gpu.DeviceClass();
    for (const std::string name : {"s0", "s1", "s2"}) gpu.CreateClaim(name, gpu.ClaimSpec(shared, nullptr, "40Gi"));
    const json first = gpu.RunPod("s0", {{"gpu", "s0"}}, false);
    gpu.RunPod("s1", {{"gpu", "s1"}}, false);
    CHECK(Has(gpu.ContainerEnv(first), "GPU_DEVICE_0_MEMORY=40Gi"));
    const json claim = gpu.Claim("s0");
    INFO(claim.dump(1));
    CHECK(claim["status"]["allocation"]["devices"]["results"][0].contains("shareID"));
    REQUIRE(gpu.admin->Create(kPods, gpu.ns, PodWithClaims(gpu.ns, "s2", {{"gpu", "s2"}}, false)).ok());
    CHECK(Eventually(
        [&] {
          const std::vector<std::string> events = PodEvents(*gpu.admin, gpu.ns, "s2");
          return std::any_of(events.begin(), events.end(),
                             [](const std::string& e) { return absl::StartsWith(e, "FailedScheduling: "); });
        },
        absl::Seconds(60)));
    gpu.DeletePod("s0");
    gpu.DeletePod("s1");
    gpu.DeletePod("s2");
  }
}

TEST_CASE("the GPU driver: a fabric GPU binds after the node plugin attached it", "[e2e][node][gpu][binding]") {
  auto admin = MakeClient(AdminConfig());
  LabelTheNode(*admin, Node());
  const std::string pool = UniqueName("fabric");
  GpuDriver gpu({"--num-devices=0", "--fabric-pool=" + pool, "--fabric-num-devices=2", "--fabric-attach",
                 "--fabric-attach-delay=1s"});
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateClaim("gpu", gpu.ClaimSpec(device_class));
  const json pod = gpu.RunPod("app", {{"gpu", "gpu"}}, false);
  const json claim = gpu.Claim("gpu");
  INFO("the claim: " << claim.dump(1));
  CHECK(claim["status"]["allocation"]["devices"]["results"][0]["pool"] == pool);
  const std::string device = claim["status"]["allocation"]["devices"]["results"][0]["device"].get<std::string>();
  bool prepared = false;
  for (const json& entry : claim["status"]["devices"]) {
    for (const json& condition : entry.value("conditions", json::array())) {
      prepared = prepared || (condition["type"] == gpu.driver.name() + "/is-prepared" && condition["status"] == "True");
    }
  }
  CHECK(prepared);
  const std::string index = device.substr(device.rfind('-') + 1);
  CHECK(Has(gpu.ContainerEnv(pod), absl::StrCat("GPU_DEVICE_FABRIC_GPU_", index, "=fabric-gpu-", index)));
  CHECK_THAT(gpu.driver.Log(), Catch::Contains("Attaching fabric GPU"));
  gpu.DeletePod("app");
}

// Deletes the slices of a fabric pool its controller left: the pool stays
// when the controller stops, as it should for the next controller; not for
// the next test.
void DeletePool(Client& admin, const std::string& driver, const std::string& pool) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.driver=", driver, ",spec.pool.name=", pool);
  absl::StatusOr<k8s::ListResult> slices = admin.List(k8s::kResourceSlices, "", options);
  REQUIRE(slices.ok());
  for (const json& slice : slices->items) {
    REQUIRE(admin.Delete(k8s::kResourceSlices, "", slice["metadata"]["name"].get<std::string>()).ok());
  }
}

TEST_CASE(
    "the GPU driver: the fabric controller attaches a fabric GPU for the node the scheduler picked and no node "
    "plugin watches claims (the central reconciler)",
    "[e2e][node][gpu][binding]") {
  auto admin = MakeClient(AdminConfig());
  LabelTheNode(*admin, Node());
  const std::string pool = UniqueName("fabric");
  // The node plugin knows the fabric GPUs, to prepare them, but neither
  // publishes nor attaches them: the controller does both.
  GpuDriver gpu({"--num-devices=0"});
  testing::TempDir dir;
  absl::StatusOr<testing::ChildProcess> controller =
      testing::ChildProcess::Spawn({DRA_GPU_DRIVER, "--fabric-controller", "--driver-name=" + gpu.driver.name(),
                                    "--fabric-pool=" + pool, "--fabric-num-devices=2", "--fabric-attach",
                                    "--fabric-attach-delay=1s", "--kubeconfig=" + DriverKubeconfig(), "-v=2"},
                                   dir.Join("controller.log"));
  REQUIRE(controller.ok());
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateClaim("gpu", gpu.ClaimSpec(device_class));
  gpu.RunPod("app", {{"gpu", "gpu"}}, false);
  const std::string log = testing::ReadFile(dir.Join("controller.log"));
  INFO("the controller's log:\n" << log);
  const json claim = gpu.Claim("gpu");
  INFO("the claim: " << claim.dump(1));
  CHECK(claim["status"]["allocation"]["devices"]["results"][0]["pool"] == pool);
  CHECK_THAT(log, Catch::Contains("Attaching fabric GPU"));
  CHECK_THAT(log, Catch::Contains("Device ready for binding"));
  CHECK_THAT(gpu.driver.Log(), !Catch::Contains("BindingConditionReconciler"));
  gpu.DeletePod("app");
  CHECK(controller->Stop() == "exited with status 0");
  DeletePool(*admin, gpu.driver.name(), pool);
}

TEST_CASE(
    "dra-example-controller from the GPU example's binary (dra-example-driver's claim controller): with "
    "--enable-plugin=BindingConditions it sets the binding conditions of the driver's devices and the pod binds",
    "[e2e][node][gpu][binding]") {
  auto admin = MakeClient(AdminConfig());
  LabelTheNode(*admin, Node());
  const std::string pool = UniqueName("fabric");
  // Fabric GPUs carry binding conditions; nothing attaches them (no
  // --fabric-attach anywhere), so only the claim controller sets them.
  GpuDriver gpu({"--num-devices=0"});
  testing::TempDir dir;
  absl::StatusOr<testing::ChildProcess> publisher = testing::ChildProcess::Spawn(
      {DRA_GPU_DRIVER, "--fabric-controller", "--driver-name=" + gpu.driver.name(), "--fabric-pool=" + pool,
       "--fabric-num-devices=1", "--kubeconfig=" + DriverKubeconfig()},
      dir.Join("publisher.log"));
  REQUIRE(publisher.ok());
  // The image links the chart's command to the driver's binary.
  const std::string program = dir.Join("dra-example-controller");
  std::filesystem::create_symlink(DRA_GPU_DRIVER, program);
  absl::StatusOr<testing::ProcessResult> refused = testing::RunProcess({program, "--enable-plugin=Foo"});
  REQUIRE(refused.ok());
  CHECK(refused->exit_code == 2);
  CHECK_THAT(refused->err, Catch::Contains("unknown plugin \"Foo\" (available: BindingConditions)"));
  absl::StatusOr<testing::ChildProcess> controller =
      testing::ChildProcess::Spawn({program, "--driver-name=" + gpu.driver.name(), "--enable-plugin=BindingConditions",
                                    "--kubeconfig=" + DriverKubeconfig(), "-v=2"},
                                   dir.Join("controller.log"));
  REQUIRE(controller.ok());

  gpu.CreateClaim("gpu", gpu.ClaimSpec(gpu.DeviceClass()));
  gpu.RunPod("app", {{"gpu", "gpu"}}, false);
  INFO("the controller's log:\n" << testing::ReadFile(dir.Join("controller.log")));
  const json claim = gpu.Claim("gpu");
  INFO("the claim: " << claim.dump(1));
  CHECK(claim["status"]["allocation"]["devices"]["results"][0]["pool"] == pool);
  REQUIRE(claim["status"]["devices"].size() == 1);
  const json& condition = claim["status"]["devices"][0]["conditions"][0];
  CHECK(condition["type"] == gpu.driver.name() + "/is-prepared");
  CHECK(condition["status"] == "True");
  // The reference controller's words.
  CHECK(condition["reason"] == "Ready");
  CHECK(condition["message"] == "Device is ready");
  gpu.DeletePod("app");
  CHECK(controller->Stop() == "exited with status 0");
  CHECK(publisher->Stop() == "exited with status 0");
  DeletePool(*admin, gpu.driver.name(), pool);
}

TEST_CASE("the GPU driver: a failed fabric attach makes the scheduler allocate again, and the pod runs",
          "[e2e][node][gpu][binding]") {
  auto admin = MakeClient(AdminConfig());
  LabelTheNode(*admin, Node());
  const std::string pool = UniqueName("fabric");
  // 0.5: the first attach fails, the second succeeds.
  GpuDriver gpu({"--num-devices=0", "--fabric-pool=" + pool, "--fabric-num-devices=2", "--fabric-attach",
                 "--fabric-attach-delay=0s", "--fabric-failure-rate=0.5"});
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateClaim("gpu", gpu.ClaimSpec(device_class));
  gpu.RunPod("app", {{"gpu", "gpu"}}, false);
  const std::string log = gpu.driver.Log();
  INFO("the driver's log:\n" << log);
  CHECK_THAT(log, Catch::Contains("Device failed to prepare for binding"));
  CHECK_THAT(log, Catch::Contains("simulated fabric failure attaching"));
  CHECK_THAT(log, Catch::Contains("Device ready for binding"));
  const json claim = gpu.Claim("gpu");
  INFO("the claim: " << claim.dump(1));
  CHECK(claim["status"]["allocation"]["devices"]["results"][0]["pool"] == pool);
  gpu.DeletePod("app");
}

TEST_CASE(
    "the GPU driver: a GPU's host memory overhead is in the pod's status, and the scheduler counts it "
    "against the node",
    "[e2e][node][gpu]") {
  GpuDriver gpu({"--num-devices=2", "--host-memory-overhead=8Gi"});
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateClaim("gpu", gpu.ClaimSpec(device_class));
  const json pod = gpu.RunPod("app", {{"gpu", "gpu"}}, false);
  const json& statuses = pod["status"]["nodeAllocatableResourceClaimStatuses"];
  INFO("the pod: " << pod.dump(1));
  REQUIRE(statuses.size() == 1);
  CHECK(statuses[0]["resourceClaimName"] == "gpu");
  CHECK(statuses[0]["containers"] == json::array({"app"}));
  CHECK(statuses[0]["overhead"] == json::array({{{"name", "memory"}, {"perPod", "8Gi"}}}));
  gpu.DeletePod("app");

  // A GPU whose overhead is more than the node's allocatable memory: its
  // pod does not fit.
  absl::StatusOr<json> node = gpu.admin->Get(k8s::kNodes, "", gpu.node.name);
  REQUIRE(node.ok());
  absl::StatusOr<k8s::Quantity> allocatable =
      k8s::Quantity::Parse((*node)["status"]["allocatable"]["memory"].get<std::string>());
  REQUIRE(allocatable.ok());
  GpuDriver costly(
      {"--num-devices=1", "--host-memory-overhead=" + std::to_string(allocatable->Value() + (int64_t{1} << 30))});
  costly.CreateClaim("gpu", costly.ClaimSpec(costly.DeviceClass()));
  REQUIRE(costly.admin->Create(kPods, costly.ns, PodWithClaims(costly.ns, "costly", {{"gpu", "gpu"}}, false)).ok());
  json last;
  const bool unschedulable = WaitForPod(
      *costly.admin, costly.ns, "costly",
      [](const json& p) {
        for (const json& condition : p["status"].value("conditions", json::array())) {
          if (condition["type"] == "PodScheduled" && condition["status"] == "False" &&
              absl::StrContains(condition.value("message", ""), "Insufficient memory")) {
            return true;
          }
        }
        return false;
      },
      &last);
  INFO("the pod: " << last.dump(1));
  CHECK(unschedulable);
  REQUIRE(costly.admin->Delete(kPods, costly.ns, "costly").ok());
}

TEST_CASE(
    "the GPU driver: a GPU flipped unhealthy is tainted and reported in the pod's status, and a fatal one "
    "gets the pod evicted",
    "[e2e][node][gpu]") {
  testing::TempDir dir;
  const std::string health_file = dir.Join("health");
  GpuDriver gpu({"--num-devices=1", "--mock-health-file=" + health_file});
  const std::string device_class = gpu.DeviceClass();
  gpu.CreateClaim("gpu", gpu.ClaimSpec(device_class));
  json pod = gpu.RunPod("app", {{"gpu", "gpu"}}, false);
  const json claim = gpu.Claim("gpu");
  const std::string cdi_id = gpu.driver.CdiId(claim["metadata"]["uid"].get<std::string>(), "gpu-0");

  // The GPU's health as the kubelet reports it in the pod, "" until then.
  auto reported = [&](const json& p) -> std::string {
    for (const json& container : p["status"].value("containerStatuses", json::array())) {
      for (const json& resource : container.value("allocatedResourcesStatus", json::array())) {
        for (const json& health : resource.value("resources", json::array())) {
          if (health.value("resourceID", "") == cdi_id) return health.value("health", "");
        }
      }
    }
    return "";
  };
  // The taint effects of gpu-0 in the node's slices.
  auto taints = [&] {
    std::vector<std::string> effects;
    k8s::ListOptions options;
    options.field_selector = absl::StrCat("spec.nodeName=", gpu.node.name, ",spec.driver=", gpu.driver.name());
    absl::StatusOr<k8s::ListResult> slices = gpu.admin->List(k8s::kResourceSlices, "", options);
    if (!slices.ok()) return effects;
    for (const json& slice : slices->items) {
      for (const json& device : slice["spec"].value("devices", json::array())) {
        for (const json& taint : device.value("taints", json::array())) effects.push_back(taint["effect"]);
      }
    }
    return effects;
  };
  CHECK(WaitForPod(
      *gpu.admin, gpu.ns, "app", [&](const json& p) { return reported(p) == "Healthy"; }, &pod, absl::Seconds(60)));
  CHECK(taints().empty());

  std::ofstream(health_file, std::ios::app) << "0 unhealthy\n";
  CHECK(Eventually([&] { return taints() == std::vector<std::string>{"NoSchedule"}; }, absl::Seconds(30)));
  const bool unhealthy = WaitForPod(
      *gpu.admin, gpu.ns, "app", [&](const json& p) { return reported(p) == "Unhealthy"; }, &pod, absl::Seconds(60));
  INFO("the pod's status as last seen: " << pod["status"].dump(1));
  CHECK(unhealthy);
  CHECK(PodRunning(pod));  // NoSchedule keeps running pods

  std::ofstream(health_file, std::ios::app) << "0 fatal\n";
  CHECK(Eventually([&] { return taints() == std::vector<std::string>{"NoExecute"}; }, absl::Seconds(30)));
  // The device-taint-eviction controller deletes the pod that uses the GPU.
  const bool evicted = Eventually(
      [&] {
        absl::StatusOr<json> current = gpu.admin->Get(kPods, gpu.ns, "app");
        return absl::IsNotFound(current.status()) ||
               (current.ok() && (*current)["metadata"].contains("deletionTimestamp"));
      },
      absl::Seconds(90));
  INFO("the driver's log:\n" << gpu.driver.Log());
  CHECK(evicted);
  CHECK_THAT(gpu.driver.Log(), Catch::Contains("GPU health changed"));
}

}  // namespace
}  // namespace dra::e2e
