// The example drivers as operators run them, on the suite's real node:
// containerd 2.x with runc and a CNI bridge (cluster.sh node-start with
// DRA_E2E_RUNTIME=containerd), the drivers' own images (build-images.sh)
// imported into it, installed with helm or the plain manifests. Their
// DaemonSet pods register through the hostPath registry and publish with
// their pods' projected service account tokens; containerd applies their
// CDI specs to real containers, which print what they got (read through
// the API server, as `kubectl logs` does).
#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <signal.h>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "e2e/helm.h"
#include "e2e/manifests.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {
namespace {

using k8s::Client;
using nlohmann::json;

constexpr char kBusybox[] = "localhost/dra-e2e/busybox:1";
constexpr char kImageTag[] = "0.1.0";
constexpr char kGpuDriver[] = "gpu.example.com";
constexpr char kCpuDriver[] = "cpu.example.com";
// Long enough for a pod to start on a loaded machine: a bound on a wait for
// an event, never a deadline the test measures.
constexpr absl::Duration kPodStart = absl::Minutes(3);

// One example driver as an operator installs it.
struct Example {
  std::string name;       // gpu, cpu
  std::string release;    // its Helm release and the prefix of what the chart names
  std::string ns;         // of the plain manifests, and of the release here
  std::string driver;     // the DRA driver name
  std::string chart_dir() const { return absl::StrCat(DRA_SOURCE_DIR, "/examples/", name, "/deploy/helm/", release); }
  std::string image() const { return absl::StrCat("registry.example.com/dra-cpp/", name, "-driver"); }
};
const Example kGpu{"gpu", "gpu-example-driver", "dra-gpu-example", kGpuDriver};
const Example kCpu{"cpu", "cpu-example-driver", "dra-cpu-example", kCpuDriver};

NodeEnv RealNode() {
  NodeEnv node = Node();
  INFO("these tests need the containerd node (DRA_E2E_RUNTIME=containerd cluster.sh node-start)");
  REQUIRE(node.runtime == "containerd");
  return node;
}

testing::ProcessResult Run(const std::vector<std::string>& argv) {
  absl::StatusOr<testing::ProcessResult> result = testing::RunProcess(argv);
  REQUIRE(result.ok());
  return *std::move(result);
}

void RequireSuccess(const testing::ProcessResult& result, const std::string& what) {
  INFO(what << ": exit " << result.exit_code << "\n" << result.out << result.err);
  REQUIRE(result.exit_code == 0);
}

// The driver image build-images.sh made of the suite's build (the
// e2e_build_images fixture), imported into the node's containerd as
// <image>:<tag>.
void ImportDriverImage(const Example& example, const std::string& tag) {
  const std::string tar = absl::StrCat(DRA_BUILD_DIR, "/images/", example.name, "-driver-", kImageTag, ".tar");
  RequireSuccess(Run({DRA_E2E_CLUSTER_SH, "image-import", ClusterDir(), tar, absl::StrCat(example.image(), ":", tag)}),
                 "cluster.sh image-import " + tar);
}

std::vector<std::string> HelmSets(const NodeEnv& node, const std::string& tag, const std::vector<std::string>& more) {
  std::vector<std::string> sets = {"image.tag=" + tag, "kubeletDir=" + node.dir + "/kubelet",
                                   "cdiRoot=" + node.cdi_dir};
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

// helm upgrade --install of the example's chart with the image of `tag`.
void HelmInstall(const Example& example, const NodeEnv& node, const std::string& tag,
                 const std::vector<std::string>& sets = {}) {
  std::vector<std::string> args = {"upgrade", "--install", example.release, example.chart_dir(), "--namespace",
                                   example.ns, "--create-namespace", "--kubeconfig",
                                   ClusterDir() + "/admin.kubeconfig"};
  for (const std::string& set : HelmSets(node, tag, sets)) {
    args.push_back(absl::StrContains(set, "=[") ? "--set-json" : "--set");
    args.push_back(set);
  }
  RequireSuccess(Helm(args), "helm upgrade --install " + example.release);
}

// helm uninstall, waiting until its objects are gone; the result, for
// callers that may not fail (destructors).
testing::ProcessResult HelmUninstall(const Example& example) {
  return Helm({"uninstall", example.release, "--namespace", example.ns, "--wait", "--ignore-not-found",
               "--kubeconfig", ClusterDir() + "/admin.kubeconfig"});
}

// The example's DaemonSet pods on the node, by name.
std::map<std::string, json> DriverPods(Client& admin, const Example& example) {
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

bool ContainersReady(const json& pod) {
  if (!PodRunning(pod)) return false;
  for (const json& status : pod["status"].value("containerStatuses", json::array())) {
    if (!status.value("ready", false)) return false;
  }
  return true;
}

// Waits until exactly one pod of the example runs (ready) and returns it.
json WaitForOneDriverPod(Client& admin, const Example& example) {
  json pod;
  const bool one = Eventually(
      [&] {
        std::map<std::string, json> pods = DriverPods(admin, example);
        if (pods.size() != 1 || !ContainersReady(pods.begin()->second)) return false;
        pod = pods.begin()->second;
        return true;
      },
      kPodStart);
  INFO("pods of " << example.release << ": " << json(DriverPods(admin, example)).dump(1));
  REQUIRE(one);
  return pod;
}

// Devices in the driver's ResourceSlices of the node.
size_t PublishedDevices(Client& admin, const NodeEnv& node, const std::string& driver) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node.name, ",spec.driver=", driver);
  absl::StatusOr<k8s::ListResult> slices = admin.List(k8s::kResourceSlices, "", options);
  if (!slices.ok()) return 0;
  size_t devices = 0;
  for (const json& slice : slices->items) devices += slice["spec"].value("devices", json::array()).size();
  return devices;
}

// GET on the API server with the admin certificate (text, as kubectl's
// raw requests); "" when it fails.
std::string AdminGetText(const std::string& url) {
  const std::string dir = ClusterDir();
  testing::ProcessResult result = Run({"/usr/bin/curl", "-sf", "--max-time", "30", "--cacert", dir + "/pki/ca.crt", "--cert",
                                       dir + "/pki/admin.crt", "--key", dir + "/pki/admin.key", url});
  return result.exit_code == 0 ? result.out : "";
}

// `kubectl logs [--previous]`: the container's log through the API server
// and the kubelet.
std::string PodLog(const std::string& ns, const std::string& pod, const std::string& container,
                   bool previous = false) {
  return AdminGetText(absl::StrCat(AdminConfig().server, "/api/v1/namespaces/", ns, "/pods/", pod,
                                   "/log?container=", container, previous ? "&previous=true" : ""));
}

// Waits until the container's log holds `marker` (the workload prints it
// last) and returns the log.
std::string WaitForLog(const std::string& ns, const std::string& pod, const std::string& container,
                       const std::string& marker = "--- end ---") {
  std::string log;
  const bool done = Eventually(
      [&] {
        log = PodLog(ns, pod, container);
        return absl::StrContains(log, marker);
      },
      kPodStart);
  INFO(ns << "/" << pod << "/" << container << " logged:\n" << log);
  REQUIRE(done);
  return log;
}

// Whether the kubelet's liveness probe of the pod's container succeeded at
// least once (its /metrics/probes).
bool LivenessProbePassed(const NodeEnv& node, const std::string& pod) {
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
bool DeleteWorkloads(Client& admin, const std::string& ns) {
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
  Workloads(Client& admin, const std::string& prefix) : admin(admin), ns(CreateNamespace(admin, prefix)) {}
  ~Workloads() { DeleteWorkloads(admin, ns); }
};

size_t CdiSpecFiles(const NodeEnv& node) {
  return std::distance(std::filesystem::directory_iterator(node.cdi_dir), std::filesystem::directory_iterator());
}

// What every workload container prints: its DRA environment, the device
// nodes and metadata files it was given, then a marker; then it waits to be
// stopped (sh as PID 1 needs the trap to end on SIGTERM).
constexpr char kWorkloadScript[] =
    "env | grep -E '^(GPU_DEVICE|DRA_)' | sort; "
    "ls -l /dev | grep -E 'mock-(fabric-)?gpu' || true; "
    "find /var/run/kubernetes.io -name '*.json' -exec cat {} \\; 2>/dev/null; echo; "
    "echo '--- end ---'; trap 'exit 0' TERM; sleep 3600 & wait";

json WorkloadContainer(const std::string& name, const std::vector<std::string>& claims) {
  json container = {{"name", name},
                    {"image", kBusybox},
                    {"imagePullPolicy", "Never"},
                    {"command", json::array({"sh", "-c", kWorkloadScript})}};
  for (const std::string& claim : claims) container["resources"]["claims"].push_back({{"name", claim}});
  return container;
}

// The demo spec `file` (examples/gpu/deploy/demo) with every container
// running the workload script on the suite's image; applied in `ns`.
std::vector<json> ApplyDemo(Client& admin, const std::string& file, const std::string& ns) {
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

json Pod(const std::string& ns, const std::string& name, std::vector<json> containers, json resource_claims) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec",
           {{"containers", std::move(containers)},
            {"terminationGracePeriodSeconds", 5},
            {"resourceClaims", std::move(resource_claims)}}}};
}

json RunningPod(Client& admin, const std::string& ns, const std::string& name) {
  json pod;
  const bool running = WaitForPod(admin, ns, name, PodRunning, &pod, kPodStart);
  INFO(ns << "/" << name << ": " << pod.dump(1) << "\nevents:\n" << absl::StrJoin(PodEvents(admin, ns, name), "\n"));
  REQUIRE(running);
  return pod;
}

// The lines of `log` that start with `prefix`.
std::vector<std::string> LinesWith(const std::string& log, const std::string& prefix) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StartsWith(line, prefix)) lines.emplace_back(line);
  }
  return lines;
}

// The GPU indexes of the GPU_DEVICE_<i>=... lines of a workload's log.
std::vector<std::string> GpuIndexes(const std::string& log) {
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
bool HasDeviceNode(const std::string& log, const std::string& index) {
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

// An example installed with its chart for the test, uninstalled after.
struct Install {
  const Example& example;
  NodeEnv node = RealNode();
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  std::vector<std::string> sets;
  json driver_pod;

  Install(const Example& example, std::vector<std::string> sets) : example(example), sets(std::move(sets)) {
    ImportDriverImage(example, kImageTag);
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
    json all = {"--device-status", "--device-metadata"};
    for (const std::string& arg : args) all.push_back(arg);
    return "nodePlugin.args=" + all.dump();
  }
};

// The driver's log lines with `message` that name the claim `uid`.
size_t Logged(const std::string& log, const std::string& message, const std::string& uid) {
  size_t count = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, "\"" + message + "\"") && absl::StrContains(line, uid)) ++count;
  }
  return count;
}

std::string ClaimUid(Client& admin, const std::string& ns, const std::string& name) {
  absl::StatusOr<json> claim = admin.Get(k8s::kResourceClaims, ns, name);
  REQUIRE(claim.ok());
  return (*claim)["metadata"]["uid"].get<std::string>();
}

// A pod of one workload container that uses the ResourceClaim `claim`.
json ClaimPod(const std::string& ns, const std::string& name, const std::string& claim) {
  return Pod(ns, name, {WorkloadContainer("app", {"gpu"})}, json::array({{{"name", "gpu"}, {"resourceClaimName", claim}}}));
}

// A claim for one GPU and a pod of it, run until its container printed what
// it got: its log, and the claim's UID.
struct ClaimWorkload {
  std::string log;
  std::string uid;
};
ClaimWorkload RunClaimPod(Client& admin, const std::string& ns, const std::string& claim, const std::string& pod) {
  CreateClaim(admin, ns, claim, "gpu.example.com");
  ApplyObject(admin, ClaimPod(ns, pod, claim), ns);
  std::string log = WaitForLog(ns, pod, "app");
  return {std::move(log), ClaimUid(admin, ns, claim)};
}

TEST_CASE("helm install of the GPU example on the real node: its DaemonSet pod runs from the image and registers "
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

TEST_CASE("the GPU example's plain manifests on the real node: the DaemonSet pod from the image registers and "
          "publishes and a workload gets a GPU",
          "[e2e][runtime][gpu]") {
  const NodeEnv node = RealNode();
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  ImportDriverImage(kGpu, kImageTag);  // the image the manifest names
  Applied applied{*admin, {}};
  for (const char* file : {"namespace.yaml", "rbac.yaml", "admission-policy.yaml", "deviceclass.yaml",
                           "daemonset.yaml"}) {
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

TEST_CASE("GPU workloads in real containers: one GPU and two GPUs and a claim shared by two containers and by two "
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
  ApplyObject(admin, Pod(ns, "two-gpus", {WorkloadContainer("app", {"gpus"})},
                         json::array({{{"name", "gpus"}, {"resourceClaimTemplateName", "two-gpus"}}})),
              ns);
  CreateClaim(admin, ns, "shared", "gpu.example.com");
  for (const char* name : {"shared-a", "shared-b"}) ApplyObject(admin, ClaimPod(ns, name, "shared"), ns);

  const std::string one = WaitForLog(ns, "single-gpu", "app");
  INFO("single-gpu:\n" << one);
  REQUIRE(GpuIndexes(one).size() == 1);
  const std::string index = GpuIndexes(one)[0];
  CHECK(HasDeviceNode(one, index));
  CHECK(LinesWith(one, "DRA_NODE_NAME=" + gpu.node.name).size() == 1);
  CHECK(LinesWith(one, "DRA_DRIVER_NAME=gpu.example.com").size() == 1);
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

TEST_CASE("a GPU partition in a real container: space-partitioned by the workload's config (the reference's "
          "partition demo)",
          "[e2e][runtime][gpu]") {
  GpuInstall gpu({"--gpu-partitions=2"}, 8 * 3);
  const Workloads workloads(*gpu.admin, "gpu-partition");
  ApplyDemo(*gpu.admin, "partition.yaml", workloads.ns);
  const std::string log = WaitForLog(workloads.ns, "gpu-partition", "app");
  INFO("gpu-partition:\n" << log);
  // Partition p of GPU i is the device gpu-<i>-part-<p>: GPU_DEVICE_<i>_PART_<p>.
  std::vector<std::string> partitions;
  for (const std::string& line : LinesWith(log, "GPU_DEVICE_")) {
    const std::vector<std::string> parts = absl::StrSplit(line.substr(0, line.find('=')), '_');
    if (parts.size() == 5 && parts[3] == "PART") partitions.push_back(absl::StrCat(parts[2], "_PART_", parts[4]));
  }
  REQUIRE(partitions.size() == 1);
  const std::string var = "GPU_DEVICE_" + partitions[0];
  CHECK(LinesWith(log, var + "_SHARING_STRATEGY=SpacePartitioning").size() == 1);
  CHECK(LinesWith(log, var + "_PARTITION_COUNT=2").size() == 1);
  CHECK(HasDeviceNode(log, partitions[0].substr(0, partitions[0].find('_'))));
}

TEST_CASE("a shared GPU in real containers: half of a GPU's memory for each of two pods (the reference's "
          "shared-gpu demo)",
          "[e2e][runtime][gpu]") {
  GpuInstall gpu({"--allow-multiple-allocations"});
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

TEST_CASE("helm install of the CPU example on the real node: it publishes the node's CPUs and a workload with an "
          "exclusive CPU runs and prints the DRA_CPUSET it got",
          "[e2e][runtime][cpu]") {
  Install cpu(kCpu, {});
  Client& admin = *cpu.admin;
  INFO("the driver's log:\n" << cpu.driver_log());
  REQUIRE(Eventually([&] { return PublishedDevices(admin, cpu.node, kCpuDriver) > 0; }, kPodStart));
  const Workloads workloads(admin, "cpu-workloads");
  const std::string& ns = workloads.ns;
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
                             {"capacity", {{"requests", {{"cpu.example.com/cpu", "1"}}}}}}}}})}}}}}}}};
  ApplyObject(admin, one_cpu, ns);
  ApplyObject(admin, Pod(ns, "pinned", {WorkloadContainer("app", {"cpus"})},
                         json::array({{{"name", "cpus"}, {"resourceClaimTemplateName", "one-cpu"}}})),
              ns);
  const std::string log = WaitForLog(ns, "pinned", "app");
  INFO("pinned:\n" << log);
  const std::vector<std::string> cpuset = LinesWith(log, "DRA_CPUSET_");
  REQUIRE(cpuset.size() == 1);
  // One CPU: a single number, no range or list.
  const std::string cpus = cpuset[0].substr(cpuset[0].find('=') + 1);
  CHECK_FALSE(cpus.empty());
  CHECK(cpus.find_first_not_of("0123456789") == std::string::npos);
  CHECK(DeleteWorkloads(admin, ns));
}

TEST_CASE("helm upgrade of the GPU example: a new image tag rolls the driver (maxSurge 1) under a running workload "
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
  CHECK(after["status"]["containerStatuses"][0]["containerID"] == before["status"]["containerStatuses"][0]["containerID"]);
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

TEST_CASE("the node's runtime as after a reboot: containerd and the kubelet restarted with the CDI dir emptied - "
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
  const std::string claim_spec = absl::StrCat(gpu.node.cdi_dir, "/gpu.example.com-claim_", uid, ".json");
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

TEST_CASE("the GPU driver killed (SIGKILL) in its container: the kubelet restarts it and no claim is lost or "
          "prepared twice",
          "[e2e][runtime][gpu]") {
  GpuInstall gpu;
  Client& admin = *gpu.admin;
  const Workloads workloads(admin, "gpu-kill");
  const std::string& ns = workloads.ns;
  const std::string first = RunClaimPod(admin, ns, "first", "first").uid;

  // The driver is PID 1 of its container: its host PID from containerd.
  const std::string container_id =
      gpu.driver_pod["status"]["containerStatuses"][0]["containerID"].get<std::string>().substr(
          std::string("containerd://").size());
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

}  // namespace
}  // namespace dra::e2e
