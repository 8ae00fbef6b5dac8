// The suite's real node (containerd or CRI-O: cluster.sh node-start with
// DRA_E2E_RUNTIME=containerd or crio) as the runtime tests use it: the example
// drivers installed from their charts and images, workloads in namespaces of
// their own, and what their containers logged, read through the API server
// as `kubectl logs` does.
#pragma once

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "e2e/helm.h"
#include "e2e/manifests.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {

using k8s::Client;
using nlohmann::json;

inline constexpr char kBusybox[] = "localhost/dra-e2e/busybox:1";
inline constexpr char kImageTag[] = "0.2.0";
inline constexpr char kGpuDriver[] = "gpu.example.com";
inline constexpr char kCpuDriver[] = "cpu.example.com";
// Long enough for a pod to start on a loaded machine: a bound on a wait for
// an event, never a deadline the test measures.
inline constexpr absl::Duration kPodStart = absl::Minutes(3);

// One example driver as an operator installs it.
struct Example {
  std::string name;     // gpu, cpu
  std::string release;  // its Helm release and the prefix of what the chart names
  std::string ns;       // of the plain manifests, and of the release here
  std::string driver;   // the DRA driver name
  std::string chart_dir() const { return absl::StrCat(DRA_SOURCE_DIR, "/examples/", name, "/deploy/helm/", release); }
  std::string image() const { return absl::StrCat("registry.example.com/dra-cpp/", name, "-driver"); }
};
inline const Example kGpu{"gpu", "gpu-example-driver", "dra-gpu-example", kGpuDriver};
inline const Example kCpu{"cpu", "cpu-example-driver", "dra-cpu-example", kCpuDriver};

// The reference driver's demo specs and chart (build-k8s.sh
// dra-example-kubeletplugin; the e2e_reference fixture builds it):
// <dir>/demo/examples, <dir>/deployments/helm/dra-example-driver.
inline std::string ReferenceDir() {
  absl::StatusOr<testing::ProcessResult> dir =
      testing::RunProcess({DRA_E2E_BUILD_K8S, "--print-dir", "dra-example-kubeletplugin"});
  REQUIRE(dir.ok());
  INFO(dir->err);
  REQUIRE(dir->exit_code == 0);
  return dir->out.substr(0, dir->out.find('\n')) + "/dra-example-driver";
}

inline NodeEnv RealNode() {
  NodeEnv node = Node();
  INFO("these tests need a real runtime's node (DRA_E2E_RUNTIME=containerd or crio cluster.sh node-start)");
  REQUIRE((node.runtime == "containerd" || node.runtime == "crio"));
  return node;
}

// The runtime's ID of a container, from its status in a pod
// (status.containerStatuses[]: "containerd://<id>", "cri-o://<id>").
inline std::string RuntimeContainerId(const json& container_status) {
  const std::string id = container_status["containerID"].get<std::string>();
  const size_t scheme_end = id.find("://");
  REQUIRE(scheme_end != std::string::npos);
  return id.substr(scheme_end + 3);
}

inline testing::ProcessResult Run(const std::vector<std::string>& argv) {
  absl::StatusOr<testing::ProcessResult> result = testing::RunProcess(argv);
  REQUIRE(result.ok());
  return *std::move(result);
}

inline void RequireSuccess(const testing::ProcessResult& result, const std::string& what) {
  INFO(what << ": exit " << result.exit_code << "\n" << result.out << result.err);
  REQUIRE(result.exit_code == 0);
}

// The driver image build-images.sh made of the suite's build (the
// e2e_build_images fixture), imported into the node's containerd as
// <image>:<tag>.
inline void ImportDriverImage(const Example& example, const std::string& tag) {
  const std::string tar = absl::StrCat(DRA_BUILD_DIR, "/images/", example.name, "-driver-", kImageTag, ".tar");
  RequireSuccess(Run({DRA_E2E_CLUSTER_SH, "image-import", ClusterDir(), tar, absl::StrCat(example.image(), ":", tag)}),
                 "cluster.sh image-import " + tar);
}

inline std::vector<std::string> HelmSets(const NodeEnv& node, const std::string& tag,
                                         const std::vector<std::string>& more) {
  std::vector<std::string> sets = {"image.tag=" + tag, "kubeletDir=" + node.dir + "/kubelet",
                                   "cdiRoot=" + node.cdi_dir};
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

// helm upgrade --install of the example's chart with the image of `tag`.
inline void HelmInstall(const Example& example, const NodeEnv& node, const std::string& tag,
                        const std::vector<std::string>& sets = {}) {
  std::vector<std::string> args = {"upgrade",
                                   "--install",
                                   example.release,
                                   example.chart_dir(),
                                   "--namespace",
                                   example.ns,
                                   "--create-namespace",
                                   "--kubeconfig",
                                   ClusterDir() + "/admin.kubeconfig"};
  for (const std::string& set : HelmSets(node, tag, sets)) {
    args.push_back(absl::StrContains(set, "=[") ? "--set-json" : "--set");
    args.push_back(set);
  }
  RequireSuccess(Helm(args), "helm upgrade --install " + example.release);
}

// helm uninstall, waiting until its objects are gone; the result, for
// callers that may not fail (destructors).
inline testing::ProcessResult HelmUninstall(const Example& example) {
  return Helm({"uninstall", example.release, "--namespace", example.ns, "--wait", "--ignore-not-found", "--kubeconfig",
               ClusterDir() + "/admin.kubeconfig"});
}

// The example's DaemonSet pods on the node, by name.
inline std::map<std::string, json> DriverPods(Client& admin, const Example& example) {
  k8s::ListOptions options;
  options.label_selector = "app.kubernetes.io/name=" + example.release;
  absl::StatusOr<k8s::ListResult> pods = admin.List(kPods, example.ns, options);
  std::map<std::string, json> by_name;
  if (!pods.ok()) return by_name;
  for (json& pod : pods->items) {
    std::string name = pod["metadata"]["name"];
    by_name.emplace(std::move(name), std::move(pod));
  }
  return by_name;
}

inline bool ContainersReady(const json& pod) {
  if (!PodRunning(pod)) return false;
  for (const json& status : pod["status"].value("containerStatuses", json::array())) {
    if (!status.value("ready", false)) return false;
  }
  return true;
}

// Waits until exactly one pod of the example runs (ready), with `tag`'s
// image when one is given, and returns it.
inline json WaitForOneDriverPod(Client& admin, const Example& example, const std::string& tag = "") {
  json pod;
  const bool one = Eventually(
      [&] {
        std::map<std::string, json> pods = DriverPods(admin, example);
        if (pods.size() != 1 || !ContainersReady(pods.begin()->second)) return false;
        pod = pods.begin()->second;
        return tag.empty() || absl::EndsWith(pod["spec"]["containers"][0].value("image", ""), ":" + tag);
      },
      kPodStart);
  INFO("pods of " << example.release << ": " << json(DriverPods(admin, example)).dump(1));
  REQUIRE(one);
  return pod;
}

// Devices in the driver's ResourceSlices of the node.
inline size_t PublishedDevices(Client& admin, const NodeEnv& node, const std::string& driver) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node.name, ",spec.driver=", driver);
  absl::StatusOr<k8s::ListResult> slices = admin.List(k8s::kResourceSlices, "", options);
  if (!slices.ok()) return 0;
  size_t devices = 0;
  for (const json& slice : slices->items) devices += slice["spec"].value("devices", json::array()).size();
  return devices;
}

// curl with the admin certificate and `args` (options, then the URL).
inline testing::ProcessResult AdminCurl(const std::vector<std::string>& args) {
  const std::string dir = ClusterDir();
  std::vector<std::string> argv = {
      "/usr/bin/curl",     "-sf",    "--max-time",           "30",    "--cacert",
      dir + "/pki/ca.crt", "--cert", dir + "/pki/admin.crt", "--key", dir + "/pki/admin.key"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

// GET on the API server with the admin certificate (text, as kubectl's
// raw requests); "" when it fails.
inline std::string AdminGetText(const std::string& url) {
  testing::ProcessResult result = AdminCurl({url});
  return result.exit_code == 0 ? result.out : "";
}

// `kubectl logs [--previous]`: the container's log through the API server
// and the kubelet.
inline std::string PodLog(const std::string& ns, const std::string& pod, const std::string& container,
                          bool previous = false) {
  return AdminGetText(absl::StrCat(AdminConfig().server, "/api/v1/namespaces/", ns, "/pods/", pod,
                                   "/log?container=", container, previous ? "&previous=true" : ""));
}

// Waits until the container's log holds `marker` (the workload prints it
// last) and returns the log.
inline std::string WaitForLog(const std::string& ns, const std::string& pod, const std::string& container,
                              const std::string& marker = "--- end ---") {
  std::string log;
  const bool done = Eventually(
      [&] {
        log = PodLog(ns, pod, container);
        return absl::StrContains(log, marker);
      },
      kPodStart);
  INFO(ns << "/" << pod << "/" << container << " logged:\n" << log);
  if (!done) {
    std::shared_ptr<Client> admin = MakeClient(AdminConfig());
    absl::StatusOr<json> object = admin->Get(kPods, ns, pod);
    INFO("the pod: " << (object.ok() ? (*object)["status"].dump(1) : object.status().ToString()) << "\nevents:\n"
                     << absl::StrJoin(PodEvents(*admin, ns, pod), "\n"));
    REQUIRE(done);
  }
  return log;
}

// Whether the kubelet's liveness probe of the pod's container succeeded at
// least once (its /metrics/probes).
inline bool LivenessProbePassed(const NodeEnv& node, const std::string& pod) {
  for (absl::string_view line : absl::StrSplit(AdminGetText(node.kubelet_url + "/metrics/probes"), '\n')) {
    if (absl::StartsWith(line, "prober_probe_total{") && absl::StrContains(line, "pod=\"" + pod + "\"") &&
        absl::StrContains(line, "probe_type=\"Liveness\"") && absl::StrContains(line, "result=\"successful\"") &&
        !absl::EndsWith(line, " 0")) {
      return true;
    }
  }
  return false;
}

// Deletes every pod and ResourceClaim of `ns`; true once the pods are gone
// (their claims unprepared). Does not fail the test: destructors call it.
inline bool DeleteWorkloads(Client& admin, const std::string& ns) {
  for (const k8s::ResourceRef* ref : {&kPods, &k8s::kResourceClaims}) {
    absl::StatusOr<k8s::ListResult> objects = admin.List(*ref, ns);
    if (!objects.ok()) return false;
    for (const json& object : objects->items) {
      (void)admin.Delete(*ref, ns, object["metadata"]["name"].get<std::string>());
    }
  }
  return Eventually(
      [&] {
        absl::StatusOr<k8s::ListResult> pods = admin.List(kPods, ns);
        return pods.ok() && pods->items.empty();
      },
      kPodStart);
}

// A namespace for a test's workloads; what is left in it goes with the test,
// passed or failed, so that the next test finds the node's devices free.
struct Workloads {
  Client& admin;
  const std::string ns;
  // In a new namespace named "<prefix>-<random>".
  Workloads(Client& admin, const std::string& prefix) : admin(admin), ns(CreateNamespace(admin, prefix)) {}
  // In the namespace `ns`, which the test makes.
  struct Existing {};
  static constexpr Existing kExisting{};
  Workloads(Client& admin, std::string ns, Existing) : admin(admin), ns(std::move(ns)) {}
  ~Workloads() { DeleteWorkloads(admin, ns); }
};

// The GPU example's CDI spec of claim `uid`: named as dra-example-driver
// names its own.
inline std::string GpuClaimSpecFile(const NodeEnv& node, const std::string& uid) {
  return absl::StrCat(node.cdi_dir, "/k8s.", kGpuDriver, "-gpu_", uid, ".yaml");
}

inline size_t CdiSpecFiles(const NodeEnv& node) {
  return std::distance(std::filesystem::directory_iterator(node.cdi_dir), std::filesystem::directory_iterator());
}

// What every workload container prints: its DRA environment, the device
// nodes, the device cgroup rules (cgroup v1, where the container sees its
// devices.list) and metadata files it was given, then a marker; then it
// waits to be stopped (sh as PID 1 needs the trap to end on SIGTERM).
inline constexpr char kWorkloadScript[] =
    "env | grep -E '^(GPU_DEVICE|DRA_|KUBERNETES_NODE_NAME=)' | sort; "
    "ls -l /dev | grep -E 'mock-(fabric-)?gpu' || true; "
    "sed 's/^/devices.list: /' /sys/fs/cgroup/devices/devices.list 2>/dev/null; "
    "find /var/run/kubernetes.io -name '*.json' -exec cat {} \\; 2>/dev/null; echo; "
    "echo '--- end ---'; trap 'exit 0' TERM; sleep 3600 & wait";

inline json WorkloadContainer(const std::string& name, const std::vector<std::string>& claims) {
  json container = {{"name", name},
                    {"image", kBusybox},
                    {"imagePullPolicy", "Never"},
                    {"command", json::array({"sh", "-c", kWorkloadScript})}};
  for (const std::string& claim : claims) container["resources"]["claims"].push_back({{"name", claim}});
  return container;
}

// The demo spec `file` (examples/gpu/deploy/demo) with every container
// running the workload script on the suite's image; applied in `ns`.
inline std::vector<json> ApplyDemo(Client& admin, const std::string& file, const std::string& ns) {
  const std::string path = absl::StrCat(DRA_SOURCE_DIR, "/examples/gpu/deploy/demo/", file);
  std::vector<json> pods;
  for (json& object : ManifestObjects(testing::ReadFile(path), path)) {
    if (object["kind"] == "Pod") {
      for (json& container : object["spec"]["containers"]) {
        std::vector<std::string> claims;
        for (const json& claim : container["resources"].value("claims", json::array())) {
          claims.push_back(claim["name"].get<std::string>());
        }
        container = WorkloadContainer(container["name"].get<std::string>(), claims);
      }
      object["spec"]["terminationGracePeriodSeconds"] = 5;
      pods.push_back(object);
    }
    ApplyObject(admin, std::move(object), ns);
  }
  return pods;
}

inline json Pod(const std::string& ns, const std::string& name, std::vector<json> containers, json resource_claims) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec",
           {{"containers", std::move(containers)},
            {"terminationGracePeriodSeconds", 5},
            {"resourceClaims", std::move(resource_claims)}}}};
}

inline json RunningPod(Client& admin, const std::string& ns, const std::string& name) {
  json pod;
  const bool running = WaitForPod(admin, ns, name, PodRunning, &pod, kPodStart);
  INFO(ns << "/" << name << ": " << pod.dump(1) << "\nevents:\n" << absl::StrJoin(PodEvents(admin, ns, name), "\n"));
  REQUIRE(running);
  return pod;
}

// The lines of `log` that start with `prefix`.
inline std::vector<std::string> LinesWith(const std::string& log, const std::string& prefix) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StartsWith(line, prefix)) lines.emplace_back(line);
  }
  return lines;
}

// The GPU indexes of the GPU_DEVICE_<i>=... lines of a workload's log.
inline std::vector<std::string> GpuIndexes(const std::string& log) {
  std::vector<std::string> indexes;
  for (const std::string& line : LinesWith(log, "GPU_DEVICE_")) {
    const std::string name = line.substr(0, line.find('='));
    const std::string index = name.substr(std::string("GPU_DEVICE_").size());
    if (!index.empty() && index.find('_') == std::string::npos) indexes.push_back(index);
  }
  return indexes;
}

// `ls -l` shows the char device /dev/mock-gpu<i> with the mock GPUs' major
// (195) and the GPU's index as minor: "crw-rw-rw- 1 root 0 195, 3 <date> mock-gpu3".
inline bool HasDeviceNode(const std::string& log, const std::string& index) {
  for (const std::string& line : LinesWith(log, "crw")) {
    const std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    const auto major = std::find(fields.begin(), fields.end(), "195,");
    if (major != fields.end() && major + 1 != fields.end() && *(major + 1) == index &&
        fields.back() == "mock-gpu" + index) {
      return true;
    }
  }
  return false;
}

// The device cgroup rules the container printed ("c 195:3 rwm"); none on a
// cgroup v2 node (no devices.list).
inline std::vector<std::string> DeviceCgroupRules(const std::string& log) {
  std::vector<std::string> rules;
  for (const std::string& line : LinesWith(log, "devices.list: ")) rules.push_back(line.substr(line.find(": ") + 2));
  return rules;
}

// Whether the rules let the container read and write the mock GPU of
// `index` (major 195) and no other: the runtime turned the CDI spec's device
// node into its rule, and nothing wider (an "a" rule, or "c 195:*" or
// "c *:*" with more than mknod) lets it reach the GPUs of other claims.
inline bool DeviceCgroupAllowsOnly(const std::vector<std::string>& rules, const std::string& index) {
  bool own = false;
  for (const std::string& rule : rules) {
    const std::vector<std::string> fields = absl::StrSplit(rule, ' ');
    if (fields.size() != 3) continue;
    const std::string& type = fields[0];
    const std::string& device = fields[1];
    const std::string& access = fields[2];
    const bool uses = absl::StrContains(access, "r") || absl::StrContains(access, "w");
    if (!uses) continue;
    if (type == "a") return false;
    if (type != "c") continue;
    if (device == "*:*" || device == "195:*") return false;
    if (!absl::StartsWith(device, "195:")) continue;
    if (device != "195:" + index) return false;
    own = absl::StrContains(access, "r") && absl::StrContains(access, "w");
  }
  return own;
}

// Deletes the node's ResourceSlices of `driver`, while no plugin of it runs
// there: a driver uninstalled a moment ago leaves its slices until the
// kubelet wipes them, and the scheduler could allocate from them (with
// another install's settings) before the next install replaces them.
inline void DeleteNodeSlices(Client& admin, const NodeEnv& node, const std::string& driver) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node.name, ",spec.driver=", driver);
  absl::StatusOr<k8s::ListResult> slices = admin.List(k8s::kResourceSlices, "", options);
  REQUIRE(slices.ok());
  for (const json& slice : slices->items) {
    const absl::Status deleted = admin.Delete(k8s::kResourceSlices, "", slice["metadata"]["name"].get<std::string>());
    REQUIRE((deleted.ok() || absl::IsNotFound(deleted)));
  }
}

// An example installed with its chart for the test, uninstalled after.
struct Install {
  const Example& example;
  NodeEnv node = RealNode();
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  std::vector<std::string> sets;
  json driver_pod;

  Install(const Example& example, std::vector<std::string> sets) : example(example), sets(std::move(sets)) {
    ImportDriverImage(example, kImageTag);
    DeleteNodeSlices(*admin, node, example.driver);
    HelmInstall(example, node, kImageTag, this->sets);
    driver_pod = WaitForOneDriverPod(*admin, example);
  }
  ~Install() { HelmUninstall(example); }
  std::string driver_pod_name() const { return driver_pod["metadata"]["name"]; }
  std::string driver_log(bool previous = false) const {
    return PodLog(example.ns, driver_pod_name(), "plugin", previous);
  }
};

// The GPU example without its fabric pool (no controller to attach), with
// device status, metadata files and `args`; once its `devices` (8 mock GPUs,
// and their partitions if any) are published.
struct GpuInstall : Install {
  explicit GpuInstall(const std::vector<std::string>& args = {}, size_t devices = 8)
      : Install(kGpu, {"fabricController.enabled=false", NodePluginArgs(args)}) {
    INFO("the driver's log:\n" << driver_log());
    REQUIRE(Eventually([&] { return PublishedDevices(*admin, node, kGpuDriver) == devices; }, kPodStart));
  }
  static std::string NodePluginArgs(const std::vector<std::string>& args) {
    json all = {"--device-metadata"};
    for (const std::string& arg : args) all.push_back(arg);
    return "nodePlugin.args=" + all.dump();
  }
};

// Whether a line of the driver's log has `message` and names the claim `uid`.
inline bool LogLineAbout(absl::string_view line, const std::string& message, const std::string& uid) {
  return absl::StrContains(line, "\"" + message + "\"") && absl::StrContains(line, uid);
}

// The driver's log lines with `message` that name the claim `uid`.
inline size_t Logged(const std::string& log, const std::string& message, const std::string& uid) {
  size_t count = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) count += LogLineAbout(line, message, uid) ? 1 : 0;
  return count;
}

inline std::string ClaimUid(Client& admin, const std::string& ns, const std::string& name) {
  absl::StatusOr<json> claim = admin.Get(k8s::kResourceClaims, ns, name);
  REQUIRE(claim.ok());
  return (*claim)["metadata"]["uid"].get<std::string>();
}

// A pod of one workload container that uses the ResourceClaim `claim`.
inline json ClaimPod(const std::string& ns, const std::string& name, const std::string& claim) {
  return Pod(ns, name, {WorkloadContainer("app", {"gpu"})},
             json::array({{{"name", "gpu"}, {"resourceClaimName", claim}}}));
}

// A claim for one GPU and a pod of it, run until its container printed what
// it got: its log, and the claim's UID.
struct ClaimWorkload {
  std::string log;
  std::string uid;
};
inline ClaimWorkload RunClaimPod(Client& admin, const std::string& ns, const std::string& claim,
                                 const std::string& pod) {
  CreateClaim(admin, ns, claim, "gpu.example.com");
  ApplyObject(admin, ClaimPod(ns, pod, claim), ns);
  std::string log = WaitForLog(ns, pod, "app");
  return {std::move(log), ClaimUid(admin, ns, claim)};
}

}  // namespace dra::e2e
