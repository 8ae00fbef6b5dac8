// The example drivers as operators run them, on the suite's real node:
// containerd 2.x or CRI-O with runc and a CNI bridge (cluster.sh node-start
// with DRA_E2E_RUNTIME=containerd or crio), the drivers' own images
// (build-images.sh) imported into it, installed with helm or the plain
// manifests. Their DaemonSet pods register through the hostPath registry and
// publish with their pods' projected service account tokens; the runtime applies their
// CDI specs to real containers, which print what they got (read through
// the API server, as `kubectl logs` does).
#include <signal.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/strings/str_replace.h"
#include "cpuset.h"
#include "e2e/private_cluster.h"
#include "e2e/runtime_node.h"

namespace dra::e2e {
namespace {

TEST_CASE(
    "helm install of the GPU example on the real node: its DaemonSet pod runs from the image and registers "
    "through the hostPath registry and publishes with its own token and passes its liveness probe",
    "[e2e][runtime][gpu]") {
  GpuInstall gpu;
  const std::string pod_name = gpu.driver_pod_name();
  const std::string pod_uid = gpu.driver_pod["metadata"]["uid"];
  // The registration socket carries the pod's UID (rolling updates).
  CHECK(std::filesystem::exists(absl::StrCat(gpu.node.plugins_registry, "/", kGpuDriver, "-", pod_uid, "-reg.sock")));
  std::string driver_log;
  CHECK(Eventually(
      [&] {
        driver_log = gpu.driver_log();
        return absl::StrContains(driver_log, "\"Registered with the kubelet\"");
      },
      kPodStart));
  INFO("the driver's log:\n" << driver_log);
  // The liveness probe (/healthz on the pod's IP) passed.
  CHECK(Eventually([&] { return LivenessProbePassed(gpu.node, pod_name); }, kPodStart));
  CHECK(gpu.driver_pod["status"]["containerStatuses"][0]["restartCount"] == 0);
}

// examples/gpu/deploy/<file>'s objects as they would be applied on a node
// whose kubelet root dir and CDI dir are the suite node's: the host paths
// moved there, and the driver told so by the variables the chart sets for
// such a node.
std::vector<json> PlainManifest(const std::string& file, const NodeEnv& node) {
  const std::string path = absl::StrCat(DRA_SOURCE_DIR, "/examples/gpu/deploy/", file);
  const std::string text = absl::StrReplaceAll(
      testing::ReadFile(path), {{"/var/lib/kubelet", node.dir + "/kubelet"}, {"/var/run/cdi", node.cdi_dir}});
  std::vector<json> objects = ManifestObjects(text, path);
  for (json& object : objects) {
    if (object["kind"] != "DaemonSet") continue;
    json& env = object["spec"]["template"]["spec"]["containers"][0]["env"];
    env.push_back({{"name", "KUBELET_REGISTRAR_DIRECTORY_PATH"}, {"value", node.plugins_registry}});
    env.push_back({{"name", "KUBELET_PLUGINS_DIRECTORY_PATH"}, {"value", node.plugins_dir}});
    env.push_back({{"name", "CDI_ROOT"}, {"value", node.cdi_dir}});
  }
  return objects;
}

// Objects applied for a test, deleted after it (last first); a DaemonSet's
// pods go with it (the garbage collector), waited for. A namespace stays:
// the next test installs the chart in it, which a terminating one refuses.
struct Applied {
  Client& admin;
  std::vector<json> objects;
  void Apply(json object) { objects.push_back(ApplyObject(admin, std::move(object))); }
  ~Applied() {
    for (auto it = objects.rbegin(); it != objects.rend(); ++it) {
      if ((*it)["kind"] == "Namespace") continue;
      const k8s::ResourceRef& ref = ResourceOfKind((*it)["kind"]);
      (void)admin.Delete(ref, ref.namespaced ? (*it)["metadata"].value("namespace", "") : "",
                         (*it)["metadata"]["name"].get<std::string>());
    }
    Eventually([&] { return DriverPods(admin, kGpu).empty(); }, kPodStart);
  }
};

TEST_CASE(
    "the GPU example's plain manifests on the real node: the DaemonSet pod from the image registers and "
    "publishes and a workload gets a GPU",
    "[e2e][runtime][gpu]") {
  const NodeEnv node = RealNode();
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  ImportDriverImage(kGpu, kImageTag);  // the image the manifest names
  Applied applied{*admin, {}};
  for (const char* file :
       {"namespace.yaml", "rbac.yaml", "admission-policy.yaml", "deviceclass.yaml", "daemonset.yaml"}) {
    for (json& object : PlainManifest(file, node)) applied.Apply(std::move(object));
  }
  const json pod = WaitForOneDriverPod(*admin, kGpu);
  CHECK(pod["spec"]["containers"][0]["image"] == kGpu.image() + ":" + kImageTag);
  std::string driver_log;
  CHECK(Eventually(
      [&] {
        driver_log = PodLog(kGpu.ns, pod["metadata"]["name"], "plugin");
        return absl::StrContains(driver_log, "\"Registered with the kubelet\"");
      },
      kPodStart));
  INFO("the driver's log:\n" << driver_log);
  REQUIRE(Eventually([&] { return PublishedDevices(*admin, node, kGpuDriver) == 8; }, kPodStart));

  const Workloads workloads(*admin, "gpu-plain");
  ApplyDemo(*admin, "single-gpu.yaml", workloads.ns);
  const std::string log = WaitForLog(workloads.ns, "single-gpu", "app");
  INFO("single-gpu:\n" << log);
  REQUIRE(GpuIndexes(log).size() == 1);
  CHECK(HasDeviceNode(log, GpuIndexes(log)[0]));
  CHECK(DeleteWorkloads(*admin, workloads.ns));
}

TEST_CASE(
    "GPU workloads in real containers: one GPU and two GPUs and a claim shared by two containers and by two "
    "pods and time-slicing - each container sees its GPU_DEVICE variables and device nodes and metadata",
    "[e2e][runtime][gpu]") {
  GpuInstall gpu;
  Client& admin = *gpu.admin;
  const Workloads workloads(admin, "gpu-workloads");
  const std::string& ns = workloads.ns;
  const size_t cdi_files = CdiSpecFiles(gpu.node);

  // The reference demo specs, unchanged but for the image and command.
  ApplyDemo(admin, "single-gpu.yaml", ns);
  ApplyDemo(admin, "time-slicing.yaml", ns);
  // Two GPUs in one container; one claim for two pods.
  json two = {{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaimTemplate"},
              {"metadata", {{"namespace", ns}, {"name", "two-gpus"}}},
              {"spec",
               {{"spec",
                 {{"devices",
                   {{"requests", json::array({{{"name", "gpus"},
                                               {"exactly",
                                                {{"deviceClassName", "gpu.example.com"},
                                                 {"allocationMode", "ExactCount"},
                                                 {"count", 2}}}}})}}}}}}}};
  ApplyObject(admin, two, ns);
  ApplyObject(admin,
              Pod(ns, "two-gpus", {WorkloadContainer("app", {"gpus"})},
                  json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", "two-gpus"}}})),
              ns);
  CreateClaim(admin, ns, "shared", "gpu.example.com");
  for (const char* name : {"shared-a", "shared-b"}) ApplyObject(admin, ClaimPod(ns, name, "shared"), ns);

  const std::string one = WaitForLog(ns, "single-gpu", "app");
  INFO("single-gpu:\n" << one);
  REQUIRE(GpuIndexes(one).size() == 1);
  const std::string index = GpuIndexes(one)[0];
  CHECK(HasDeviceNode(one, index));
  // On a cgroup v1 node the container sees its device cgroup: its GPU's rule and no other.
  if (std::filesystem::exists("/sys/fs/cgroup/devices/devices.list")) {
    const std::vector<std::string> rules = DeviceCgroupRules(one);
    INFO("its device cgroup:\n" << absl::StrJoin(rules, "\n"));
    REQUIRE_FALSE(rules.empty());
    CHECK(DeviceCgroupAllowsOnly(rules, index));
  }
  CHECK(LinesWith(one, "KUBERNETES_NODE_NAME=" + gpu.node.name).size() == 1);
  CHECK(LinesWith(one, "DRA_RESOURCE_DRIVER_NAME=gpu.example.com").size() == 1);
  CHECK(LinesWith(one, "GPU_DEVICE_" + index + "=gpu-" + index).size() == 1);
  CHECK(LinesWith(one, "GPU_DEVICE_GPU_" + index + "_RESOURCE_CLAIM=").size() == 1);
  CHECK(LinesWith(one, "DRA_ADMIN_ACCESS=false").size() == 1);
  // The device metadata file (KEP-5304) is mounted and names the device.
  CHECK_THAT(one, Catch::Contains("\"gpu-" + index + "\""));
  CHECK_THAT(one, Catch::Contains("metadata.resource.k8s.io/v1beta1"));

  const std::string pair = WaitForLog(ns, "two-gpus", "app");
  INFO("two-gpus:\n" << pair);
  const std::vector<std::string> both = GpuIndexes(pair);
  REQUIRE(both.size() == 2);
  for (const std::string& i : both) CHECK(HasDeviceNode(pair, i));

  // Two containers of a pod share one time-sliced GPU.
  const std::string first = WaitForLog(ns, "time-sliced", "first");
  const std::string second = WaitForLog(ns, "time-sliced", "second");
  INFO("time-sliced:\n" << first << "\n" << second);
  REQUIRE(GpuIndexes(first).size() == 1);
  CHECK(GpuIndexes(first) == GpuIndexes(second));
  const std::string sliced = GpuIndexes(first)[0];
  CHECK(LinesWith(first, "GPU_DEVICE_" + sliced + "_SHARING_STRATEGY=TimeSlicing").size() == 1);
  CHECK(LinesWith(first, "GPU_DEVICE_" + sliced + "_TIMESLICE_INTERVAL=Long").size() == 1);
  CHECK(HasDeviceNode(second, sliced));

  // Two pods, one claim, one GPU.
  const std::string a = WaitForLog(ns, "shared-a", "app");
  const std::string b = WaitForLog(ns, "shared-b", "app");
  INFO("shared-a:\n" << a << "\nshared-b:\n" << b);
  REQUIRE(GpuIndexes(a).size() == 1);
  CHECK(GpuIndexes(a) == GpuIndexes(b));
  CHECK(HasDeviceNode(b, GpuIndexes(a)[0]));

  // Every pod's GPU differs from the others' unless it shares a claim.
  std::vector<std::string> all = {index, sliced, GpuIndexes(a)[0]};
  all.insert(all.end(), both.begin(), both.end());
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());

  // Unprepared once the pods are gone: no claim's CDI spec is left.
  CHECK(DeleteWorkloads(admin, ns));
  CHECK(Eventually([&] { return CdiSpecFiles(gpu.node) == cdi_files; }, kPodStart));
}

TEST_CASE(
    "a GPU partition in a real container: space-partitioned by the workload's config (the reference's "
    "partition demo)",
    "[e2e][runtime][gpu]") {
  GpuInstall gpu({"--gpu-partitions=2"}, 8 * 3);
  const Workloads workloads(*gpu.admin, "gpu-partition");
  ApplyDemo(*gpu.admin, "partition.yaml", workloads.ns);
  const std::string log = WaitForLog(workloads.ns, "gpu-partition", "app");
  INFO("gpu-partition:\n" << log);
  // Partition p of GPU i is the device gpu-<i>-partition-<p>:
  // GPU_DEVICE_<i>_PARTITION_<p>=gpu-<i>-partition-<p>.
  std::vector<std::string> partitions;
  for (const std::string& line : LinesWith(log, "GPU_DEVICE_")) {
    const std::string value = line.substr(line.find('=') + 1);
    if (absl::StartsWith(value, "gpu-") && absl::StrContains(value, "-partition-")) partitions.push_back(line);
  }
  REQUIRE(partitions.size() == 1);
  const std::string var = partitions[0].substr(0, partitions[0].find('='));
  CHECK(LinesWith(log, var + "_SHARING_STRATEGY=SpacePartitioning").size() == 1);
  CHECK(LinesWith(log, var + "_PARTITION_COUNT=2").size() == 1);
  const std::string device = partitions[0].substr(partitions[0].find('=') + 1);
  CHECK(HasDeviceNode(log, device.substr(4, device.find('-', 4) - 4)));
}

TEST_CASE(
    "a shared GPU in real containers: half of a GPU's memory for each of two pods (the reference's "
    "shared-gpu demo)",
    "[e2e][runtime][gpu]") {
  GpuInstall gpu({"--gpu-allow-multiple-allocations"});
  const Workloads workloads(*gpu.admin, "gpu-shared");
  ApplyDemo(*gpu.admin, "shared-gpu.yaml", workloads.ns);
  for (const char* pod : {"shared-gpu-a", "shared-gpu-b"}) {
    const std::string log = WaitForLog(workloads.ns, pod, "app");
    INFO(pod << ":\n" << log);
    REQUIRE(GpuIndexes(log).size() == 1);
    const std::string index = GpuIndexes(log)[0];
    CHECK(HasDeviceNode(log, index));
    CHECK(LinesWith(log, "GPU_DEVICE_" + index + "_MEMORY=").size() == 1);
  }
}

// A container that prints its DRA environment once, then where the kernel
// lets it run, a line a second, until it is stopped.
json CpusetContainer(const std::string& name, const std::vector<std::string>& claims) {
  json container = WorkloadContainer(name, claims);
  container["command"] = {"sh", "-c",
                          "env | grep -E '^DRA_' | sort; echo '--- end ---'; trap 'exit 0' TERM; "
                          "while true; do echo \"allowed $(grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status | "
                          "tr -d '\\t' | tr '\\n' ' ')\"; sleep 1 & wait; done"};
  return container;
}

// The CPUs and memory nodes the container's latest line says it may use:
// "Cpus_allowed_list:0 Mems_allowed_list:0 ".
std::string Allowed(const std::string& ns, const std::string& pod) {
  const std::vector<std::string> lines = LinesWith(PodLog(ns, pod, "app"), "allowed ");
  return lines.empty() ? "" : std::string(absl::StripAsciiWhitespace(lines.back().substr(8)));
}

// Waits until the container's latest line says `want`.
void RequireAllowed(const std::string& ns, const std::string& pod, const std::string& want, const Install& driver) {
  std::string now;
  const bool reached = Eventually(
      [&] {
        now = Allowed(ns, pod);
        return now == want;
      },
      kPodStart);
  INFO(pod << " may use \"" << now << "\", not \"" << want << "\"\nthe driver's log:\n" << driver.driver_log());
  REQUIRE(reached);
}

TEST_CASE(
    "helm install of the CPU example on the real node: through the runtime's NRI the claim's container runs on "
    "exactly its CPU and NUMA memory and every other container off it - after the driver and the runtime restart "
    "too - and they get the CPU back when the claim goes",
    "[e2e][runtime][cpu]") {
  Install cpu(kCpu, {});  // CPU 0 reserved, --memory-devices
  Client& admin = *cpu.admin;
  INFO("the driver's log:\n" << cpu.driver_log());
  REQUIRE(Eventually([&] { return PublishedDevices(admin, cpu.node, kCpuDriver) > 0; }, kPodStart));
  REQUIRE(Eventually([&] { return absl::StrContains(cpu.driver_log(), "Synchronized with the runtime's NRI"); },
                     kPodStart));
  std::vector<int> online;
  for (int i = 0; i < static_cast<int>(std::thread::hardware_concurrency()); ++i) online.push_back(i);
  const std::string all =
      absl::StrCat("Cpus_allowed_list:", online.size() == 1 ? "0" : absl::StrCat("0-", online.size() - 1));
  const Workloads workloads(admin, "cpu-workloads");
  const std::string& ns = workloads.ns;
  ApplyObject(admin, Pod(ns, "shared", {CpusetContainer("app", {})}, json::array()), ns);
  RequireAllowed(ns, "shared", all + " Mems_allowed_list:0", cpu);

  const json one_cpu = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaimTemplate"},
      {"metadata", {{"namespace", ns}, {"name", "one-cpu"}}},
      {"spec",
       {{"spec",
         {{"devices",
           {{"requests",
             json::array({{{"name", "cpus"},
                           {"exactly",
                            {{"deviceClassName", "cpu.example.com"},
                             {"capacity", {{"requests", {{"cpu.example.com/cpu", "1"}}}}}}}},
                          {{"name", "memory"},
                           {"exactly",
                            {{"deviceClassName", "memory.cpu.example.com"},
                             {"capacity", {{"requests", {{"cpu.example.com/memory", "64Mi"}}}}}}}}})}}}}}}}};
  ApplyObject(admin, one_cpu, ns);
  ApplyObject(admin,
              Pod(ns, "pinned", {CpusetContainer("app", {"cpus"})},
                  json::array({{{"name", "cpus"}, {"resourceClaimTemplateName", "one-cpu"}}})),
              ns);
  const std::string log = WaitForLog(ns, "pinned", "app");
  INFO("pinned:\n" << log);
  const std::vector<std::string> cpuset = LinesWith(log, "DRA_CPUSET_");
  const std::vector<std::string> mems = LinesWith(log, "DRA_MEMS_");
  REQUIRE(cpuset.size() == 1);
  REQUIRE(mems.size() == 1);
  // One CPU: a single number, not the reserved CPU 0.
  const std::string claimed = cpuset[0].substr(cpuset[0].find('=') + 1);
  const std::string numa = mems[0].substr(mems[0].find('=') + 1);
  REQUIRE(claimed.find_first_not_of("0123456789") == std::string::npos);
  CHECK(claimed != "0");
  const std::string pinned = absl::StrCat("Cpus_allowed_list:", claimed, " Mems_allowed_list:", numa);
  RequireAllowed(ns, "pinned", pinned, cpu);
  // The shared container moved off the claim's CPU before the claim's container was created.
  std::vector<int> rest = online;
  std::erase(rest, std::stoi(claimed));
  const std::string shared = absl::StrCat("Cpus_allowed_list:", cpu::FormatCpuList(rest), " Mems_allowed_list:0");
  RequireAllowed(ns, "shared", shared, cpu);

  // A new driver pod takes over: its Synchronize finds both containers where they belong.
  const std::string old_driver = cpu.driver_pod_name();
  REQUIRE(admin.Delete(kPods, kCpu.ns, old_driver).ok());
  REQUIRE(Eventually(
      [&] {
        cpu.driver_pod = WaitForOneDriverPod(admin, kCpu);
        return cpu.driver_pod_name() != old_driver &&
               absl::StrContains(cpu.driver_log(), "Synchronized with the runtime's NRI");
      },
      kPodStart));
  CHECK(absl::StrContains(cpu.driver_log(), "Restored prepared claim"));
  RequireAllowed(ns, "pinned", pinned, cpu);
  RequireAllowed(ns, "shared", shared, cpu);

  // The runtime restarted: the driver registers again and pins a new container.
  RequireSuccess(Run({DRA_E2E_CLUSTER_SH, "runtime-upgrade", ClusterDir()}), "cluster.sh runtime-upgrade");
  std::string driver_log;
  const bool synchronized_again = Eventually(
      [&] {
        driver_log = cpu.driver_log();
        return absl::StrContains(driver_log, "Not connected to the runtime's NRI") &&
               absl::StrContains(driver_log.substr(driver_log.find("Not connected to the runtime's NRI")),
                                 "Synchronized with the runtime's NRI");
      },
      kPodStart);
  INFO(cpu.driver_pod_name() << " logged:\n" << driver_log);
  REQUIRE(synchronized_again);
  ApplyObject(admin, Pod(ns, "shared-after", {CpusetContainer("app", {})}, json::array()), ns);
  RequireAllowed(ns, "shared-after", shared, cpu);
  RequireAllowed(ns, "pinned", pinned, cpu);

  // The claim goes with its pod: the driver gives its CPU back to the others.
  REQUIRE(admin.Delete(kPods, ns, "pinned").ok());
  RequireAllowed(ns, "shared", all + " Mems_allowed_list:0", cpu);
  RequireAllowed(ns, "shared-after", all + " Mems_allowed_list:0", cpu);
  CHECK(absl::StrContains(cpu.driver_log(), "Moved containers to their cpusets"));
  CHECK(DeleteWorkloads(admin, ns));
}

TEST_CASE(
    "helm upgrade of the GPU example: a new image tag rolls the driver (maxSurge 1) under a running workload "
    "which the new pod unprepares - after helm uninstall the kubelet removes the driver's slices",
    "[e2e][runtime][gpu]") {
  GpuInstall gpu;
  Client& admin = *gpu.admin;
  const Workloads workloads(admin, "gpu-upgrade");
  const std::string& ns = workloads.ns;
  const std::string uid = RunClaimPod(admin, ns, "gpu", "app").uid;
  const json before = RunningPod(admin, ns, "app");
  const std::string old_pod = gpu.driver_pod_name();
  CHECK(Logged(gpu.driver_log(), "Prepared claim", uid) == 1);

  ImportDriverImage(kGpu, "0.1.1");
  HelmInstall(kGpu, gpu.node, "0.1.1", gpu.sets);
  json rolled;
  const bool rolled_over = Eventually(
      [&] {
        std::map<std::string, json> pods = DriverPods(admin, kGpu);
        if (pods.size() != 1 || pods.contains(old_pod) || !ContainersReady(pods.begin()->second)) return false;
        rolled = pods.begin()->second;
        return true;
      },
      kPodStart);
  INFO("pods of the release: " << json(DriverPods(admin, kGpu)).dump(1));
  REQUIRE(rolled_over);
  CHECK(rolled["spec"]["containers"][0]["image"] == kGpu.image() + ":0.1.1");
  const std::string new_pod = rolled["metadata"]["name"];

  // The workload ran on through the rollout, in the same container.
  const json after = RunningPod(admin, ns, "app");
  CHECK(after["status"]["containerStatuses"][0]["containerID"] ==
        before["status"]["containerStatuses"][0]["containerID"]);
  CHECK(after["status"]["containerStatuses"][0]["restartCount"] == 0);

  // The new pod unprepares what the old one prepared (one checkpoint).
  CHECK(DeleteWorkloads(admin, ns));
  std::string new_log;
  CHECK(Eventually(
      [&] {
        new_log = PodLog(kGpu.ns, new_pod, "plugin");
        return Logged(new_log, "Unprepared claim", uid) == 1;
      },
      kPodStart));
  INFO("the new driver pod's log:\n" << new_log);
  CHECK(Logged(new_log, "Prepared claim", uid) == 0);

  // Gone with its pod: the kubelet deletes the slices of a driver that left
  // once its grace period is over.
  REQUIRE(HelmUninstall(kGpu).exit_code == 0);
  CHECK(Eventually([&] { return PublishedDevices(admin, gpu.node, kGpuDriver) == 0; }, kPodStart));
}

TEST_CASE(
    "the node's runtime as after a reboot: the runtime and the kubelet restarted with the CDI dir emptied - "
    "the claim's and the driver's specs come back and a new pod with the same claim runs",
    "[e2e][runtime][gpu]") {
  GpuInstall gpu;
  Client& admin = *gpu.admin;
  const Workloads workloads(admin, "gpu-restart");
  const std::string& ns = workloads.ns;
  const ClaimWorkload before = RunClaimPod(admin, ns, "gpu", "before");
  const std::vector<std::string> gpus = GpuIndexes(before.log);
  const std::string& uid = before.uid;
  // The claim's spec and the driver's node-wide one (device "common").
  const std::string claim_spec = GpuClaimSpecFile(gpu.node, uid);
  const std::string common_spec = gpu.node.cdi_dir + "/gpu.example.com-gpu.json";
  REQUIRE(std::filesystem::exists(claim_spec));
  REQUIRE(std::filesystem::exists(common_spec));

  RequireSuccess(Run({DRA_E2E_CLUSTER_SH, "runtime-restart", ClusterDir()}), "cluster.sh runtime-restart");
  ApplyObject(admin, ClaimPod(ns, "after", "gpu"), ns);
  const std::string log = WaitForLog(ns, "after", "app");
  INFO("after:\n" << log << "\nthe driver's log:\n" << gpu.driver_log());
  CHECK(GpuIndexes(log) == gpus);
  CHECK(std::filesystem::exists(claim_spec));
  CHECK(std::filesystem::exists(common_spec));
  CHECK(Logged(gpu.driver_log(), "Prepared claim", uid) == 1);  // restored by the SDK, not prepared again
  CHECK(DeleteWorkloads(admin, ns));
}

TEST_CASE(
    "the GPU driver killed (SIGKILL) in its container: the kubelet restarts it and no claim is lost or "
    "prepared twice",
    "[e2e][runtime][gpu]") {
  GpuInstall gpu;
  Client& admin = *gpu.admin;
  const Workloads workloads(admin, "gpu-kill");
  const std::string& ns = workloads.ns;
  const std::string first = RunClaimPod(admin, ns, "first", "first").uid;

  // The driver is PID 1 of its container: its host PID from the runtime.
  const std::string container_id = RuntimeContainerId(gpu.driver_pod["status"]["containerStatuses"][0]);
  testing::ProcessResult inspect = Run({DRA_E2E_CLUSTER_SH, "crictl", ClusterDir(), "inspect", container_id});
  RequireSuccess(inspect, "crictl inspect");
  const int pid = json::parse(inspect.out)["info"]["pid"].get<int>();
  REQUIRE(pid > 1);
  REQUIRE(kill(pid, SIGKILL) == 0);

  json restarted;
  const bool back = Eventually(
      [&] {
        absl::StatusOr<json> pod = admin.Get(kPods, kGpu.ns, gpu.driver_pod_name());
        if (!pod.ok() || !ContainersReady(*pod)) return false;
        restarted = *pod;
        return restarted["status"]["containerStatuses"][0]["restartCount"].get<int>() == 1;
      },
      kPodStart);
  INFO("the driver pod: " << restarted.dump(1));
  REQUIRE(back);

  // A new claim is prepared by the restarted driver, the old one unprepared
  // by it; the killed one prepared the first claim, once.
  const std::string second = RunClaimPod(admin, ns, "second", "second").uid;
  CHECK(DeleteWorkloads(admin, ns));
  std::string log;
  CHECK(Eventually(
      [&] {
        log = gpu.driver_log();
        return Logged(log, "Unprepared claim", first) == 1;
      },
      kPodStart));
  const std::string killed = gpu.driver_log(/*previous=*/true);
  INFO("the restarted driver's log:\n" << log << "\nthe killed one's:\n" << killed);
  CHECK(Logged(killed, "Prepared claim", first) == 1);
  CHECK(Logged(log, "Prepared claim", first) == 0);
  CHECK(Logged(log, "Prepared claim", second) == 1);
}

// A container frozen through its freezer cgroup (cgroup v1, as on the
// suite's node): its processes cannot die, not even of SIGKILL, until it is
// thawed, so the kubelet cannot stop it. Thawed when this goes.
class FrozenContainer {
 public:
  explicit FrozenContainer(const std::string& container_id) {
    testing::ProcessResult inspect = Run({DRA_E2E_CLUSTER_SH, "crictl", ClusterDir(), "inspect", container_id});
    RequireSuccess(inspect, "crictl inspect");
    const int pid = json::parse(inspect.out)["info"]["pid"].get<int>();
    REQUIRE(pid > 1);
    for (absl::string_view line : absl::StrSplit(testing::ReadFile(absl::StrCat("/proc/", pid, "/cgroup")), '\n')) {
      const std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (fields.size() == 3 && fields[1] == "freezer")
        state_ = "/sys/fs/cgroup/freezer" + fields[2] + "/freezer.state";
    }
    INFO("the container's freezer cgroup: " << state_);
    REQUIRE(!state_.empty());
    testing::WriteFile(state_, "FROZEN");
    REQUIRE(Eventually([&] { return absl::StartsWith(testing::ReadFile(state_), "FROZEN"); }, kPodStart));
  }
  FrozenContainer(const FrozenContainer&) = delete;
  FrozenContainer& operator=(const FrozenContainer&) = delete;
  ~FrozenContainer() { Thaw(); }
  void Thaw() {
    if (!state_.empty() && std::filesystem::exists(state_)) testing::WriteFile(state_, "THAWED");
    state_.clear();
  }

 private:
  std::string state_;
};

// `kubectl delete pod --force --grace-period=0`: the pod object goes at
// once, whatever its containers do.
void ForceDeletePod(const std::string& ns, const std::string& pod) {
  RequireSuccess(AdminCurl({"-X", "DELETE", "-H", "Content-Type: application/json", "-d",
                            R"({"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0})",
                            absl::StrCat(AdminConfig().server, "/api/v1/namespaces/", ns, "/pods/", pod)}),
                 "force deletion of " + ns + "/" + pod);
}

// Where `message` about claim `uid` first stands in the driver's log, or npos.
size_t LoggedAt(const std::string& log, const std::string& message, const std::string& uid) {
  size_t start = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (LogLineAbout(line, message, uid)) return start;
    start += line.size() + 1;
  }
  return std::string::npos;
}

TEST_CASE(
    "the GPU driver: a running pod force-deleted while its container still runs, and a replacement given the "
    "same GPU: the replacement's prepare is refused until the kubelet unprepared the old claim, then it runs",
    "[e2e][runtime][gpu][exclusivity]") {
  GpuInstall gpu({"--num-devices=1"}, /*devices=*/1);
  Client& admin = *gpu.admin;
  const Workloads workloads(admin, "gpu-force");
  const std::string& ns = workloads.ns;
  const ClaimWorkload old_workload = RunClaimPod(admin, ns, "old-gpu", "old");
  CHECK(GpuIndexes(old_workload.log) == std::vector<std::string>{"0"});
  const std::string old_spec = GpuClaimSpecFile(gpu.node, old_workload.uid);
  REQUIRE(std::filesystem::exists(old_spec));

  // The old container keeps running (frozen) after its pod object is gone:
  // what a force deletion leaves when the container does not stop at once.
  const json old_pod = RunningPod(admin, ns, "old");
  FrozenContainer frozen(RuntimeContainerId(old_pod["status"]["containerStatuses"][0]));
  const absl::Time start = absl::Now();
  ForceDeletePod(ns, "old");

  // The only GPU goes to the replacement once the old claim is deallocated.
  CreateClaim(admin, ns, "new-gpu", "gpu.example.com");
  ApplyObject(admin, ClaimPod(ns, "new", "new-gpu"), ns);
  const std::string new_uid = ClaimUid(admin, ns, "new-gpu");
  std::string log;
  const bool refused = Eventually(
      [&] {
        log = gpu.driver_log();
        return Logged(log, "Claim failed", new_uid) > 0;
      },
      kPodStart);
  INFO("the driver's log:\n" << log);
  REQUIRE(refused);
  const absl::Duration refused_after = absl::Now() - start;
  CHECK(absl::StrContains(log, absl::StrCat("device ", gpu.node.name, "/gpu-0 is in use by claim ", ns,
                                            "/old-gpu (UID ", old_workload.uid, "), prepared on this node")));
  // Only the old claim has the GPU: its CDI spec is there, the new one's is
  // not, and the new pod does not run.
  CHECK(std::filesystem::exists(old_spec));
  CHECK_FALSE(std::filesystem::exists(GpuClaimSpecFile(gpu.node, new_uid)));
  absl::StatusOr<json> waiting = admin.Get(kPods, ns, "new");
  REQUIRE(waiting.ok());
  CHECK_FALSE(PodRunning(*waiting));
  CHECK(Logged(log, "Prepared claim", new_uid) == 0);

  // The old container stops; the kubelet unprepares its claim, and its next
  // retry prepares the new one.
  frozen.Thaw();
  const absl::Duration thawed_after = absl::Now() - start;
  CHECK(Eventually([&] { return Logged(gpu.driver_log(), "Unprepared claim", old_workload.uid) > 0; }, kPodStart));
  const absl::Duration unprepared_after = absl::Now() - start;
  const std::string new_log = WaitForLog(ns, "new", "app");
  const absl::Duration running_after = absl::Now() - start;
  CHECK(GpuIndexes(new_log) == std::vector<std::string>{"0"});
  CHECK(HasDeviceNode(new_log, "0"));
  log = gpu.driver_log();
  INFO("the driver's log:\n" << log);
  const size_t unprepared = LoggedAt(log, "Unprepared claim", old_workload.uid);
  const size_t prepared = LoggedAt(log, "Prepared claim", new_uid);
  REQUIRE(unprepared != std::string::npos);
  REQUIRE(prepared != std::string::npos);
  CHECK(unprepared < prepared);
  CHECK_FALSE(std::filesystem::exists(old_spec));
  std::cout << "force deletion timeline (from the force deletion): replacement refused seen after "
            << absl::FormatDuration(refused_after) << ", old container thawed after "
            << absl::FormatDuration(thawed_after) << ", its claim unprepared (its container stopped) after "
            << absl::FormatDuration(unprepared_after) << ", replacement running after "
            << absl::FormatDuration(running_after) << "; refusals: " << Logged(log, "Claim failed", new_uid) << "\n";
  CHECK(DeleteWorkloads(admin, ns));
}

// A value of the suite's cluster.env.
std::string SuiteClusterEnv(const std::string& name) {
  std::istringstream lines(testing::ReadFile(ClusterDir() + "/cluster.env"));
  for (std::string line; std::getline(lines, line);) {
    if (absl::StartsWith(line, name + "=")) return line.substr(name.size() + 1);
  }
  FAIL(name << " is not in the suite's cluster.env");
  return "";
}

bool NetworkDeviceExists(const std::string& name) {
  return Run({"/usr/bin/env", "ip", "link", "show", name}).exit_code == 0;
}

bool LoopbackHasAddress(const std::string& address) {
  return absl::StrContains(Run({"/usr/bin/env", "ip", "-4", "-o", "addr", "show", "dev", "lo"}).out,
                           " " + address + "/32 ");
}

// A container that connects to the kubernetes Service (the node's bridge,
// the Service address and its proxy) and logs each success, numbered; ready
// while it can connect.
json ServiceReacher(const std::string& ns, const std::string& name) {
  const std::string connect = "nc -w 5 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT -e true";
  json container = {
      {"name", "reach"},
      {"image", kBusybox},
      {"imagePullPolicy", "Never"},
      {"command", json::array({"sh", "-c",
                               "i=0; trap 'exit 0' TERM; while true; do if " + connect +
                                   "; then i=$((i + 1)); echo reached $i; fi; sleep 1 & wait; done"})},
      {"readinessProbe", {{"exec", {{"command", json::array({"sh", "-c", connect})}}}, {"periodSeconds", 2}}}};
  return Pod(ns, name, {container}, json::array());
}

// The highest N of the "reached N" lines of the container's log.
int TimesReached(const std::string& log) {
  int reached = 0;
  for (const std::string& line : LinesWith(log, "reached ")) reached = std::max(reached, std::stoi(line.substr(8)));
  return reached;
}

TEST_CASE(
    "two clusters with real nodes on one machine: each has its own bridge and Service address, and "
    "stopping one leaves the other's running pod, network and container monitors alone",
    "[e2e][runtime]") {
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  const Workloads ours(*admin, "coexist");
  admin->Create(kPods, ours.ns, ServiceReacher(ours.ns, "reacher")).IgnoreError();
  RunningPod(*admin, ours.ns, "reacher");
  const std::string our_slot = SuiteClusterEnv("DRA_E2E_NET_SLOT");

  std::optional<PrivateCluster> other;
  other.emplace();
  other->StartNode(RealNode().runtime);
  const std::string other_slot = other->Env("DRA_E2E_NET_SLOT");
  CHECK(other_slot != our_slot);
  CHECK(NetworkDeviceExists("dra-e2e" + our_slot));
  {
    // A pod of the other cluster reaches its own Service through its own
    // bridge (its readiness probe connects).
    std::shared_ptr<Client> other_admin = other->Admin();
    const std::string ns = CreateNamespace(*other_admin, "coexist");
    REQUIRE(other_admin->Create(kPods, ns, ServiceReacher(ns, "reacher")).ok());
    json pod;
    const bool ready = WaitForPod(
        *other_admin, ns, "reacher", [](const json& pod) { return ContainersReady(pod); }, &pod, kPodStart);
    INFO("the other cluster's pod: " << pod.dump(1));
    REQUIRE(ready);
    CHECK(NetworkDeviceExists("dra-e2e" + other_slot));
    CHECK(LoopbackHasAddress("10.0." + other_slot + ".1"));
  }

  const int before = TimesReached(WaitForLog(ours.ns, "reacher", "reach", "reached "));
  other.reset();  // cluster.sh stop, its pod still running
  CHECK_FALSE(NetworkDeviceExists("dra-e2e" + other_slot));
  CHECK_FALSE(LoopbackHasAddress("10.0." + other_slot + ".1"));
  CHECK(NetworkDeviceExists("dra-e2e" + our_slot));
  CHECK(LoopbackHasAddress("10.0." + our_slot + ".1"));
  // The same container (its shim alive) goes on reaching the Service.
  std::string log;
  CHECK(Eventually(
      [&] {
        log = PodLog(ours.ns, "reacher", "reach");
        return TimesReached(log) > before;
      },
      kPodStart));
  INFO("our pod's log:\n" << log);
  absl::StatusOr<json> pod = admin->Get(kPods, ours.ns, "reacher");
  REQUIRE(pod.ok());
  CHECK((*pod)["status"]["containerStatuses"][0]["restartCount"] == 0);
  CHECK(PodRunning(*pod));
}

}  // namespace
}  // namespace dra::e2e
