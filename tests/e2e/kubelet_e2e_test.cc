// The kubelet side end to end: a driver on the Helper, with its claims read
// from a real kube-apiserver (through Options::kube_client, as a driver's
// service account), registered and driven by the kubelet's own plugin
// manager and DRA client (tests/e2e/kubeletpeer). Then the whole path: the
// Helper publishes ResourceSlices (PublishResources), a Node, a DeviceClass,
// a ResourceClaim and a Pod; the real kube-scheduler allocates from our
// slices and binds the pod; the kubelet peer prepares the claim through the
// Helper, which writes the claim's CDI spec.
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/resourceslice/split.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "support/cdi_schema_validator.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra::e2e {
namespace {

using k8s::Client;
using k8s::kDeviceClasses;
using k8s::kNodes;
using k8s::kResourceClaims;
using k8s::kResourceSlices;
using k8s::PatchOptions;
using k8s::PatchType;
using k8s::ResourceRef;
using nlohmann::json;
using testing::kTestDriverName;
using testing::TestDriver;

const ResourceRef kServiceAccounts{"", "v1", "serviceaccounts", true};

// The service account identity (cluster.sh) this driver runs as.
constexpr char kIdentity[] = "minimal-driver";

// The kubelet peer binary, built or found by build-k8s.sh (the e2e_kubeletpeer
// fixture has built it).
std::string KubeletPeerPath() {
  absl::StatusOr<testing::ProcessResult> dir = testing::RunProcess({DRA_E2E_BUILD_K8S, "--print-dir", "kubeletpeer"});
  REQUIRE(dir.ok());
  INFO(dir->err);
  REQUIRE(dir->exit_code == 0);
  std::string path = dir->out.substr(0, dir->out.find('\n')) + "/kubeletpeer";
  REQUIRE(std::filesystem::exists(path));
  return path;
}

// A node's driver: TestDriver on a Helper whose claims come from the API
// server through the driver identity's client, sockets in a temp dir.
struct NodePlugin {
  testing::TempDir dir;
  TestDriver driver;
  std::unique_ptr<kubeletplugin::Helper> helper;

  // With `metadata` on, the driver returns device metadata (TestDriver::
  // ReturnMetadata) and the Helper writes it.
  explicit NodePlugin(const std::string& node, const kubeletplugin::DeviceMetadataOptions& metadata = {}) {
    kubeletplugin::Options options;
    options.device_metadata = metadata;
    if (metadata.enabled) driver.ReturnMetadata();
    options.driver_name = kTestDriverName;
    options.node_name = node;
    options.registrar_dir = dir.Join("plugins_registry");
    options.plugin_data_dir = dir.Join("plugins/" + std::string(kTestDriverName));
    std::filesystem::create_directories(options.registrar_dir);
    // As the Go helper's KubeClient: claims and slices through one client.
    options.kube_client = MakeClient(DriverConfig(kIdentity));
    options.cdi.dir.path = dir.Join("cdi");
    absl::StatusOr<std::unique_ptr<kubeletplugin::Helper>> started = kubeletplugin::Helper::Start(driver, options);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    helper = *std::move(started);
  }

  // Runs the kubelet peer against this plugin's registry dir: registration,
  // then `steps` for `claims` ("NS/NAME/UID"). Returns its JSON lines by step.
  std::map<std::string, std::vector<json>> RunKubelet(const std::vector<std::string>& claims,
                                                      const std::string& steps) {
    std::vector<std::string> argv = {KubeletPeerPath(),
                                     "--registry-dir",
                                     dir.Join("plugins_registry"),
                                     "--driver",
                                     kTestDriverName,
                                     "--timeout",
                                     "30s",
                                     "--steps",
                                     steps};
    for (const std::string& claim : claims) {
      argv.push_back("--claim");
      argv.push_back(claim);
    }
    absl::StatusOr<testing::ProcessResult> run = testing::RunProcess(argv);
    REQUIRE(run.ok());
    INFO("kubeletpeer exit " << run->exit_code << "\nstdout:\n" << run->out << "\nstderr:\n" << run->err);
    REQUIRE(run->exit_code == 0);
    std::map<std::string, std::vector<json>> by_step;
    std::istringstream lines(run->out);
    for (std::string line; std::getline(lines, line);) {
      json event = json::parse(line);
      by_step[event["step"].get<std::string>()].push_back(event);
    }
    return by_step;
  }
};

std::string ClaimArg(const std::string& ns, const std::string& name, const std::string& uid) {
  return absl::StrCat(ns, "/", name, "/", uid);
}

// Writes status.allocation as the scheduler would: `devices` of our driver
// from pool `node`, plus one device of another driver that the Helper must
// hide from ours.
void Allocate(Client& admin, const std::string& ns, const std::string& name, const std::string& node,
              const std::vector<std::string>& devices) {
  json results = json::array();
  for (const std::string& device : devices) {
    results.push_back({{"request", "gpu"}, {"driver", kTestDriverName}, {"pool", node}, {"device", device}});
  }
  results.push_back({{"request", "gpu"}, {"driver", "other.example.com"}, {"pool", node}, {"device", "nic-0"}});
  json requirement = {{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({node})}};
  json allocation = {
      {"devices", {{"results", results}}},
      {"nodeSelector", {{"nodeSelectorTerms", json::array({{{"matchFields", json::array({requirement})}}})}}}};
  PatchOptions status;
  status.subresource = "status";
  absl::StatusOr<json> patched =
      admin.Patch(kResourceClaims, ns, name, PatchType::kMerge, json{{"status", {{"allocation", allocation}}}}, status);
  INFO(patched.status().ToString());
  REQUIRE(patched.ok());
}

// The driver identity may read claims in `ns` (what a driver's ClusterRole
// gives it); waits until the authorizer agrees.
void AllowClaimReads(Client& admin, const std::string& ns, const std::string& probe_claim) {
  auto driver = MakeClient(DriverConfig(kIdentity));
  Grant(admin, DriverUser(kIdentity), ns,
        json::array({{{"apiGroups", json::array({"resource.k8s.io"})},
                      {"resources", json::array({"resourceclaims"})},
                      {"verbs", json::array({"get"})}}}),
        [&] { return driver->Get(kResourceClaims, ns, probe_claim).ok(); });
}

std::vector<std::string> DeviceNames(const json& claim_response) {
  std::vector<std::string> names;
  for (const json& device : claim_response.value("devices", json::array())) {
    names.push_back(device["device_name"].get<std::string>());
  }
  return names;
}

TEST_CASE("kubelet peer -> Helper -> ApiClaimSource: claims from the API server, bad claims fail alone",
          "[e2e][kubelet]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-kubelet");
  const std::string node = UniqueName("node");
  const std::string allocated = CreateClaim(*admin, ns, "allocated", "gpu.example.com");
  Allocate(*admin, ns, "allocated", node, {"gpu-0", "gpu-1"});
  const std::string unallocated = CreateClaim(*admin, ns, "unallocated", "gpu.example.com");
  AllowClaimReads(*admin, ns, "allocated");

  NodePlugin plugin(node);
  const std::string stale_uid = "00000000-0000-0000-0000-000000000001";
  auto steps = plugin.RunKubelet({ClaimArg(ns, "allocated", allocated), ClaimArg(ns, "unallocated", unallocated),
                                  ClaimArg(ns, "allocated", stale_uid), ClaimArg(ns, "missing", "uid-missing")},
                                 "register,prepare,unprepare");
  INFO(json(steps).dump(1));

  REQUIRE(steps["register"].size() == 1);
  CHECK(steps["register"][0]["endpoint"] == plugin.helper->dra_socket_path());
  REQUIRE(steps["prepare"].size() == 1);
  const json& claims = steps["prepare"][0]["response"]["claims"];

  // The allocated claim: both of our devices, the other driver's hidden.
  const json& good = claims[allocated];
  CHECK_FALSE(good.contains("error"));
  CHECK(DeviceNames(good) == std::vector<std::string>{"gpu-0", "gpu-1"});
  CHECK(good["devices"][0]["cdi_device_ids"] == json::array({TestDriver::CdiId(allocated, "gpu-0")}));
  CHECK(good["devices"][0]["pool_name"] == node);
  CHECK(good["devices"][0]["request_names"] == json::array({"gpu"}));

  // Each bad claim fails alone, with the reason.
  CHECK_THAT(claims[unallocated].value("error", ""), Catch::Contains("not allocated"));
  CHECK_THAT(claims[stale_uid].value("error", ""), Catch::Contains("got replaced"));
  CHECK_THAT(claims["uid-missing"].value("error", ""), Catch::Contains("not found"));
  CHECK(plugin.driver.prepared_uids() == std::vector<std::string>{allocated});

  REQUIRE(steps["unprepare"].size() == 1);
  const json& unprepared = steps["unprepare"][0]["response"]["claims"];
  CHECK_FALSE(unprepared[allocated].contains("error"));
  const std::vector<std::string> driver_unprepared = plugin.driver.unprepared_uids();
  CHECK(std::count(driver_unprepared.begin(), driver_unprepared.end(), allocated) == 1);
}

TEST_CASE("device metadata written by the Helper reads back with the upstream decoder, valid", "[e2e][kubelet]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-metadata");
  const std::string node = UniqueName("node");
  const std::string uid = CreateClaim(*admin, ns, "c", "gpu.example.com");
  Allocate(*admin, ns, "c", node, {"gpu-0"});
  AllowClaimReads(*admin, ns, "c");

  kubeletplugin::DeviceMetadataOptions metadata;
  metadata.enabled = true;
  metadata.versions = {kubeletplugin::kDeviceMetadataV1beta1, kubeletplugin::kDeviceMetadataV1alpha1};
  NodePlugin plugin(node, metadata);
  auto steps = plugin.RunKubelet({ClaimArg(ns, "c", uid)}, "register,prepare");
  INFO(json(steps).dump(1));
  REQUIRE(steps["prepare"].size() == 1);
  const json& prepared = steps["prepare"][0]["response"]["claims"][uid];
  CHECK(prepared["devices"][0]["cdi_device_ids"].back() == "gpu.example.com/metadata=" + uid + "_gpu");

  const std::string file =
      plugin.dir.Join("plugins/gpu.example.com/dra-device-metadata/" + ns + "_c/gpu/metadata.json");
  absl::StatusOr<testing::ProcessResult> decoded = testing::RunProcess({KubeletPeerPath(), "decode-metadata", file});
  REQUIRE(decoded.ok());
  INFO(decoded->out << decoded->err);
  REQUIRE(decoded->exit_code == 0);
  const json line = json::parse(decoded->out);
  CHECK(line["apiVersion"] == "metadata.resource.k8s.io/v1beta1");
  CHECK(line["validation"] == "");
  const json& object = line["object"];
  CHECK(object["name"] == "c");
  CHECK(object["namespace"] == ns);
  CHECK(object["uid"] == uid);
  CHECK(object["generation"] == 1);
  REQUIRE(object["Requests"].size() == 1);
  CHECK(object["Requests"][0]["Name"] == "gpu");
  const json& device = object["Requests"][0]["Devices"][0];
  CHECK(device["Driver"] == kTestDriverName);
  CHECK(device["Pool"] == node);
  CHECK(device["Name"] == "gpu-0");
  CHECK(device["Attributes"]["model"]["string"] == "a100");
  CHECK(device["Attributes"]["resource.kubernetes.io/pciBusID"]["string"] == "0000:3b:00.0");
  CHECK(device["NetworkData"]["interfaceName"] == "net-gpu-0");
}

json NodeObject(const std::string& name) {
  return json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}}};
}

json ReadyNodeStatus() {
  return json{{"status",
               {{"capacity", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
                {"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
                {"conditions", json::array({{{"type", "Ready"},
                                             {"status", "True"},
                                             {"reason", "KubeletReady"},
                                             {"message", "e2e"},
                                             {"lastHeartbeatTime", "2026-01-01T00:00:00Z"},
                                             {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}}}};
}

// Two GPUs of our driver on this node. Their "run" attribute ties them to
// this test's DeviceClass, so that pods other runs left pending on the same
// cluster cannot take them.
resourceslice::DriverResources NodeGpus(const std::string& node, const std::string& run) {
  std::vector<k8s::Device> devices(2);
  for (int i = 0; i < 2; ++i) {
    devices[i].name = absl::StrCat("gpu-", i);
    devices[i].attributes["model"].string_value = "e2e-1000";
    devices[i].attributes["run"].string_value = run;
  }
  resourceslice::DriverResources resources;
  resources.pools[node].slices = resourceslice::SplitIntoSlices(std::move(devices));
  return resources;
}

TEST_CASE(
    "kube-scheduler allocates from slices published with the SDK, binds the pod, and the kubelet peer prepares it",
    "[e2e][kubelet][scheduler]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-schedule");
  const std::string node = UniqueName("node");
  const std::string device_class = UniqueName("gpu-class");

  REQUIRE(admin->Create(kNodes, "", NodeObject(node)).ok());
  PatchOptions status;
  status.subresource = "status";
  absl::StatusOr<json> ready = admin->Patch(kNodes, "", node, PatchType::kMerge, ReadyNodeStatus(), status);
  INFO(ready.status().ToString());
  REQUIRE(ready.ok());
  // The TaintNodesByCondition admission plugin taints a new node not-ready;
  // without a node lifecycle controller nobody lifts it.
  absl::StatusOr<json> untainted =
      admin->Patch(kNodes, "", node, PatchType::kMerge, json{{"spec", {{"taints", nullptr}}}}, PatchOptions{});
  INFO(untainted.status().ToString());
  REQUIRE(untainted.ok());

  // The driver's rights for publishing (what its ClusterRole gives it).
  auto driver = MakeClient(DriverConfig(kIdentity));
  Grant(*admin, DriverUser(kIdentity), "", SlicePublisherRules(),
        [&] { return driver->List(kResourceSlices, "").ok() && driver->Get(kNodes, "", node).ok(); });
  NodePlugin plugin(node);
  plugin.driver.ReturnCdiEdits();
  REQUIRE(plugin.helper->PublishResources(NodeGpus(node, device_class)).ok());
  k8s::ListOptions ours;
  ours.field_selector = absl::StrCat("spec.nodeName=", node);
  REQUIRE(Eventually([&] {
    absl::StatusOr<k8s::ListResult> slices = admin->List(kResourceSlices, "", ours);
    return slices.ok() && slices->items.size() == 1;
  }));
  CHECK(plugin.driver.errors().empty());

  REQUIRE(admin->Create(kDeviceClasses, "", DriverDeviceClass(device_class, kTestDriverName, device_class)).ok());
  const std::string claim_uid = CreateClaim(*admin, ns, "gpu", device_class);
  // Pods need their service account. Only the node's controller-manager
  // (cluster.sh node-start) creates it, and it may run beside this test.
  absl::StatusOr<json> account =
      admin->Create(kServiceAccounts, ns,
                    json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "default"}}}});
  INFO(account.status().ToString());
  REQUIRE((account.ok() || absl::IsAlreadyExists(account.status())));
  absl::StatusOr<json> pod =
      admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"gpu", "gpu"}}, /*template_claims=*/false));
  INFO(pod.status().ToString());
  REQUIRE(pod.ok());

  json bound;
  const bool scheduled = Eventually(
      [&] {
        absl::StatusOr<json> got = admin->Get(kPods, ns, "app");
        if (!got.ok()) return false;
        bound = *got;
        return !bound["spec"].value("nodeName", "").empty();
      },
      absl::Seconds(60));
  INFO("the pod as last seen: " << bound.dump(1));
  REQUIRE(scheduled);
  CHECK(bound["spec"]["nodeName"] == node);

  absl::StatusOr<json> claim = admin->Get(kResourceClaims, ns, "gpu");
  REQUIRE(claim.ok());
  INFO(claim->dump(1));
  const json& results = (*claim)["status"]["allocation"]["devices"]["results"];
  REQUIRE(results.size() == 1);
  CHECK(results[0]["driver"] == kTestDriverName);
  CHECK(results[0]["pool"] == node);
  const std::string device = results[0]["device"].get<std::string>();
  CHECK((device == "gpu-0" || device == "gpu-1"));
  CHECK((*claim)["status"]["reservedFor"][0]["name"] == "app");

  AllowClaimReads(*admin, ns, "gpu");
  auto steps = plugin.RunKubelet({ClaimArg(ns, "gpu", claim_uid)}, "register,prepare");
  INFO(json(steps).dump(1));
  REQUIRE(steps["prepare"].size() == 1);
  const json& prepared = steps["prepare"][0]["response"]["claims"][claim_uid];
  CHECK_FALSE(prepared.contains("error"));
  CHECK(DeviceNames(prepared) == std::vector<std::string>{device});
  // The Helper wrote the claim's CDI spec; the ID points into it.
  const std::string kind = absl::StrCat(kTestDriverName, "/claim");
  CHECK(prepared["devices"][0]["cdi_device_ids"] == json::array({absl::StrCat(kind, "=", claim_uid, "-", device)}));
  const std::string spec_path = plugin.dir.Join(absl::StrCat("cdi/", kTestDriverName, "-claim_", claim_uid, ".json"));
  const std::string spec_text = testing::ReadFile(spec_path);
  CHECK(testing::CdiSchemaValidator::Reference().ValidateText(spec_text).empty());
  const json spec = json::parse(spec_text);
  CHECK(spec["kind"] == kind);
  CHECK(spec["devices"][0]["name"] == absl::StrCat(claim_uid, "-", device));
  CHECK(plugin.driver.errors().empty());
}

}  // namespace
}  // namespace dra::e2e
