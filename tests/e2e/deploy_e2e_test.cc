// The example drivers' deployments (examples/{gpu,cpu}/deploy/) on the
// suite's real API server: every manifest is accepted; each node plugin runs
// on the node under its own service account with a token bound to a pod
// there, as the DaemonSet's pods get, and that RBAC is enough to publish,
// prepare (and, for the GPU driver, write device status); the admission
// policy refuses the GPU plugin's writes to any slice but its own node's; the
// fabric controller publishes the fabric pool under its service account;
// the minimal example's demo pod gets its device's variable.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "e2e/manifests.h"
#include "e2e/node_driver.h"
#include "fake_sysfs.h"
#include "support/claim_object.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {
namespace {

using k8s::Client;
using k8s::ResourceRef;
using nlohmann::json;

constexpr char kNamespace[] = "dra-gpu-example";
constexpr char kDriver[] = "gpu.example.com";
constexpr char kCpuNamespace[] = "dra-cpu-example";
constexpr char kCpuDriver[] = "cpu.example.com";
constexpr char kMinimalNamespace[] = "dra-minimal-example";
constexpr char kMinimalDriver[] = "minimal.example.com";

// Server-side applies the objects of `file` (under examples/<example>/deploy),
// in namespace `ns` when given; returns what the server made of them.
std::vector<json> ApplyFile(Client& admin, const std::string& file, const std::string& ns = "",
                            const std::string& example = "gpu") {
  const std::string path = absl::StrCat(DRA_SOURCE_DIR, "/examples/", example, "/deploy/", file);
  std::vector<json> applied;
  for (json& object : ManifestObjects(testing::ReadFile(path), path)) {
    applied.push_back(ApplyObject(admin, std::move(object), ns));
  }
  return applied;
}

// Every manifest of the deployment, the namespace first.
std::vector<json> ApplyDeployment(Client& admin) {
  std::vector<json> applied;
  for (const std::string file : {"namespace.yaml", "rbac.yaml", "admission-policy.yaml", "deviceclass.yaml",
                                 "daemonset.yaml", "fabric-controller.yaml"}) {
    std::vector<json> objects = ApplyFile(admin, file);
    applied.insert(applied.end(), objects.begin(), objects.end());
  }
  return applied;
}

// A pod of `service_account` (of namespace `ns`) on the node, and a
// kubeconfig with a token bound to it, as the kubelet mounts one into the
// DaemonSet's pods.
struct BoundIdentity {
  testing::TempDir dir;
  std::string kubeconfig;
  std::string pod;

  BoundIdentity(Client& admin, const NodeEnv& node, const std::string& service_account,
                const std::string& ns = kNamespace) {
    pod = UniqueName(service_account);
    const json object = {{"apiVersion", "v1"},
                         {"kind", "Pod"},
                         {"metadata", {{"namespace", ns}, {"name", pod}}},
                         {"spec",
                          {{"nodeName", node.name},
                           {"serviceAccountName", service_account},
                           {"automountServiceAccountToken", false},
                           {"containers", json::array({{{"name", "plugin"}, {"image", "registry.example/app:1"}}})}}}};
    absl::StatusOr<json> created = admin.Create(kPods, ns, object);
    INFO(created.status().ToString());
    REQUIRE(created.ok());
    const ResourceRef token_ref{"", "v1", absl::StrCat("serviceaccounts/", service_account, "/token"), true};
    const json request = {
        {"apiVersion", "authentication.k8s.io/v1"},
        {"kind", "TokenRequest"},
        {"spec",
         {{"expirationSeconds", 3600},
          {"boundObjectRef",
           {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod}, {"uid", (*created)["metadata"]["uid"]}}}}}};
    absl::StatusOr<json> token = admin.Create(token_ref, ns, request);
    INFO(token.status().ToString());
    REQUIRE(token.ok());
    const k8s::ClientConfig cluster = AdminConfig();
    kubeconfig = dir.Join("kubeconfig");
    std::ofstream(kubeconfig)
        << "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster:\n    server: " << cluster.server
        << "\n    certificate-authority: " << cluster.ca_file
        << "\nusers:\n- name: sa\n  user:\n    token: " << (*token)["status"]["token"].get<std::string>()
        << "\ncontexts:\n- name: e2e\n  context: {cluster: e2e, user: sa}\ncurrent-context: e2e\n";
  }
};

json Slice(const std::string& name, const std::optional<std::string>& node) {
  json spec = {{"driver", kDriver}, {"pool", {{"name", name}, {"generation", 1}, {"resourceSliceCount", 1}}}};
  if (node.has_value()) {
    spec["nodeName"] = *node;
  } else {
    spec["allNodes"] = true;
  }
  return {
      {"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

TEST_CASE(
    "the GPU deployment: manifests accepted, the node plugin works under its own RBAC, and the admission "
    "policy keeps it to its node's slices",
    "[e2e][node][gpu][deploy]") {
  auto admin = MakeClient(AdminConfig());
  const NodeEnv node = Node();
  const std::vector<json> applied = ApplyDeployment(*admin);
  CHECK(applied.size() == 13);

  BoundIdentity identity(*admin, node, "gpu-example-driver");
  absl::StatusOr<k8s::ClientConfig> config = k8s::LoadKubeconfig(identity.kubeconfig);
  REQUIRE(config.ok());
  absl::StatusOr<std::shared_ptr<Client>> plugin_client = Client::Create(*config);
  REQUIRE(plugin_client.ok());

  // The policy: a slice of another node, or of no node, is refused, once the
  // API server has loaded the new policy (a slice written before is removed).
  auto refused = [&](const std::optional<std::string>& slice_node, absl::Status* last) {
    const json slice = Slice(UniqueName("probe"), slice_node);
    absl::StatusOr<json> created = (*plugin_client)->Create(k8s::kResourceSlices, "", slice);
    *last = created.status();
    if (created.ok())
      REQUIRE(admin->Delete(k8s::kResourceSlices, "", slice["metadata"]["name"].get<std::string>()).ok());
    return absl::IsInvalidArgument(created.status());
  };
  absl::Status other;
  CHECK(Eventually([&] { return refused("other-node", &other); }, absl::Seconds(30)));
  INFO(other.ToString());
  CHECK_THAT(std::string(other.message()),
             Catch::Contains("the GPU node plugin on node " + node.name + " may not write slices of node other-node"));
  absl::Status cluster;
  CHECK(refused(std::nullopt, &cluster));
  CHECK_THAT(std::string(cluster.message()), Catch::Contains("may not write slices without a node"));

  // The node plugin itself under that identity.
  DriverProcess driver(node, kDriver);
  driver.Start({DRA_GPU_DRIVER, "--node-name=" + node.name, "--kubeconfig=" + identity.kubeconfig,
                "--cdi-root=" + node.cdi_dir, "--kubelet-registrar-directory-path=" + node.plugins_registry,
                "--kubelet-plugins-directory-path=" + node.plugins_dir, "--http-endpoint=" + driver.HttpEndpoint(),
                "--num-devices=2", "--gpu-device-status", "--fabric-attach"});
  CHECK(Eventually([&] { return SliceUids(*admin, node.name, kDriver).size() == 1; }));

  const std::string ns = CreateNamespace(*admin, "e2e-deploy");
  // A GPU of this plugin (with productName), not one of the fabric pools
  // other tests leave for the same driver name.
  json claim_object = testing::NewClaimObject(ns, "gpu", "gpu.example.com");
  claim_object["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = json::array(
      {{{"cel",
         {{"expression", absl::StrCat("\"productName\" in device.attributes[\"", kDriver,
                                      "\"] && !(\"fabricAttached\" in ", "device.attributes[\"", kDriver, "\"])")}}}}});
  REQUIRE(admin->Create(k8s::kResourceClaims, ns, claim_object).ok());
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"gpu", "gpu"}}, false)).ok());
  json pod;
  const bool running = WaitForPod(*admin, ns, "app", PodRunning, &pod);
  INFO("the pod: " << pod.dump(1) << "\nevents:\n"
                   << absl::StrJoin(PodEvents(*admin, ns, "app"), "\n") << "\nthe driver's log:\n"
                   << driver.Log());
  REQUIRE(running);
  // Device status needs associated-node:patch on resourceclaims/driver, and
  // a token that names the node the claim is allocated to.
  absl::StatusOr<json> claim = admin->Get(k8s::kResourceClaims, ns, "gpu");
  REQUIRE(claim.ok());
  INFO("the claim: " << claim->dump(1));
  REQUIRE((*claim)["status"].contains("devices"));
  CHECK((*claim)["status"]["devices"][0]["conditions"][0]["reason"] == "Prepared");
  CHECK_THAT(driver.Log(), !Catch::Contains("Device status not written"));

  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return absl::IsNotFound(admin->Get(kPods, ns, "app").status()); }, absl::Seconds(90)));
  driver.Stop();
  REQUIRE(admin->Delete(kPods, kNamespace, identity.pod).ok());
}

TEST_CASE("the GPU deployment: the fabric controller publishes the fabric pool under its service account",
          "[e2e][node][gpu][deploy]") {
  auto admin = MakeClient(AdminConfig());
  const NodeEnv node = Node();
  ApplyDeployment(*admin);
  BoundIdentity identity(*admin, node, "gpu-example-driver-fabric-controller");
  const std::string pool = UniqueName("fabric");
  testing::TempDir dir;
  absl::StatusOr<testing::ChildProcess> controller =
      testing::ChildProcess::Spawn({DRA_GPU_DRIVER, "--fabric-controller", "--fabric-pool=" + pool,
                                    "--fabric-num-devices=3", "--kubeconfig=" + identity.kubeconfig},
                                   dir.Join("controller.log"));
  REQUIRE(controller.ok());
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.driver=", kDriver, ",spec.pool.name=", pool);
  json slices;
  const bool published = Eventually([&] {
    absl::StatusOr<k8s::ListResult> list = admin->List(k8s::kResourceSlices, "", options);
    if (!list.ok() || list->items.size() != 1) return false;
    slices = list->items[0];
    return true;
  });
  INFO("the controller's log:\n" << testing::ReadFile(dir.Join("controller.log")));
  REQUIRE(published);
  CHECK(slices["spec"]["devices"].size() == 3);
  CHECK(slices["spec"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "accelerator-type");
  CHECK(slices["spec"]["devices"][0]["bindsToNode"] == true);
  CHECK(controller->Stop() == "exited with status 0");
  // The pool stays, as it should for the next controller; not for the next test.
  REQUIRE(admin->Delete(k8s::kResourceSlices, "", slices["metadata"]["name"].get<std::string>()).ok());
  REQUIRE(admin->Delete(kPods, kNamespace, identity.pod).ok());
}

TEST_CASE("the GPU demo's claims and pods are accepted by the API server", "[e2e][node][gpu][deploy]") {
  auto admin = MakeClient(AdminConfig());
  ApplyDeployment(*admin);
  const std::string ns = CreateNamespace(*admin, "e2e-demo");
  std::vector<std::string> pods;
  for (const std::string file : {"demo/single-gpu.yaml", "demo/time-slicing.yaml", "demo/shared-gpu.yaml",
                                 "demo/partition.yaml", "demo/fabric-gpu.yaml"}) {
    for (const json& object : ApplyFile(*admin, file, ns)) {
      if (object["kind"] == "Pod") pods.push_back(object["metadata"]["name"].get<std::string>());
    }
  }
  CHECK(pods.size() == 6);
  for (const std::string& pod : pods) REQUIRE(admin->Delete(kPods, ns, pod).ok());
}

TEST_CASE(
    "the CPU deployment: manifests and demo accepted, the node plugin publishes and prepares under its own "
    "RBAC",
    "[e2e][node][cpu][deploy]") {
  auto admin = MakeClient(AdminConfig());
  const NodeEnv node = Node();
  size_t applied = 0;
  for (const std::string file :
       {"namespace.yaml", "rbac.yaml", "admission-policy.yaml", "deviceclass.yaml", "daemonset.yaml"}) {
    applied += ApplyFile(*admin, file, "", "cpu").size();
  }
  CHECK(applied == 9);
  const std::string demo_ns = CreateNamespace(*admin, "e2e-cpu-demo");
  std::vector<std::string> demo_pods;
  for (const std::string file : {"demo/exclusive-cpus.yaml", "demo/cpus-and-memory.yaml"}) {
    for (const json& object : ApplyFile(*admin, file, demo_ns, "cpu")) {
      if (object["kind"] == "Pod") demo_pods.push_back(object["metadata"]["name"].get<std::string>());
    }
  }
  CHECK(demo_pods.size() == 2);
  // Four CPUs do not fit this node: the demo pods wait; they go.
  for (const std::string& pod : demo_pods) REQUIRE(admin->Delete(kPods, demo_ns, pod).ok());

  BoundIdentity identity(*admin, node, "cpu-example-driver", kCpuNamespace);
  testing::TempDir sysfs;
  testing::FakeMachine machine;
  testing::WriteFakeSysfs(sysfs.path(), machine);
  DriverProcess driver(node, kCpuDriver);
  driver.Start({DRA_CPU_DRIVER, "--node-name=" + node.name, "--kubeconfig=" + identity.kubeconfig,
                "--cdi-root=" + node.cdi_dir, "--kubelet-registrar-directory-path=" + node.plugins_registry,
                "--kubelet-plugins-directory-path=" + node.plugins_dir, "--http-endpoint=" + driver.HttpEndpoint(),
                "--sysfs-root=" + sysfs.path(), "--nri-socket=", "--reserved-cpus=0", "--memory-devices"});
  CHECK(Eventually([&] { return SliceUids(*admin, node.name, kCpuDriver).size() == 1; }));

  const std::string ns = CreateNamespace(*admin, "e2e-cpu-deploy");
  const json claim = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"namespace", ns}, {"name", "cpu"}}},
      {"spec",
       {{"devices",
         {{"requests",
           json::array({{{"name", "cpus"},
                         {"exactly",
                          {{"deviceClassName", kCpuDriver},
                           {"capacity", {{"requests", {{std::string(kCpuDriver) + "/cpu", "1"}}}}}}}}})}}}}}};
  REQUIRE(admin->Create(k8s::kResourceClaims, ns, claim).ok());
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, "app", {{"cpus", "cpu"}}, false)).ok());
  json pod;
  const bool running = WaitForPod(*admin, ns, "app", PodRunning, &pod);
  INFO("the pod: " << pod.dump(1) << "\nevents:\n"
                   << absl::StrJoin(PodEvents(*admin, ns, "app"), "\n") << "\nthe driver's log:\n"
                   << driver.Log());
  REQUIRE(running);
  CHECK(driver.Metric("dra_cpu_allocated_cpus") == 1);
  REQUIRE(admin->Delete(kPods, ns, "app").ok());
  CHECK(Eventually([&] { return absl::IsNotFound(admin->Get(kPods, ns, "app").status()); }, absl::Seconds(90)));
  driver.Stop();
  REQUIRE(admin->Delete(kPods, kCpuNamespace, identity.pod).ok());
}

TEST_CASE(
    "the minimal deployment: manifests accepted, the driver prepares under its own RBAC, the demo pod gets its "
    "device",
    "[e2e][node][minimal][deploy]") {
  auto admin = MakeClient(AdminConfig());
  const NodeEnv node = Node();
  size_t applied = 0;
  for (const std::string file : {"namespace.yaml", "rbac.yaml", "deviceclass.yaml", "daemonset.yaml"}) {
    applied += ApplyFile(*admin, file, "", "minimal").size();
  }
  CHECK(applied == 6);

  BoundIdentity identity(*admin, node, "minimal-driver", kMinimalNamespace);
  DriverProcess driver(node, kMinimalDriver);
  driver.Start({DRA_MINIMAL_DRIVER, "--node-name=" + node.name, "--kubeconfig=" + identity.kubeconfig,
                "--cdi-root=" + node.cdi_dir, "--kubelet-registrar-directory-path=" + node.plugins_registry,
                "--kubelet-plugins-directory-path=" + node.plugins_dir, "--http-endpoint=" + driver.HttpEndpoint()});
  CHECK(Eventually([&] { return SliceUids(*admin, node.name, kMinimalDriver).size() == 1; }));

  const std::string ns = CreateNamespace(*admin, "e2e-minimal-demo");
  // On this node: the sanity tests publish devices of the same driver on
  // Nodes of their own, which run no pods.
  const std::string demo = absl::StrCat(DRA_SOURCE_DIR, "/examples/minimal/deploy/demo.yaml");
  std::string pod_uid;
  for (json& object : ManifestObjects(testing::ReadFile(demo), demo)) {
    if (object["kind"] == "Pod") {
      const json term = {
          {"matchFields",
           json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({node.name})}}})}};
      object["spec"]["affinity"] = {
          {"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", json::array({term})}}}}}};
    }
    const json created = ApplyObject(*admin, std::move(object), ns);
    if (created["kind"] == "Pod") pod_uid = created["metadata"]["uid"].get<std::string>();
  }
  REQUIRE_FALSE(pod_uid.empty());
  json pod;
  const bool running = WaitForPod(*admin, ns, "minimal-demo", PodRunning, &pod);
  INFO("the pod: " << pod.dump(1) << "\nevents:\n"
                   << absl::StrJoin(PodEvents(*admin, ns, "minimal-demo"), "\n") << "\nthe driver's log:\n"
                   << driver.Log());
  REQUIRE(running);
  const std::vector<json> containers = CriContainers(node, pod_uid);
  INFO(json(containers).dump(1));
  REQUIRE(containers.size() == 1);
  const std::vector<std::string> env = containers[0]["env"].get<std::vector<std::string>>();
  CHECK(std::count_if(env.begin(), env.end(),
                      [](const std::string& e) { return e == "MINIMAL_DEV0=dev0" || e == "MINIMAL_DEV1=dev1"; }) == 1);

  REQUIRE(admin->Delete(kPods, ns, "minimal-demo").ok());
  CHECK(
      Eventually([&] { return absl::IsNotFound(admin->Get(kPods, ns, "minimal-demo").status()); }, absl::Seconds(90)));
  driver.Stop();
  REQUIRE(admin->Delete(kPods, kMinimalNamespace, identity.pod).ok());
}

}  // namespace
}  // namespace dra::e2e
