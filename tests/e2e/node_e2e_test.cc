// DRA drivers on the suite's real node (cluster.sh node-start): the kubelet
// of Kubernetes v1.37.2 with the CRI stand-in (tests/e2e/cri) as its
// container runtime, kube-controller-manager and kube-scheduler. Pods with
// claims go the whole way: claims generated from templates, allocation,
// binding, the kubelet's NodePrepareResources, the CDI IDs in CRI
// CreateContainer resolved by the CDI library, the pod Running; and back:
// containers stopped, NodeUnprepareResources, the claim deallocated and
// deleted. Also what the kubelet does around a driver: wiping the node's
// slices when it starts and 30 s after a driver left, failed claims as pod
// events, device health in the pod status.
//
// The node is shared: these tests run one at a time (RESOURCE_LOCK), each
// with a driver name of its own.

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "dra/resourceslice/split.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "e2e/node_driver.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra::e2e {
namespace {

using k8s::Client;
using k8s::kDeviceClasses;
using k8s::kResourceClaims;
using k8s::kResourceSlices;
using nlohmann::json;

// The node tests' driver (node_test_driver.cc) as a process on the node: it registers with the kubelet,
// reads claims from the API server and publishes its two devices as the
// node's pool; /metrics on a port of its own.
class MinimalDriver : public DriverProcess {
 public:
  MinimalDriver(const NodeEnv& node, std::string name) : DriverProcess(node, std::move(name)), node_(node) {}

  void Start(const std::vector<std::string>& env = {}, const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {DRA_NODE_TEST_DRIVER,
                                     "--registrar-dir",
                                     node_.plugins_registry,
                                     "--plugin-data-dir",
                                     node_.plugins_dir + "/" + name(),
                                     "--cdi-dir",
                                     node_.cdi_dir,
                                     "--driver-name",
                                     name(),
                                     "--kubeconfig",
                                     DriverKubeconfig(),
                                     "--node-name",
                                     node_.name,
                                     "--http-endpoint",
                                     HttpEndpoint()};
    argv.insert(argv.end(), args.begin(), args.end());
    DriverProcess::Start(argv, env);
  }

 private:
  const NodeEnv node_;
};

json ClaimTemplate(const std::string& ns, const std::string& name, const std::string& device_class, int count) {
  json request = {{"name", "dev"}, {"exactly", {{"deviceClassName", device_class}, {"count", count}}}};
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaimTemplate"},
              {"metadata", {{"namespace", ns}, {"name", name}}},
              {"spec", {{"spec", {{"devices", {{"requests", json::array({request})}}}}}}}};
}

json GetOrFail(Client& admin, const k8s::ResourceRef& ref, const std::string& ns, const std::string& name) {
  absl::StatusOr<json> object = admin.Get(ref, ns, name);
  INFO(ref.resource << " " << ns << "/" << name << ": " << object.status().ToString());
  REQUIRE(object.ok());
  return *object;
}

bool Gone(Client& admin, const k8s::ResourceRef& ref, const std::string& ns, const std::string& name) {
  return absl::IsNotFound(admin.Get(ref, ns, name).status());
}

// A namespace with the minimal driver on the node (with `driver_env`), a
// DeviceClass of its devices and a template for `devices` of them; then a
// pod using one claim from that template, Running (with `wait`; else
// WaitRunning() waits).
struct RunningPod {
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  NodeEnv node = Node();
  std::string ns = CreateNamespace(*admin, "e2e-node");
  MinimalDriver driver{node, UniqueName("minimal") + ".example.com"};
  json pod;
  std::string pod_uid;
  std::string claim_name;
  std::string claim_uid;

  explicit RunningPod(int devices, const std::vector<std::string>& driver_env = {}, bool wait = true,
                      const std::vector<std::string>& driver_args = {}) {
    GrantDriverRights(*admin, ns, node.name);
    driver.Start(driver_env, driver_args);
    REQUIRE(Eventually([&] { return !SliceUids(*admin, node.name, driver.name()).empty(); }));
    const std::string device_class = UniqueName("minimal");
    REQUIRE(admin->Create(kDeviceClasses, "", DriverDeviceClass(device_class, driver.name())).ok());
    REQUIRE(admin->Create(kResourceClaimTemplates, ns, ClaimTemplate(ns, "devices", device_class, devices)).ok());
    absl::StatusOr<json> created = admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"devices", "devices"}}));
    INFO(created.status().ToString());
    REQUIRE(created.ok());
    pod_uid = (*created)["metadata"]["uid"].get<std::string>();
    if (wait) WaitRunning();
  }

  void WaitRunning() {
    const bool running = WaitForPod(*admin, ns, "app", PodRunning, &pod);
    INFO("the pod as last seen: " << pod.dump(1) << "\nits events:\n"
                                  << absl::StrJoin(PodEvents(*admin, ns, "app"), "\n") << "\nthe driver's log:\n"
                                  << driver.Log());
    REQUIRE(running);
    claim_name = GeneratedClaimName(pod, "devices");
    REQUIRE_FALSE(claim_name.empty());
    claim_uid = GetOrFail(*admin, kResourceClaims, ns, claim_name)["metadata"]["uid"].get<std::string>();
  }

  // Deletes the pod and waits until the kubelet has unprepared the claim
  // (its CDI spec is gone) and the controller has deleted the claim.
  void DeleteAndWaitForCleanUp() {
    REQUIRE(admin->Delete(kPods, ns, "app").ok());
    CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
    CHECK(Eventually([&] { return !std::filesystem::exists(driver.CdiSpecFile(claim_uid)); }, absl::Seconds(60)));
    CHECK(Eventually([&] { return Gone(*admin, kResourceClaims, ns, claim_name); }, absl::Seconds(60)));
    INFO(driver.Log());
    CHECK(driver.LoggedFor("Unprepared claim", claim_uid) == 1);
  }
};

TEST_CASE("a pod with a ResourceClaimTemplate runs on the node with the driver's CDI devices, and is cleaned up",
          "[e2e][node]") {
  RunningPod run(/*devices=*/2);

  // The controller-manager generated the claim; the scheduler allocated both
  // devices from the driver's slice and reserved the claim for the pod.
  const json claim = GetOrFail(*run.admin, kResourceClaims, run.ns, run.claim_name);
  INFO(claim.dump(1));
  CHECK(claim["metadata"]["ownerReferences"][0]["uid"] == run.pod_uid);
  std::set<std::string> devices;
  for (const json& result : claim["status"]["allocation"]["devices"]["results"]) {
    CHECK(result["driver"] == run.driver.name());
    CHECK(result["pool"] == run.node.name);
    devices.insert(result["device"].get<std::string>());
  }
  CHECK(devices == std::set<std::string>{"dev-0", "dev-1"});
  CHECK(claim["status"]["reservedFor"][0]["uid"] == run.pod_uid);
  CHECK(run.driver.LoggedFor("Prepared claim", run.claim_uid) == 1);

  // The runtime got exactly the driver's CDI IDs and the CDI library
  // resolved them from the spec the Helper wrote: one variable per device.
  const std::vector<json> containers = CriContainers(run.node, run.pod_uid);
  INFO(json(containers).dump(1));
  REQUIRE(containers.size() == 1);
  const json& container = containers[0];
  CHECK(container["containerName"] == "app");
  CHECK(container["error"] == "");
  std::vector<std::string> cdi_ids = container["cdiDevices"].get<std::vector<std::string>>();
  std::sort(cdi_ids.begin(), cdi_ids.end());
  CHECK(cdi_ids ==
        std::vector<std::string>{run.driver.CdiId(run.claim_uid, "dev-0"), run.driver.CdiId(run.claim_uid, "dev-1")});
  const std::vector<std::string> env = container["env"].get<std::vector<std::string>>();
  CHECK(std::count(env.begin(), env.end(), "MINIMAL_DEVICE_DEV_0=dev-0") == 1);
  CHECK(std::count(env.begin(), env.end(), "MINIMAL_DEVICE_DEV_1=dev-1") == 1);
  CHECK(std::filesystem::exists(run.driver.CdiSpecFile(run.claim_uid)));

  run.DeleteAndWaitForCleanUp();
  CHECK(run.driver.LoggedFor("Prepared claim", run.claim_uid) == 1);
}

// KEP-5945, gate DRAOptionalNodeOperations (on in this cluster): the kubelet
// declares the feature in the Node's status, the scheduler copies the pool's
// skipNodeOperations into the allocation, and the kubelet makes neither call
// for the claim. The test above is the pod whose claim is prepared.
TEST_CASE("optional node operations: a claim whose devices skip both kubelet calls is never prepared, and its pod runs",
          "[e2e][node]") {
  RunningPod run(/*devices=*/1, {}, /*wait=*/true, {"--skip-node-operations", "*"});
  const json node = GetOrFail(*run.admin, k8s::kNodes, "", run.node.name);
  INFO(node["status"].value("declaredFeatures", json::array()).dump());
  CHECK(absl::c_linear_search(node["status"].value("declaredFeatures", std::vector<std::string>{}),
                              "DRAOptionalNodeOperations"));
  const json claim = GetOrFail(*run.admin, kResourceClaims, run.ns, run.claim_name);
  INFO(claim.dump(1));
  REQUIRE(claim["status"]["allocation"]["devices"]["results"].size() == 1);
  const json& result = claim["status"]["allocation"]["devices"]["results"][0];
  CHECK(result["driver"] == run.driver.name());
  CHECK(result["skipNodeOperations"] == json::array({"*"}));
  const std::vector<json> containers = CriContainers(run.node, run.pod_uid);
  REQUIRE(containers.size() == 1);
  CHECK(containers[0].value("cdiDevices", json::array()).empty());

  REQUIRE(run.admin->Delete(kPods, run.ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*run.admin, kPods, run.ns, "app"); }, absl::Seconds(90)));
  CHECK(Eventually([&] { return Gone(*run.admin, kResourceClaims, run.ns, run.claim_name); }, absl::Seconds(60)));
  INFO(run.driver.Log());
  CHECK(run.driver.LoggedFor("Prepared claim", run.claim_uid) == 0);
  CHECK(run.driver.LoggedFor("Unprepared claim", run.claim_uid) == 0);
}

TEST_CASE(
    "the kubelet restarted under a running pod: the driver is registered again, the node's slices are "
    "wiped and restored, no claim is "
    "prepared twice, and the claim is unprepared from the kubelet's checkpoint",
    "[e2e][node]") {
  RunningPod run(/*devices=*/1);
  const std::set<std::string> slices_before = SliceUids(*run.admin, run.node.name, run.driver.name());
  const size_t containers_before = CriContainers(run.node, run.pod_uid).size();

  auto registrations = [&] {
    const std::string log = run.driver.Log();
    int n = 0;
    for (size_t at = log.find("Registered with the kubelet"); at != std::string::npos;
         at = log.find("Registered with the kubelet", at + 1)) {
      ++n;
    }
    return n;
  };
  const int registered_before = registrations();
  const absl::Time restart_began = absl::Now();
  RestartKubelet();
  const absl::Time restarted = absl::Now();
  // The restarted kubelet's plugin manager finds the registration socket
  // and registers the driver again (its reconciler runs every second),
  // usually before its /healthz answers.
  REQUIRE(Eventually([&] { return registrations() > registered_before; }, absl::Seconds(30)));
  WARN("the driver was registered again " << absl::FormatDuration(absl::Now() - restart_began)
                                          << " after the kubelet's restart began (stop, start, /healthz: "
                                          << absl::FormatDuration(restarted - restart_began) << ")");
  // The kubelet deletes every slice of its node when it starts (retrying
  // with its own backoff, 1 s doubling, while the API server refuses); the
  // driver's publisher sees them go and creates them again.
  std::set<std::string> slices_after;
  const bool restored = Eventually(
      [&] {
        slices_after = SliceUids(*run.admin, run.node.name, run.driver.name());
        return !slices_after.empty() && std::none_of(slices_after.begin(), slices_after.end(),
                                                     [&](const auto& uid) { return slices_before.count(uid) > 0; });
      },
      absl::Minutes(3));
  INFO("slices before: " << absl::StrJoin(slices_before, ",") << ", after: " << absl::StrJoin(slices_after, ","));
  INFO("the kubelet on ResourceSlices:\n" << KubeletLogLines("ResourceSlice"));
  INFO("the driver:\n" << run.driver.Log());
  REQUIRE(restored);
  WARN("slices restored " << absl::FormatDuration(absl::Now() - restarted) << " after the kubelet was up again");

  // The pod's sandbox survived in the runtime, so the kubelet creates
  // nothing and prepares nothing again; the pod stays Running.
  json pod;
  REQUIRE(WaitForPod(*run.admin, run.ns, "app", PodRunning, &pod));
  CHECK(pod["metadata"]["uid"] == run.pod_uid);
  CHECK(CriContainers(run.node, run.pod_uid).size() == containers_before);
  CHECK(run.driver.LoggedFor("Prepared claim", run.claim_uid) == 1);

  // The claim survived the restart in the kubelet's dra_manager_state: the
  // restarted kubelet unprepares it when the pod goes.
  run.DeleteAndWaitForCleanUp();
}

TEST_CASE(
    "the driver dies in the kubelet's prepare call and is started again: the kubelet's retry prepares the "
    "claim and the pod runs",
    "[e2e][node]") {
  // The driver dies (_exit) after its own prepare of the claim, before the
  // Helper wrote the claim's CDI spec and recorded it prepared.
  RunningPod run(/*devices=*/1, {"DRA_CRASH_POINT=prepare.after_driver:1"}, /*wait=*/false);
  std::string how;
  REQUIRE(Eventually([&] { return run.driver.Exited(&how); }, absl::Seconds(90)));
  INFO(run.driver.Log());
  REQUIRE(how == "exited with status 137");
  REQUIRE_THAT(run.driver.Log(), Catch::Contains("dra crash point prepare.after_driver hit 1"));

  run.driver.Start();
  run.WaitRunning();
  CHECK(std::filesystem::exists(run.driver.CdiSpecFile(run.claim_uid)));
  run.DeleteAndWaitForCleanUp();
}

TEST_CASE(
    "a driver gone for more than 30 s: the kubelet wipes its slices, and back, it re-registers and republishes "
    "and no claim is prepared twice",
    "[e2e][node]") {
  RunningPod run(/*devices=*/1);
  run.driver.Stop();
  const absl::Time stopped = absl::Now();
  // The driver leaves its slices (the kubelet owns their removal) ...
  CHECK_FALSE(SliceUids(*run.admin, run.node.name, run.driver.name()).empty());
  // ... which the kubelet deletes once the driver has been away for 30 s.
  REQUIRE(
      Eventually([&] { return SliceUids(*run.admin, run.node.name, run.driver.name()).empty(); }, absl::Seconds(90)));
  WARN("the kubelet wiped the stopped driver's slices after " << absl::FormatDuration(absl::Now() - stopped));

  run.driver.Start();
  CHECK(Eventually([&] { return !SliceUids(*run.admin, run.node.name, run.driver.name()).empty(); }));
  json pod;
  REQUIRE(WaitForPod(*run.admin, run.ns, "app", PodRunning, &pod));
  CHECK(run.driver.LoggedFor("Prepared claim", run.claim_uid) == 1);
  // The restarted driver unprepares what the first one prepared.
  run.DeleteAndWaitForCleanUp();
  CHECK(run.driver.LoggedFor("Prepared claim", run.claim_uid) == 1);
}

// An in-process driver on the node: TestDriver on a Helper with the node's
// directories, for faults and health reports the test controls. It
// publishes two devices of kTestDriverName with a per-run attribute, so that
// the DeviceClass of this run takes only them.
constexpr char kIsPrepared[] = "gpu.example.com/is-prepared";
constexpr char kPreparingFailed[] = "gpu.example.com/preparing-failed";

struct InProcessSetup {
  // Publish the devices as pool "fabric-<run>" with this node selector
  // instead of on the node, as fabric-attached devices: bindsToNode, binding
  // condition kIsPrepared, failure condition kPreparingFailed.
  std::optional<k8s::NodeSelector> fabric;
  // Device metadata (KEP-5304) on.
  bool metadata = false;
};

struct InProcessDriver {
  NodeEnv node = Node();
  testing::TestDriver driver{/*reports_health=*/true};
  std::string run = UniqueName("run");
  std::string pool;
  std::unique_ptr<kubeletplugin::Helper> helper;

  InProcessDriver(Client& admin, const std::string& ns, InProcessSetup setup = {}) {
    GrantDriverRights(admin, ns, node.name);
    cdi::ContainerEdits edits;
    edits.env = {"E2E_RUN=" + run};
    driver.ReturnCdiEdits(edits);
    kubeletplugin::Options options;
    options.driver_name = testing::kTestDriverName;
    options.node_name = node.name;
    options.registrar_dir = node.plugins_registry;
    options.plugin_data_dir = absl::StrCat(node.plugins_dir, "/", testing::kTestDriverName);
    options.kube_client = MakeClient(DriverConfig(kDriverIdentity));
    options.cdi.dir.path = node.cdi_dir;
    if (setup.metadata) {
      options.device_metadata.enabled = true;
      options.device_metadata.versions = {kubeletplugin::kDeviceMetadataV1beta1};
      driver.ReturnMetadata();
    }
    absl::StatusOr<std::unique_ptr<kubeletplugin::Helper>> started = kubeletplugin::Helper::Start(driver, options);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    helper = *std::move(started);
    PublishHealth(kubeletplugin::HealthStatus::kHealthy);

    std::vector<k8s::Device> devices(2);
    for (int i = 0; i < 2; ++i) {
      devices[i].name = absl::StrCat("gpu-", i);
      devices[i].attributes["run"].string_value = run;
      if (setup.fabric.has_value()) {
        devices[i].binds_to_node = true;
        devices[i].binding_conditions = {kIsPrepared};
        devices[i].binding_failure_conditions = {kPreparingFailed};
      }
    }
    resourceslice::DriverResources resources;
    pool = setup.fabric.has_value() ? "fabric-" + run : node.name;
    resourceslice::Pool& published = resources.pools[pool];
    published.slices = resourceslice::SplitIntoSlices(std::move(devices));
    if (setup.fabric.has_value()) {
      published.nodes = resourceslice::NodeSelection::kNodeSelector;
      published.node_selector = *setup.fabric;
    }
    REQUIRE(helper->PublishResources(std::move(resources)).ok());
    // By driver only: spec.pool.name is a field label from Kubernetes 1.37.
    k8s::ListOptions mine;
    mine.field_selector = absl::StrCat("spec.driver=", testing::kTestDriverName);
    REQUIRE(Eventually([&] {
      absl::StatusOr<k8s::ListResult> slices = admin.List(kResourceSlices, "", mine);
      return slices.ok() && absl::c_any_of(slices->items, [&](const json& slice) {
               return slice["spec"]["pool"].value("name", "") == pool;
             });
    }));

    REQUIRE(admin.Create(kDeviceClasses, "", DriverDeviceClass(run, testing::kTestDriverName, run)).ok());
  }

  void PublishHealth(kubeletplugin::HealthStatus health, const std::string& device = "") {
    std::vector<kubeletplugin::DeviceHealth> devices;
    for (const std::string name : {"gpu-0", "gpu-1"}) {
      kubeletplugin::DeviceHealth& entry = devices.emplace_back();
      entry.pool_name = node.name;
      entry.device_name = name;
      entry.health = device.empty() || device == name ? health : kubeletplugin::HealthStatus::kHealthy;
    }
    helper->PublishHealth(std::move(devices));
  }
};

TEST_CASE(
    "a driver that fails one claim of a two-claim pod: the pod waits with the kubelet's event naming the "
    "claim and the driver's message, and runs once the fault is cleared",
    "[e2e][node]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-node");
  InProcessDriver plugin(*admin, ns);
  CreateClaim(*admin, ns, "good", plugin.run);
  const std::string bad_uid = CreateClaim(*admin, ns, "bad", plugin.run);
  plugin.driver.FailClaim(bad_uid);
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"good", "good"}, {"bad", "bad"}}, false)).ok());

  // The kubelet keeps the pod from starting and says why.
  std::vector<std::string> events;
  const bool reported = Eventually(
      [&] {
        events = PodEvents(*admin, ns, "app");
        return std::any_of(events.begin(), events.end(), [](const std::string& event) {
          return absl::StartsWith(event, "FailedPrepareDynamicResources: ") && absl::StrContains(event, "bad") &&
                 absl::StrContains(event, "injected failure");
        });
      },
      absl::Seconds(60));
  INFO("events:\n" << absl::StrJoin(events, "\n"));
  REQUIRE(reported);
  json pod = GetOrFail(*admin, kPods, ns, "app");
  CHECK(pod["status"]["phase"] == "Pending");
  CHECK(CriContainers(plugin.node, pod["metadata"]["uid"].get<std::string>()).empty());

  // Cleared: the kubelet's next attempt prepares both and the pod runs.
  plugin.driver.UnfailClaim(bad_uid);
  const bool running = WaitForPod(*admin, ns, "app", PodRunning, &pod);
  INFO("the pod as last seen: " << pod.dump(1));
  REQUIRE(running);
  const std::vector<json> containers = CriContainers(plugin.node, pod["metadata"]["uid"].get<std::string>());
  REQUIRE(containers.size() == 1);
  // Distinct: after the failed attempt a 1.36.3 kubelet passes one of the
  // claims' CDI IDs twice (the version matrix found it; 1.35 and 1.37 do not).
  const std::set<json> cdi_devices(containers[0]["cdiDevices"].begin(), containers[0]["cdiDevices"].end());
  CHECK(cdi_devices.size() == 2);
  CHECK(plugin.driver.errors().empty());

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
}

// Both kinds of pod claim: the 1.35 kubelet finds a claim's name only in
// pod.status.resourceClaimStatuses, which holds claims from templates, so it
// reports no health for a claim the pod names directly; 1.36 falls back to
// the pod spec (UpdateAllocatedResourcesStatus in pkg/kubelet/cm/dra).
TEST_CASE("a device the driver reports unhealthy shows in the pod's allocatedResourcesStatus", "[e2e][node]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-node");
  InProcessDriver plugin(*admin, ns);
  absl::StatusOr<std::string> version = admin->ServerVersion();
  REQUIRE(version.ok());
  const bool direct_claims_reported = !absl::StartsWith(*version, "v1.35.");
  CreateClaim(*admin, ns, "gpu", plugin.run);
  REQUIRE(admin->Create(kResourceClaimTemplates, ns, ClaimTemplate(ns, "one-gpu", plugin.run, 1)).ok());
  json app = PodWithClaims(ns, "app", {{"gpu", "gpu"}}, false);
  app["spec"]["resourceClaims"].push_back({{"name", "templated"}, {"resourceClaimTemplateName", "one-gpu"}});
  app["spec"]["containers"][0]["resources"]["claims"].push_back({{"name", "templated"}});
  REQUIRE(admin->Create(kPods, ns, app).ok());
  json pod;
  REQUIRE(WaitForPod(*admin, ns, "app", PodRunning, &pod));

  // The CDI ID of each pod claim's device, by the kubelet's resource name.
  std::map<std::string, std::string> cdi_ids;
  auto cdi_id_of = [&](const std::string& claim_name) {
    const json claim = GetOrFail(*admin, kResourceClaims, ns, claim_name);
    return absl::StrCat(testing::kTestDriverName, "/claim=", claim["metadata"]["uid"].get<std::string>(), "-",
                        claim["status"]["allocation"]["devices"]["results"][0]["device"].get<std::string>());
  };
  if (direct_claims_reported) cdi_ids["claim:gpu"] = cdi_id_of("gpu");
  for (const json& status : pod["status"].value("resourceClaimStatuses", json::array())) {
    if (status.value("name", "") == "templated") cdi_ids["claim:templated"] = cdi_id_of(status["resourceClaimName"]);
  }
  REQUIRE(cdi_ids.count("claim:templated") == 1);

  // Every reported claim's device with this health, as the kubelet says.
  auto reported = [&](const json& status, const std::string& want) {
    std::map<std::string, std::string> seen;
    for (const json& container : status.value("containerStatuses", json::array())) {
      for (const json& resource : container.value("allocatedResourcesStatus", json::array())) {
        for (const json& health : resource.value("resources", json::array())) {
          seen[resource.value("name", "")] =
              health.value("resourceID", "") == cdi_ids[resource.value("name", "")] ? health.value("health", "") : "";
        }
      }
    }
    return absl::c_all_of(cdi_ids, [&](const auto& entry) { return seen[entry.first] == want; });
  };
  CHECK(WaitForPod(
      *admin, ns, "app", [&](const json& p) { return reported(p["status"], "Healthy"); }, &pod, absl::Seconds(60)));

  plugin.PublishHealth(kubeletplugin::HealthStatus::kUnhealthy);
  const bool unhealthy = WaitForPod(
      *admin, ns, "app", [&](const json& p) { return reported(p["status"], "Unhealthy"); }, &pod, absl::Seconds(60));
  INFO("the pod's status as last seen: " << pod["status"].dump(1));
  REQUIRE(unhealthy);
  if (!direct_claims_reported) WARN(*version << ": the kubelet reports no health for the directly named claim");

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
}

// The fabric's attach, as the test drives it: each call answers from the
// script (Ready once it is used up), after waiting while held.
class FabricAttach : public resourceclaim::BindingHandler {
 public:
  struct Call {
    std::string claim;
    std::string device;
    std::string node_selector;  // of the allocation, as JSON
    std::string allocated_at;
  };

  void Hold(bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = hold;
  }
  void FailNext(std::string reason, std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(resourceclaim::BindingResult::Failed(std::move(reason), std::move(message)));
  }

  resourceclaim::BindingResult PrepareForBinding(const dra::CallContext& ctx, const k8s::ResourceClaim& claim,
                                                 const k8s::DeviceRequestAllocationResult& device) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(Call{claim.metadata.name, device.device,
                          k8s::ToJson(claim)["status"]["allocation"].value("nodeSelector", json()).dump(),
                          claim.status.allocation->allocation_timestamp.value_or("")});
    if (hold_ && !ctx.cancelled()) return resourceclaim::BindingResult::Pending(absl::Milliseconds(200));
    if (!failures_.empty()) {
      resourceclaim::BindingResult failed = failures_.front();
      failures_.erase(failures_.begin());
      return failed;
    }
    return resourceclaim::BindingResult::Ready("Attached", "attached through the fabric");
  }

  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  bool hold_ = false;
  std::vector<resourceclaim::BindingResult> failures_;
  std::vector<Call> calls_;
};

// A fabric-attached GPU driver on the node: InProcessDriver's devices in a
// pool selected by label, with the reconciler of this node and device status
// written when the kubelet prepares a claim.
struct FabricDriver {
  std::shared_ptr<Client> admin;
  std::string ns;
  k8s::NodeSelector selector;
  InProcessDriver plugin;
  FabricAttach attach;
  std::unique_ptr<resourceclaim::BindingConditionReconciler> reconciler;

  FabricDriver(std::shared_ptr<Client> admin_client, const std::string& namespace_)
      : admin(std::move(admin_client)),
        ns(namespace_),
        selector(LabelTheNode(*admin, Node())),
        plugin(*admin, ns, InProcessSetup{selector, false}) {
    GrantClaimStatusRights(*admin, ns, testing::kTestDriverName);
    auto client = MakeClient(DriverConfig(kDriverIdentity));
    resourceclaim::ClaimStatusWriterOptions writer_options;
    writer_options.driver_name = testing::kTestDriverName;
    auto writer = resourceclaim::ClaimStatusWriter::Create(client, writer_options);
    REQUIRE(writer.ok());
    plugin.driver.WriteDeviceStatus(*std::move(writer));
    resourceclaim::BindingConditionReconcilerOptions options;
    options.driver_name = testing::kTestDriverName;
    options.node_name = plugin.node.name;
    auto started = resourceclaim::BindingConditionReconciler::Start(client, options, attach);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    reconciler = *std::move(started);
  }
};

// The condition of `type` in the claim's status entry of our `device`.
std::optional<k8s::Condition> DeviceCondition(const json& claim, const std::string& device, const std::string& type) {
  absl::StatusOr<k8s::ResourceClaim> decoded = k8s::ResourceClaimFromJson(claim);
  REQUIRE(decoded.ok());
  for (const k8s::AllocatedDeviceStatus& entry : decoded->status.devices) {
    if (entry.driver != testing::kTestDriverName || entry.device != device) continue;
    for (const k8s::Condition& condition : entry.conditions) {
      if (condition.type == type) return condition;
    }
  }
  return std::nullopt;
}

TEST_CASE(
    "a fabric-attached device: the scheduler waits in PreBind until the reconciler on the chosen node sets "
    "its binding condition, then binds, the driver's device status shows in the claim",
    "[e2e][node][binding]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-binding");
  FabricDriver fabric(admin, ns);
  fabric.attach.Hold(true);
  CreateClaim(*admin, ns, "gpu", fabric.plugin.run);
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"gpu", "gpu"}}, false)).ok());

  // Allocated with bindsToNode to this node, reserved, and the pod waits
  // unbound while the attach is pending.
  REQUIRE(Eventually([&] { return !fabric.attach.calls().empty(); }, absl::Seconds(60)));
  const FabricAttach::Call first = fabric.attach.calls().front();
  CHECK(first.claim == "gpu");
  const json by_name = {
      {"nodeSelectorTerms",
       {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {fabric.plugin.node.name}}}}}}}}};
  CHECK(json::parse(first.node_selector) == by_name);
  std::vector<std::string> events;
  CHECK(Eventually(
      [&] {
        events = PodEvents(*admin, ns, "app");
        return std::any_of(events.begin(), events.end(),
                           [](const std::string& e) { return absl::StartsWith(e, "BindingConditionsPending: "); });
      },
      absl::Seconds(30)));
  INFO("events:\n" << absl::StrJoin(events, "\n"));
  json pod = GetOrFail(*admin, kPods, ns, "app");
  CHECK(pod["spec"].value("nodeName", "").empty());

  fabric.attach.Hold(false);
  const bool running = WaitForPod(*admin, ns, "app", PodRunning, &pod);
  INFO("the pod as last seen: " << pod.dump(1)
                                << "\nthe driver's errors: " << absl::StrJoin(fabric.plugin.driver.errors(), "\n"));
  REQUIRE(running);
  CHECK(pod["spec"]["nodeName"] == fabric.plugin.node.name);

  const json claim = GetOrFail(*admin, kResourceClaims, ns, "gpu");
  INFO("the claim: " << claim.dump(1));
  const std::string device = claim["status"]["allocation"]["devices"]["results"][0]["device"].get<std::string>();
  const std::optional<k8s::Condition> prepared = DeviceCondition(claim, device, kIsPrepared);
  REQUIRE(prepared.has_value());
  CHECK(prepared->status == "True");
  CHECK(prepared->reason == "Attached");
  const std::optional<k8s::Condition> ready = DeviceCondition(claim, device, "Ready");
  REQUIRE(ready.has_value());
  CHECK(ready->status == "True");
  CHECK(ready->reason == "Prepared");
  for (const json& entry : claim["status"]["devices"]) {
    if (entry["device"] == device) CHECK(entry["data"] == json{{"preparedBy", "test-driver"}});
  }
  CHECK(fabric.reconciler->Stats().ready == 1);
  CHECK(fabric.plugin.driver.errors().empty());

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
}

TEST_CASE(
    "a fabric attach that fails: the scheduler clears the allocation and schedules the pod again, and the "
    "second attach lets it run",
    "[e2e][node][binding]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-binding");
  FabricDriver fabric(admin, ns);
  fabric.attach.FailNext("AttachFailed", "fabric port down");
  CreateClaim(*admin, ns, "gpu", fabric.plugin.run);
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"gpu", "gpu"}}, false)).ok());

  json pod;
  const bool running = WaitForPod(*admin, ns, "app", PodRunning, &pod, absl::Seconds(150));
  INFO("the pod as last seen: " << pod.dump(1) << "\nits events:\n"
                                << absl::StrJoin(PodEvents(*admin, ns, "app"), "\n"));
  REQUIRE(running);
  const std::vector<FabricAttach::Call> calls = fabric.attach.calls();
  REQUIRE(calls.size() == 2);
  // Two allocations: the failed one was cleared (with its status) and a new
  // one made.
  CHECK(calls[0].allocated_at != calls[1].allocated_at);
  const json claim = GetOrFail(*admin, kResourceClaims, ns, "gpu");
  INFO("the claim: " << claim.dump(1));
  CHECK(claim["status"]["allocation"]["allocationTimestamp"] == calls[1].allocated_at);
  const std::string device = claim["status"]["allocation"]["devices"]["results"][0]["device"].get<std::string>();
  CHECK_FALSE(DeviceCondition(claim, device, kPreparingFailed).has_value());
  CHECK(DeviceCondition(claim, device, kIsPrepared).has_value());
  const resourceclaim::BindingConditionReconcilerStats stats = fabric.reconciler->Stats();
  CHECK(stats.failed == 1);
  CHECK(stats.ready == 1);

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
}

TEST_CASE("device metadata reaches the container through the CDI mount the runtime resolves", "[e2e][node]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-node");
  InProcessDriver plugin(*admin, ns, InProcessSetup{std::nullopt, true});
  const std::string uid = CreateClaim(*admin, ns, "gpu", plugin.run);
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"gpu", "gpu"}}, false)).ok());
  json pod;
  REQUIRE(WaitForPod(*admin, ns, "app", PodRunning, &pod));
  const std::vector<json> containers = CriContainers(plugin.node, pod["metadata"]["uid"].get<std::string>());
  REQUIRE(containers.size() == 1);
  INFO("the container as the runtime made it: " << containers[0].dump(1));
  CHECK(std::find(containers[0]["cdiDevices"].begin(), containers[0]["cdiDevices"].end(),
                  json(absl::StrCat(testing::kTestDriverName, "/metadata=", uid, "_gpu"))) !=
        containers[0]["cdiDevices"].end());
  const std::string container_path = "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/gpu/gpu/" +
                                     std::string(testing::kTestDriverName) + "-metadata.json";
  std::string host_path;
  for (const json& mount : containers[0]["mounts"]) {
    if (mount["containerPath"] == container_path) {
      host_path = mount["hostPath"].get<std::string>();
      CHECK(mount["options"] == json::array({"ro", "bind"}));
    }
  }
  REQUIRE_FALSE(host_path.empty());
  const json metadata = json::parse(testing::ReadFile(host_path));
  INFO(metadata.dump(1));
  CHECK(metadata["apiVersion"] == kubeletplugin::kDeviceMetadataV1beta1);
  CHECK(metadata.dump().find("net-gpu-") != std::string::npos);

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
  CHECK(Eventually([&] { return !std::filesystem::exists(host_path); }, absl::Seconds(60)));
}

}  // namespace
}  // namespace dra::e2e
