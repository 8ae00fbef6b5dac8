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
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/resourceslice/split.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "support/http_get.h"
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

// The service account identity (cluster.sh) the drivers run as.
constexpr char kIdentity[] = "minimal-driver";

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  close(fd);
  return ntohs(addr.sin_port);
}

// The driver identity may publish slices and read the claims of `ns`, as
// its ClusterRole would let it.
void GrantDriverRights(Client& admin, const std::string& ns, const std::string& node) {
  auto driver = MakeClient(DriverConfig(kIdentity));
  Grant(admin, DriverUser(kIdentity), "", SlicePublisherRules(),
        [&] { return driver->List(kResourceSlices, "").ok() && driver->Get(k8s::kNodes, "", node).ok(); });
  Grant(admin, DriverUser(kIdentity), ns,
        json::array({{{"apiGroups", json::array({"resource.k8s.io"})},
                      {"resources", json::array({"resourceclaims"})},
                      {"verbs", json::array({"get"})}}}),
        [&] { return absl::IsNotFound(driver->Get(kResourceClaims, ns, "probe").status()); });
}

// The UIDs of the ResourceSlices of `driver` on the node.
std::set<std::string> SliceUids(Client& admin, const std::string& node, const std::string& driver) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node, ",spec.driver=", driver);
  absl::StatusOr<k8s::ListResult> slices = admin.List(kResourceSlices, "", options);
  REQUIRE(slices.ok());
  std::set<std::string> uids;
  for (const json& slice : slices->items) uids.insert(slice["metadata"]["uid"].get<std::string>());
  return uids;
}

// examples/minimal as a process on the node: it registers with the kubelet,
// reads claims from the API server and publishes its two devices as the
// node's pool; /metrics on a port of its own.
class MinimalDriver {
 public:
  MinimalDriver(const NodeEnv& node, std::string name)
      : node_(node), name_(std::move(name)), port_(FreePort()) {}

  const std::string& name() const { return name_; }

  // Starts it and waits until the kubelet accepted its registration.
  void Start() {
    absl::StatusOr<testing::ChildProcess> child = testing::ChildProcess::Spawn(
        {DRA_MINIMAL_DRIVER, "--registrar-dir", node_.plugins_registry, "--plugin-data-dir",
         node_.plugins_dir + "/" + name_, "--cdi-dir", node_.cdi_dir, "--driver-name", name_, "--kubeconfig",
         absl::StrCat(ClusterDir(), "/driver-", kIdentity, ".kubeconfig"), "--node-name", node_.name,
         "--http-endpoint", absl::StrCat("127.0.0.1:", port_)},
        log_file());
    INFO(child.status().ToString());
    REQUIRE(child.ok());
    process_ = *std::move(child);
    std::string how;
    const bool registered = Eventually([&] { return process_.Exited(&how) || Metric("dra_registered") == 1; },
                                       absl::Seconds(30));
    INFO("driver " << how << "; its log:\n" << Log());
    REQUIRE_FALSE(process_.Exited());
    REQUIRE(registered);
  }

  void Stop() {
    const std::string how = process_.Stop();
    INFO(Log());
    CHECK(how == "exited with status 0");
  }

  std::string log_file() const { return dir_.Join("driver.log"); }
  std::string Log() const { return testing::ReadFile(log_file()); }

  // How often the driver itself logged `message` for the claim with `uid`.
  int LoggedFor(const std::string& message, const std::string& uid) const {
    const std::string log = Log();
    const std::regex line(absl::StrCat("\"", message, "\"[^\n]*uid=\"", uid, "\""));
    return static_cast<int>(std::distance(std::sregex_iterator(log.begin(), log.end(), line), std::sregex_iterator()));
  }

  // A sample of the driver's /metrics: `series` as written there, e.g.
  // dra_kubelet_calls_total{method="NodePrepareResources"}; -1 if unreadable.
  double Metric(const std::string& series) const {
    std::optional<std::pair<std::string, std::string>> response = testing::TryHttpGet(port_, "/metrics");
    if (!response.has_value()) return -1;
    const std::string prefix = series + " ";
    for (absl::string_view line : absl::StrSplit(response->second, '\n')) {
      double value = 0;
      if (absl::StartsWith(line, prefix) && absl::SimpleAtod(line.substr(prefix.size()), &value)) return value;
    }
    return -1;
  }

  // The CDI ID the Helper gives device `device` of claim `uid`.
  std::string CdiId(const std::string& uid, const std::string& device) const {
    return absl::StrCat(name_, "/claim=", uid, "-", device);
  }
  std::string CdiSpecFile(const std::string& uid) const {
    return absl::StrCat(node_.cdi_dir, "/", name_, "-claim_", uid, ".json");
  }

 private:
  const NodeEnv node_;
  const std::string name_;
  const int port_;
  testing::TempDir dir_;
  testing::ChildProcess process_;
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

// A namespace with the minimal driver on the node, a DeviceClass of its
// devices and a template for `devices` of them; then a pod using one claim
// from that template, Running.
struct RunningPod {
  std::shared_ptr<Client> admin = MakeClient(AdminConfig());
  NodeEnv node = Node();
  std::string ns = CreateNamespace(*admin, "e2e-node");
  MinimalDriver driver{node, UniqueName("minimal") + ".example.com"};
  json pod;
  std::string pod_uid;
  std::string claim_name;
  std::string claim_uid;

  explicit RunningPod(int devices) {
    GrantDriverRights(*admin, ns, node.name);
    driver.Start();
    REQUIRE(Eventually([&] { return !SliceUids(*admin, node.name, driver.name()).empty(); }));
    const std::string device_class = UniqueName("minimal");
    REQUIRE(admin->Create(kDeviceClasses, "", DriverDeviceClass(device_class, driver.name())).ok());
    REQUIRE(admin->Create(kResourceClaimTemplates, ns, ClaimTemplate(ns, "devices", device_class, devices)).ok());
    absl::StatusOr<json> created = admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"devices", "devices"}}));
    INFO(created.status().ToString());
    REQUIRE(created.ok());
    pod_uid = (*created)["metadata"]["uid"].get<std::string>();
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
  CHECK(cdi_ids == std::vector<std::string>{run.driver.CdiId(run.claim_uid, "dev-0"),
                                            run.driver.CdiId(run.claim_uid, "dev-1")});
  const std::vector<std::string> env = container["env"].get<std::vector<std::string>>();
  CHECK(std::count(env.begin(), env.end(), "MINIMAL_DEVICE_DEV_0=dev-0") == 1);
  CHECK(std::count(env.begin(), env.end(), "MINIMAL_DEVICE_DEV_1=dev-1") == 1);
  CHECK(std::filesystem::exists(run.driver.CdiSpecFile(run.claim_uid)));

  run.DeleteAndWaitForCleanUp();
  CHECK(run.driver.LoggedFor("Prepared claim", run.claim_uid) == 1);
}

TEST_CASE("the kubelet restarted under a running pod: the node's slices are wiped and restored, no claim is "
          "prepared twice, and the claim is unprepared from the kubelet's checkpoint",
          "[e2e][node]") {
  RunningPod run(/*devices=*/1);
  const std::set<std::string> slices_before = SliceUids(*run.admin, run.node.name, run.driver.name());
  const size_t containers_before = CriContainers(run.node, run.pod_uid).size();

  RestartKubelet();
  const absl::Time restarted = absl::Now();
  // The kubelet deletes every slice of its node when it starts; the driver's
  // publisher sees them go and creates them again.
  std::set<std::string> slices_after;
  const bool restored = Eventually(
      [&] {
        slices_after = SliceUids(*run.admin, run.node.name, run.driver.name());
        return !slices_after.empty() && std::none_of(slices_after.begin(), slices_after.end(), [&](const auto& uid) {
          return slices_before.count(uid) > 0;
        });
      },
      absl::Seconds(60));
  INFO("slices before: " << absl::StrJoin(slices_before, ",") << ", after: " << absl::StrJoin(slices_after, ","));
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

TEST_CASE("a driver gone for more than 30 s: the kubelet wipes its slices, and back, it re-registers and republishes "
          "and no claim is prepared twice",
          "[e2e][node]") {
  RunningPod run(/*devices=*/1);
  run.driver.Stop();
  const absl::Time stopped = absl::Now();
  // The driver leaves its slices (the kubelet owns their removal) ...
  CHECK_FALSE(SliceUids(*run.admin, run.node.name, run.driver.name()).empty());
  // ... which the kubelet deletes once the driver has been away for 30 s.
  REQUIRE(Eventually([&] { return SliceUids(*run.admin, run.node.name, run.driver.name()).empty(); },
                     absl::Seconds(90)));
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
struct InProcessDriver {
  NodeEnv node = Node();
  testing::TestDriver driver{/*reports_health=*/true};
  std::string run = UniqueName("run");
  std::unique_ptr<kubeletplugin::Helper> helper;

  InProcessDriver(Client& admin, const std::string& ns) {
    GrantDriverRights(admin, ns, node.name);
    cdi::ContainerEdits edits;
    edits.env = {"E2E_RUN=" + run};
    driver.ReturnCdiEdits(edits);
    kubeletplugin::Options options;
    options.driver_name = testing::kTestDriverName;
    options.node_name = node.name;
    options.registrar_dir = node.plugins_registry;
    options.plugin_data_dir = absl::StrCat(node.plugins_dir, "/", testing::kTestDriverName);
    options.kube_client = MakeClient(DriverConfig(kIdentity));
    options.cdi.spec_dir = node.cdi_dir;
    absl::StatusOr<std::unique_ptr<kubeletplugin::Helper>> started = kubeletplugin::Helper::Start(driver, options);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    helper = *std::move(started);
    PublishHealth(kubeletplugin::HealthStatus::kHealthy);

    std::vector<k8s::Device> devices(2);
    for (int i = 0; i < 2; ++i) {
      devices[i].name = absl::StrCat("gpu-", i);
      devices[i].attributes["run"].string_value = run;
    }
    resourceslice::DriverResources resources;
    resources.pools[node.name].slices = resourceslice::SplitIntoSlices(std::move(devices));
    REQUIRE(helper->PublishResources(std::move(resources)).ok());
    REQUIRE(Eventually([&] { return !SliceUids(admin, node.name, testing::kTestDriverName).empty(); }));

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

TEST_CASE("a driver that fails one claim of a two-claim pod: the pod waits with the kubelet's event naming the "
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
  CHECK(containers[0]["cdiDevices"].size() == 2);
  CHECK(plugin.driver.errors().empty());

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
}

TEST_CASE("a device the driver reports unhealthy shows in the pod's allocatedResourcesStatus", "[e2e][node]") {
  auto admin = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-node");
  InProcessDriver plugin(*admin, ns);
  const std::string uid = CreateClaim(*admin, ns, "gpu", plugin.run);
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"gpu", "gpu"}}, false)).ok());
  json pod;
  REQUIRE(WaitForPod(*admin, ns, "app", PodRunning, &pod));
  const json claim = GetOrFail(*admin, kResourceClaims, ns, "gpu");
  const std::string device = claim["status"]["allocation"]["devices"]["results"][0]["device"].get<std::string>();
  const std::string cdi_id = absl::StrCat(testing::kTestDriverName, "/claim=", uid, "-", device);

  // The health of the pod's device as the kubelet reports it, "" until then.
  auto reported_health = [&](const json& status) -> std::string {
    for (const json& container : status.value("containerStatuses", json::array())) {
      for (const json& resource : container.value("allocatedResourcesStatus", json::array())) {
        if (resource.value("name", "") != "claim:gpu") continue;
        for (const json& health : resource.value("resources", json::array())) {
          if (health.value("resourceID", "") == cdi_id) return health.value("health", "");
        }
      }
    }
    return "";
  };
  CHECK(WaitForPod(*admin, ns, "app", [&](const json& p) { return reported_health(p["status"]) == "Healthy"; },
                   &pod, absl::Seconds(60)));

  plugin.PublishHealth(kubeletplugin::HealthStatus::kUnhealthy, device);
  const bool unhealthy = WaitForPod(
      *admin, ns, "app", [&](const json& p) { return reported_health(p["status"]) == "Unhealthy"; }, &pod,
      absl::Seconds(60));
  INFO("the pod's status as last seen: " << pod["status"].dump(1));
  REQUIRE(unhealthy);

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return Gone(*admin, kPods, ns, "app"); }, absl::Seconds(90)));
}

}  // namespace
}  // namespace dra::e2e
