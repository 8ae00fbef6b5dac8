// dra-example-driver's own demo specs (its demo/examples/, from the module
// build-k8s.sh pins in tests/e2e/reference/go.mod) run against the GPU
// example installed from its own chart on the real node, each checked with
// the reference e2e suite's assertions (its test/e2e/) on what `export`
// printed in each container and on the API objects. The reference's
// workload image, ubuntu:22.04, becomes the node's debian:12-slim (both have
// bash); nothing else in the specs changes.
//
// Not here, because the example or the node lacks what they need: the
// PodGroup demo (the workload API's scheduling.k8s.io/v1alpha2 and gang
// scheduling), the CPU profile's (a separate driver, examples/cpu) and the
// admission webhook's cases (a ValidatingAdmissionPolicy does that job here:
// gpu_config_policy_e2e_test.cc). Last, the swap: a node taken over from the
// reference, built from source and run from its own image and chart.
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_replace.h"
#include "e2e/runtime_node.h"

namespace dra::e2e {
namespace {

constexpr char kWorkloadImage[] = "docker.io/library/debian:12-slim";

// The GPU example as the reference's suite installs its driver: two GPUs per
// node, no fabric pool, plus `sets`; once its `devices` are published.
struct ReferenceInstall : Install {
  explicit ReferenceInstall(std::vector<std::string> more = {}, size_t devices = 2,
                            const std::string& driver = kGpuDriver)
      : Install(kGpu, WithDefaults(std::move(more))) {
    INFO("the driver's log:\n" << driver_log());
    REQUIRE(Eventually([&] { return PublishedDevices(*admin, node, driver) == devices; }, kPodStart));
  }
  static std::vector<std::string> WithDefaults(std::vector<std::string> more) {
    more.insert(more.begin(), {"fabricController.enabled=false", "nodePlugin.numDevices=2", "nodePlugin.args=[]"});
    return more;
  }
};

// Applies the reference's demo/examples/<name>/<name>.yaml as it is, but for
// the image; returns its namespace's workloads, deleted when it goes.
std::unique_ptr<Workloads> ApplyReferenceDemo(Client& admin, const std::string& name) {
  auto workloads = std::make_unique<Workloads>(admin, name, Workloads::kExisting);
  const std::string path = absl::StrCat(ReferenceDir(), "/demo/examples/", name, "/", name, ".yaml");
  const std::string yaml =
      absl::StrReplaceAll(testing::ReadFile(path), {{"image: ubuntu:22.04", absl::StrCat("image: ", kWorkloadImage)}});
  for (json& object : ManifestObjects(yaml, path)) ApplyObject(admin, std::move(object));
  return workloads;
}

// What `export` printed in a container: `declare -x NAME="value"` lines,
// sorted by name; complete once SHLVL (after every GPU_, DRA_ and
// KUBERNETES_ variable) is there.
std::string ExportLog(const std::string& ns, const std::string& pod, const std::string& container) {
  return WaitForLog(ns, pod, container, "declare -x SHLVL=");
}

// The reference suite's reading of it: the GPUs are the values of the
// GPU_DEVICE_* variables that start with "gpu-".
std::vector<std::string> Gpus(const std::string& log) {
  static const std::regex kGpu(R"re(^declare -x GPU_DEVICE_[A-Z0-9_]+="(gpu-.+)"$)re");
  std::vector<std::string> gpus;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    std::cmatch match;
    if (std::regex_match(line.begin(), line.end(), match, kGpu)) gpus.push_back(match[1]);
  }
  return gpus;
}

// GPU_DEVICE_<id>_<property> of `gpu`, <id> being its name without "gpu-",
// upper case, '-' as '_'; "" when the container does not have it.
std::string GpuProperty(const std::string& log, const std::string& gpu, const std::string& property) {
  const std::string id = absl::StrReplaceAll(absl::AsciiStrToUpper(gpu.substr(4)), {{"-", "_"}});
  const std::string prefix = absl::StrCat("declare -x GPU_DEVICE_", id, "_", property, "=\"");
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StartsWith(line, prefix) && absl::EndsWith(line, "\"")) {
      return std::string(line.substr(prefix.size(), line.size() - prefix.size() - 1));
    }
  }
  return "";
}

std::string Variable(const std::string& log, const std::string& name) {
  const std::string prefix = absl::StrCat("declare -x ", name, "=\"");
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StartsWith(line, prefix)) return std::string(line.substr(prefix.size(), line.size() - prefix.size() - 1));
  }
  return "";
}

// verifyGPUAllocation: `count` GPUs, none seen before in the test.
void CheckGpus(const std::string& log, size_t count, std::set<std::string>& seen) {
  const std::vector<std::string> gpus = Gpus(log);
  INFO(log);
  CHECK(gpus.size() == count);
  for (const std::string& gpu : gpus) CHECK(seen.insert(gpu).second);
}

// verifySharedGPUGroup: each container has one GPU, the same one, with the
// sharing strategy and the property given.
void CheckSharedGpu(const std::vector<std::string>& logs, const std::string& strategy, const std::string& property,
                    const std::string& value, std::set<std::string>& seen) {
  std::string shared;
  for (const std::string& log : logs) {
    INFO(log);
    const std::vector<std::string> gpus = Gpus(log);
    REQUIRE(gpus.size() == 1);
    if (shared.empty()) {
      shared = gpus[0];
      CHECK(seen.insert(shared).second);
    }
    CHECK(gpus[0] == shared);
    CHECK(GpuProperty(log, shared, "SHARING_STRATEGY") == strategy);
    CHECK(GpuProperty(log, shared, property) == value);
  }
}

json GetClaim(Client& admin, const std::string& ns, const std::string& name) {
  absl::StatusOr<json> claim = admin.Get(k8s::kResourceClaims, ns, name);
  REQUIRE(claim.ok());
  return *std::move(claim);
}

// The ResourceClaim behind the pod's claim `name`.
std::string PodClaimName(const json& pod, const std::string& name) {
  for (const json& status : pod["status"].value("resourceClaimStatuses", json::array())) {
    if (status["name"] == name) return status.value("resourceClaimName", "");
  }
  return "";
}

// The reference suite's device status check: the claim of the pod's "gpu"
// has typed uuid, model and driverVersion data for each device.
void CheckDeviceStatus(Client& admin, const std::string& ns, const std::string& pod_name) {
  const json pod = RunningPod(admin, ns, pod_name);
  const json claim = GetClaim(admin, ns, PodClaimName(pod, "gpu"));
  INFO(claim.dump(1));
  REQUIRE_FALSE(claim["status"].value("devices", json::array()).empty());
  for (const json& device : claim["status"]["devices"]) {
    CHECK_FALSE(device["data"]["uuid"].value("string", "").empty());
    CHECK_FALSE(device["data"]["model"].value("string", "").empty());
    CHECK_FALSE(device["data"]["driverVersion"].value("version", "").empty());
  }
}

TEST_CASE(
    "the reference's demos on the GPU example: one GPU per pod with device status - two per container - "
    "shared by containers and pods and an init container - opaque configs - CEL - prioritized lists - admin "
    "access - extended resources",
    "[e2e][runtime][gpu][reference]") {
  // One install for all of them, one demo after the other, each in its own
  // namespace, gone before the next starts.
  ReferenceInstall gpu({"deviceClasses.extendedResourceName=example.com/gpu"});
  Client& admin = *gpu.admin;

  {
    INFO("should allocate 1 distinct GPU per pod (with device status)");
    const auto demo = ApplyReferenceDemo(admin, "basic-resourceclaimtemplate");
    std::set<std::string> seen;
    for (const char* name : {"pod0", "pod1"}) {
      CheckGpus(ExportLog(demo->ns, name, "ctr0"), 1, seen);
      CheckDeviceStatus(admin, demo->ns, name);
    }
  }
  {
    INFO("should allocate 2 distinct GPUs to a single container");
    const auto demo = ApplyReferenceDemo(admin, "basic-multiple-requests");
    std::set<std::string> seen;
    CheckGpus(ExportLog(demo->ns, "pod0", "ctr0"), 2, seen);
  }
  {
    INFO("should share 1 GPU between containers with TimeSlicing default interval");
    const auto demo = ApplyReferenceDemo(admin, "basic-shared-claim-across-containers");
    std::set<std::string> seen;
    CheckSharedGpu({ExportLog(demo->ns, "pod0", "ctr0"), ExportLog(demo->ns, "pod0", "ctr1")}, "TimeSlicing",
                   "TIMESLICE_INTERVAL", "Default", seen);
  }
  {
    INFO("should share 1 GPU between pods with TimeSlicing default interval");
    const auto demo = ApplyReferenceDemo(admin, "basic-shared-claim-across-pods");
    std::set<std::string> seen;
    CheckSharedGpu({ExportLog(demo->ns, "pod0", "ctr0"), ExportLog(demo->ns, "pod1", "ctr0")}, "TimeSlicing",
                   "TIMESLICE_INTERVAL", "Default", seen);
  }
  {
    INFO("should share GPUs with TimeSlicing and SpacePartitioning");
    const auto demo = ApplyReferenceDemo(admin, "basic-resourceclaim-opaque-config");
    std::set<std::string> seen;
    CheckSharedGpu({ExportLog(demo->ns, "pod0", "ts-ctr0"), ExportLog(demo->ns, "pod0", "ts-ctr1")}, "TimeSlicing",
                   "TIMESLICE_INTERVAL", "Long", seen);
    CheckSharedGpu({ExportLog(demo->ns, "pod0", "sp-ctr0"), ExportLog(demo->ns, "pod0", "sp-ctr1")},
                   "SpacePartitioning", "PARTITION_COUNT", "10", seen);
  }
  {
    INFO("should share 1 GPU between init container and regular container");
    const auto demo = ApplyReferenceDemo(admin, "initcontainer-shared-gpu");
    std::set<std::string> seen;
    CheckSharedGpu({ExportLog(demo->ns, "pod0", "init0"), ExportLog(demo->ns, "pod0", "ctr0")}, "TimeSlicing",
                   "TIMESLICE_INTERVAL", "Default", seen);
  }
  {
    INFO("should have DRA_ADMIN_ACCESS set to true");
    const auto demo = ApplyReferenceDemo(admin, "admin-access");
    const std::string log = WaitForLog(demo->ns, "pod0", "ctr0", "DRA Admin Access: ");
    INFO(log);
    CHECK(Variable(log, "DRA_ADMIN_ACCESS") == "true");
  }
  {
    INFO("should allocate 1 GPU per pod for extended resource requests");
    const auto demo = ApplyReferenceDemo(admin, "extended-resource-request");
    std::set<std::string> seen;
    const std::map<std::string, std::string> resource = {
        {"pod0", absl::StrCat("deviceclass.resource.kubernetes.io/", kGpuDriver)}, {"pod1", "example.com/gpu"}};
    for (const auto& [name, resource_name] : resource) {
      CheckGpus(ExportLog(demo->ns, name, "ctr0"), 1, seen);
      const json pod = RunningPod(admin, demo->ns, name);
      INFO(pod["status"].dump(1));
      const json& status = pod["status"]["extendedResourceClaimStatus"];
      REQUIRE(status.is_object());
      CHECK_FALSE(status.value("resourceClaimName", "").empty());
      bool mapped = false;
      for (const json& mapping : status.value("requestMappings", json::array())) {
        mapped = mapped || (mapping["containerName"] == "ctr0" && !mapping.value("requestName", "").empty() &&
                            mapping["resourceName"] == resource_name);
      }
      CHECK(mapped);
    }
  }
  {
    INFO("should allocate 1 GPU selected using CEL expression");
    const auto demo = ApplyReferenceDemo(admin, "cel-selector");
    std::set<std::string> seen;
    CheckGpus(ExportLog(demo->ns, "pod0", "ctr0"), 1, seen);
  }
  {
    INFO("should honor firstAvailable priority order");
    const auto demo = ApplyReferenceDemo(admin, "prioritized-alternatives");
    std::set<std::string> seen;
    for (const auto& [name, request] :
         std::map<std::string, std::string>{{"pod0", "gpu/older-gpu"}, {"pod1", "gpu/latest-gpu"}}) {
      CheckGpus(ExportLog(demo->ns, name, "ctr0"), 1, seen);
      const json claim = GetClaim(admin, demo->ns, PodClaimName(RunningPod(admin, demo->ns, name), "gpu"));
      INFO(claim.dump(1));
      const json& results = claim["status"]["allocation"]["devices"]["results"];
      REQUIRE(results.size() == 1);
      CHECK(results[0]["request"] == request);
    }
  }
}

// Every device of the driver's slices shareable, with a request policy
// range on memory and compute.
void CheckShareableSlices(Client& admin, const NodeEnv& node) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node.name, ",spec.driver=", kGpuDriver);
  absl::StatusOr<k8s::ListResult> slices = admin.List(k8s::kResourceSlices, "", options);
  REQUIRE(slices.ok());
  for (const json& slice : slices->items) {
    for (const json& device : slice["spec"].value("devices", json::array())) {
      INFO(device.dump(1));
      CHECK(device.value("allowMultipleAllocations", false));
      for (const char* capacity : {"memory", "compute"}) {
        const json& range = device["capacity"][capacity]["requestPolicy"]["validRange"];
        CHECK(range.contains("min"));
        CHECK(range.contains("step"));
        CHECK(range.contains("max"));
      }
    }
  }
}

// Two pods whose claims share devices: distinct shareIDs, consumed memory
// and compute in the allocation and in the container.
void CheckShares(Client& admin, const std::string& ns) {
  std::set<std::string> share_ids;
  for (const char* name : {"pod0", "pod1"}) {
    const std::string log = ExportLog(ns, name, "ctr0");
    INFO(log);
    const std::vector<std::string> gpus = Gpus(log);
    REQUIRE(gpus.size() == 1);
    CHECK_FALSE(GpuProperty(log, gpus[0], "MEMORY").empty());
    CHECK_FALSE(GpuProperty(log, gpus[0], "COMPUTE").empty());
    const json pod = RunningPod(admin, ns, name);
    for (const json& claim_ref : pod["spec"]["resourceClaims"]) {
      const json claim = GetClaim(admin, ns, claim_ref["resourceClaimName"].get<std::string>());
      INFO(claim.dump(1));
      for (const json& result : claim["status"]["allocation"]["devices"]["results"]) {
        const std::string share_id = result.value("shareID", "");
        CHECK_FALSE(share_id.empty());
        CHECK(share_ids.insert(share_id).second);
        CHECK(result["consumedCapacity"].value("memory", "0") != "0");
        CHECK(result["consumedCapacity"].value("compute", "0") != "0");
      }
    }
  }
}

TEST_CASE(
    "the reference's AllowMultipleAllocations cases on the GPU example: shareable devices in the slices and "
    "two shares of a GPU with distinct shareIDs and consumed capacity",
    "[e2e][runtime][gpu][reference]") {
  ReferenceInstall gpu({"gpuAllowMultipleAllocations=true"});
  CheckShareableSlices(*gpu.admin, gpu.node);
  const auto demo = ApplyReferenceDemo(*gpu.admin, "gpu-allow-multiple-allocations");
  CheckShares(*gpu.admin, demo->ns);
}

TEST_CASE("the reference's AllowMultipleAllocations cases with partitionable devices on the GPU example",
          "[e2e][runtime][gpu][reference]") {
  // Two GPUs, each as four partitions and a whole.
  ReferenceInstall gpu({"gpuAllowMultipleAllocations=true", "nodePlugin.gpuPartitions=4"}, 2 * 5);
  CheckShareableSlices(*gpu.admin, gpu.node);
  const auto demo = ApplyReferenceDemo(*gpu.admin, "gpu-allow-multiple-allocations-partitionable");
  CheckShares(*gpu.admin, demo->ns);
}

TEST_CASE("the reference's partitionable devices case on the GPU example: two devices from shared GPU counters",
          "[e2e][runtime][gpu][reference]") {
  ReferenceInstall gpu({"nodePlugin.gpuPartitions=4"}, 2 * 5);
  const auto demo = ApplyReferenceDemo(*gpu.admin, "partitionable-devices");
  std::set<std::string> seen;
  CheckGpus(ExportLog(demo->ns, "pod0", "ctr0"), 2, seen);
}

TEST_CASE("the reference's NIC case on the GPU example's net profile: NIC bandwidth shared by consumable capacity",
          "[e2e][runtime][nic][reference]") {
  constexpr char kNetDriver[] = "net.example.com";
  ReferenceInstall nics({"deviceProfile=net", absl::StrCat("driverName=", kNetDriver), "nodePlugin.numDevices=4"}, 4,
                        kNetDriver);
  const auto demo = ApplyReferenceDemo(*nics.admin, "net-consumable-capacity");
  static const std::regex kRate(R"re(^declare -x NET_DEVICE_(\d+)_(INGRESS|EGRESS)_RATE="(\d+)"$)re");
  for (const char* name : {"pod0", "pod1"}) {
    const std::string log = ExportLog(demo->ns, name, "ctr0");
    INFO(log);
    int rates = 0;
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      if (std::regex_match(line.begin(), line.end(), kRate)) ++rates;
    }
    CHECK(rates >= 1);
  }
}

TEST_CASE(
    "the reference's BindingConditions case on the GPU example: the node's GPUs carry binding conditions "
    "and a pod binds once the plugin has set them",
    "[e2e][runtime][gpu][reference]") {
  ReferenceInstall gpu({"nodePlugin.bindingConditions=true"});
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", gpu.node.name, ",spec.driver=", kGpuDriver);
  absl::StatusOr<k8s::ListResult> slices = gpu.admin->List(k8s::kResourceSlices, "", options);
  REQUIRE(slices.ok());
  for (const json& slice : slices->items) {
    for (const json& device : slice["spec"]["devices"])
      CHECK_FALSE(device.value("bindingConditions", json::array()).empty());
  }
  const auto demo = ApplyReferenceDemo(*gpu.admin, "binding-conditions");
  std::set<std::string> seen;
  CheckGpus(ExportLog(demo->ns, "pod0", "ctr0"), 1, seen);
  const json claim = GetClaim(*gpu.admin, demo->ns, PodClaimName(RunningPod(*gpu.admin, demo->ns, "pod0"), "gpu"));
  INFO(claim.dump(1));
  bool met = false;
  for (const json& device : claim["status"].value("devices", json::array())) {
    for (const json& condition : device.value("conditions", json::array())) {
      met = met || (condition["type"] == absl::StrCat(kGpuDriver, "/is-prepared") && condition["status"] == "True");
    }
  }
  CHECK(met);
}

// dra-example-driver installed from its own chart and image, as a node runs
// it before the GPU example replaces it.
struct ReferenceDriver {
  static constexpr char kRelease[] = "dra-example-driver";
  const NodeEnv& node;

  // `sets`: more chart values (another image, say).
  explicit ReferenceDriver(const NodeEnv& node, const std::vector<std::string>& sets = {}) : node(node) {
    const testing::ProcessResult images =
        Run({absl::StrCat(DRA_SOURCE_DIR, "/tests/e2e/build-images.sh"), "--print-dir", "dra-example-driver"});
    RequireSuccess(images, "build-images.sh dra-example-driver");
    const std::string version =
        testing::ReadFile(absl::StrCat(ReferenceDir(), "/../dra-example-kubeletplugin.version"));
    const std::string tag = version.substr(0, version.find('\n'));
    const std::string tar =
        absl::StrCat(images.out.substr(0, images.out.find('\n')), "/dra-example-driver-", tag, ".tar");
    RequireSuccess(Run({DRA_E2E_CLUSTER_SH, "image-import", ClusterDir(), tar,
                        "registry.k8s.io/dra-example-driver/dra-example-driver:" + tag}),
                   "cluster.sh image-import " + tar);
    DeleteNodeSlices(*MakeClient(AdminConfig()), node, kGpuDriver);
    std::vector<std::string> args = {
        "upgrade", "--install", kRelease, ReferenceDir() + "/deployments/helm/dra-example-driver", "--namespace",
        kRelease, "--create-namespace", "--kubeconfig", ClusterDir() + "/admin.kubeconfig", "--set",
        "kubeletPlugin.numDevices=2", "--set", "kubeletPlugin.kubeletRegistrarDirectoryPath=" + node.plugins_registry,
        "--set", "kubeletPlugin.kubeletPluginsDirectoryPath=" + node.dir + "/kubelet/plugins",
        // The suite's API server admits no
        // privileged container; mock GPUs need none.
        "--set", "kubeletPlugin.containers.plugin.securityContext.privileged=false"};
    for (const std::string& set : sets) args.insert(args.end(), {"--set", set});
    RequireSuccess(Helm(args), "helm install dra-example-driver");
  }
  ~ReferenceDriver() { Uninstall(); }
  static testing::ProcessResult Uninstall() {
    return Helm({"uninstall", kRelease, "--namespace", kRelease, "--wait", "--ignore-not-found", "--kubeconfig",
                 ClusterDir() + "/admin.kubeconfig"});
  }
};

// The basic-resourceclaimtemplate demo's pod0 as `name`, with the node's
// workload image: one more pod with a GPU of its own claim.
json DemoPod(const std::string& name) {
  const std::string path =
      absl::StrCat(ReferenceDir(), "/demo/examples/basic-resourceclaimtemplate/basic-resourceclaimtemplate.yaml");
  for (json& object : ManifestObjects(testing::ReadFile(path), path)) {
    if (object["kind"] != "Pod" || object["metadata"]["name"] != "pod0") continue;
    object["metadata"]["name"] = name;
    object["spec"]["containers"][0]["image"] = kWorkloadImage;
    return object;
  }
  FAIL("no pod0 in " << path);
  return json();
}

// Whether the node's slices of the driver are the GPU example's (it gives
// its GPUs a productName; the reference does not).
bool PublishedByExample(Client& admin, const NodeEnv& node) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node.name, ",spec.driver=", kGpuDriver);
  absl::StatusOr<k8s::ListResult> slices = admin.List(k8s::kResourceSlices, "", options);
  if (!slices.ok() || slices->items.empty()) return false;
  for (const json& slice : slices->items) {
    for (const json& device : slice["spec"].value("devices", json::array())) {
      if (!device["attributes"].contains("productName")) return false;
    }
  }
  return true;
}

TEST_CASE(
    "taking over a node from dra-example-driver and rolling it back, pods running throughout: each driver "
    "unprepares the other's claims, new pods run on both, no CDI spec is left behind",
    "[e2e][runtime][gpu][reference]") {
  const NodeEnv node = RealNode();
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  std::unique_ptr<ReferenceDriver> reference = std::make_unique<ReferenceDriver>(node);
  // Declared before the workloads, so that it outlives them: the pods go
  // while a driver can unprepare their claims.
  std::unique_ptr<ReferenceInstall> example;
  REQUIRE(Eventually([&] { return PublishedDevices(*admin, node, kGpuDriver) == 2; }, kPodStart));
  const auto demo = ApplyReferenceDemo(*admin, "basic-resourceclaimtemplate");
  std::map<std::string, std::string> gpu_of;  // by pod
  std::map<std::string, std::string> claim_uid;
  const auto spec_of = [&](const std::string& pod) { return GpuClaimSpecFile(node, claim_uid[pod]); };
  const auto run_pod = [&](const std::string& pod) {
    ApplyObject(*admin, DemoPod(pod));
    const std::string log = ExportLog(demo->ns, pod, "ctr0");
    INFO(log);
    const std::vector<std::string> gpus = Gpus(log);
    REQUIRE(gpus.size() == 1);
    gpu_of[pod] = gpus[0];
    claim_uid[pod] =
        GetClaim(*admin, demo->ns, PodClaimName(RunningPod(*admin, demo->ns, pod), "gpu"))["metadata"]["uid"];
  };
  const auto delete_pod = [&](const std::string& pod) {
    REQUIRE(admin->Delete(kPods, demo->ns, pod).ok());
    CHECK(Eventually([&] { return absl::IsNotFound(admin->Get(kPods, demo->ns, pod).status()); }, kPodStart));
    CHECK(Eventually([&] { return !std::filesystem::exists(spec_of(pod)); }, kPodStart));
  };
  for (const char* name : {"pod0", "pod1"}) {
    const std::vector<std::string> gpus = Gpus(ExportLog(demo->ns, name, "ctr0"));
    REQUIRE(gpus.size() == 1);
    gpu_of[name] = gpus[0];
    const std::string claim = PodClaimName(RunningPod(*admin, demo->ns, name), "gpu");
    claim_uid[name] = GetClaim(*admin, demo->ns, claim)["metadata"]["uid"];
    CHECK(std::filesystem::exists(spec_of(name)));
  }

  // The swap: the reference goes, its pods run on; the example comes.
  reference.reset();
  example = std::make_unique<ReferenceInstall>();
  CHECK(Eventually([&] { return PublishedByExample(*admin, node); }, kPodStart));
  std::string log = example->driver_log();
  INFO("the example's log:\n" << log);
  for (const auto& [pod, uid] : claim_uid) CHECK(Logged(log, "Adopted a claim dra-example-driver prepared", uid) == 1);
  CHECK_FALSE(std::filesystem::exists(absl::StrCat(node.cdi_dir, "/k8s.", kGpuDriver, "-gpu_common.yaml")));
  for (const char* name : {"pod0", "pod1"}) CHECK(RunningPod(*admin, demo->ns, name)["status"]["phase"] == "Running");

  // The kubelet's unprepare of an adopted claim reaches the example, which
  // removes the reference's spec.
  REQUIRE(admin->Delete(kPods, demo->ns, "pod0").ok());
  CHECK(Eventually(
      [&] {
        log = example->driver_log();
        return Logged(log, "Unprepared claim", claim_uid["pod0"]) == 1;
      },
      kPodStart));
  CHECK_FALSE(std::filesystem::exists(spec_of("pod0")));

  // A new pod of the demo gets the GPU pod0 left, prepared by the example,
  // whose spec is named as the reference names its own.
  run_pod("pod2");
  CHECK(gpu_of["pod2"] == gpu_of["pod0"]);
  CHECK(std::filesystem::exists(spec_of("pod2")));
  const std::string checkpoint =
      testing::ReadFile(absl::StrCat(node.dir, "/kubelet/plugins/", kGpuDriver, "/checkpoint.json"));
  INFO("the reference's checkpoint, kept by the example:\n" << checkpoint);
  for (const char* pod : {"pod1", "pod2"}) CHECK(absl::StrContains(checkpoint, claim_uid[pod]));

  // The way back, pods running: the reference reads its checkpoint, and its
  // unprepare removes the spec of a claim the example prepared (pod2) as of
  // one it prepared itself before the swap (pod1).
  example.reset();
  reference = std::make_unique<ReferenceDriver>(node);
  REQUIRE(Eventually(
      [&] { return PublishedDevices(*admin, node, kGpuDriver) == 2 && !PublishedByExample(*admin, node); }, kPodStart));
  for (const char* name : {"pod1", "pod2"}) CHECK(RunningPod(*admin, demo->ns, name)["status"]["phase"] == "Running");
  delete_pod("pod2");
  run_pod("pod3");  // prepared by the reference
  delete_pod("pod1");
  for (const char* pod : {"pod0", "pod1", "pod2"}) CHECK_FALSE(std::filesystem::exists(spec_of(pod)));
  CHECK(std::filesystem::exists(spec_of("pod3")));
}

TEST_CASE(
    "the GPU example's image under dra-example-driver's own chart: it registers and publishes and passes "
    "the chart's gRPC liveness probe - the chart's claim controller runs from it - and the reference's demos "
    "run on it with device status and binding conditions under its RBAC",
    "[e2e][runtime][gpu][reference]") {
  const NodeEnv node = RealNode();
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  ImportDriverImage(kGpu, kImageTag);
  // Only the image changes: the chart runs dra-example-kubeletplugin with
  // its environment (HEALTHCHECK_PORT=51515, NUM_DEVICES=2, ...), and
  // dra-example-controller as a Deployment. Device status on: the chart
  // grants update, not patch, of the status.
  const ReferenceDriver swapped(
      node, {"image.repository=" + kGpu.image(), absl::StrCat("image.tag=", kImageTag), "gpuDeviceStatus=true",
             "kubeletPlugin.bindingConditions=true", "controller.plugins={BindingConditions}"});
  REQUIRE(Eventually([&] { return PublishedByExample(*admin, node); }, kPodStart));
  CHECK(PublishedDevices(*admin, node, kGpuDriver) == 2);
  std::string pod_name;
  k8s::ListOptions plugins;
  plugins.label_selector = "app.kubernetes.io/component=kubeletplugin";
  REQUIRE(Eventually(
      [&] {
        absl::StatusOr<k8s::ListResult> pods = admin->List(kPods, ReferenceDriver::kRelease, plugins);
        if (!pods.ok() || pods->items.size() != 1) return false;
        pod_name = pods->items[0]["metadata"]["name"];
        return true;
      },
      kPodStart));
  // The kubelet's gRPC probe of service "liveness" on port 51515 succeeded.
  CHECK(Eventually([&] { return LivenessProbePassed(node, pod_name); }, kPodStart));

  auto demo = ApplyReferenceDemo(*admin, "basic-resourceclaimtemplate");
  std::set<std::string> seen;
  for (const char* name : {"pod0", "pod1"}) {
    CheckGpus(ExportLog(demo->ns, name, "ctr0"), 1, seen);
    CheckDeviceStatus(*admin, demo->ns, name);
  }
  demo.reset();  // the node's two GPUs free again
  // Every device carries binding conditions, which the plugin and the
  // controller both set (two field managers, both writing by GET and PUT
  // under this chart's RBAC): the device status stays beside them.
  const auto bound = ApplyReferenceDemo(*admin, "binding-conditions");
  std::set<std::string> bound_gpus;
  CheckGpus(ExportLog(bound->ns, "pod0", "ctr0"), 1, bound_gpus);
  CheckDeviceStatus(*admin, bound->ns, "pod0");
  // The chart's claim controller: its pod (app.kubernetes.io/component=
  // controller) runs the image's dra-example-controller.
  k8s::ListOptions controllers;
  controllers.label_selector = "app.kubernetes.io/component=controller";
  absl::StatusOr<k8s::ListResult> pods = admin->List(kPods, ReferenceDriver::kRelease, controllers);
  REQUIRE(pods.ok());
  REQUIRE(pods->items.size() == 1);
  const std::string controller = pods->items[0]["metadata"]["name"];
  CHECK_THAT(WaitForLog(ReferenceDriver::kRelease, controller, "controller", "\"Controller started\""),
             Catch::Contains("plugins=\"BindingConditions\""));
}

}  // namespace
}  // namespace dra::e2e
