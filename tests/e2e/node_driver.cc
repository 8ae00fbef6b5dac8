#include "e2e/node_driver.h"

#include <optional>
#include <regex>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_cluster.h"
#include "support/http_get.h"

namespace dra::e2e {

using k8s::Client;
using k8s::kResourceClaims;
using k8s::kResourceSlices;
using nlohmann::json;

std::string DriverKubeconfig() { return absl::StrCat(ClusterDir(), "/driver-", kDriverIdentity, ".kubeconfig"); }

void GrantDriverRights(Client& admin, const std::string& ns, const std::string& node) {
  auto driver = MakeClient(DriverConfig(kDriverIdentity));
  Grant(admin, DriverUser(kDriverIdentity), "", SlicePublisherRules(),
        [&] { return driver->List(kResourceSlices, "").ok() && driver->Get(k8s::kNodes, "", node).ok(); });
  Grant(admin, DriverUser(kDriverIdentity), ns,
        json::array({{{"apiGroups", json::array({"resource.k8s.io"})},
                      {"resources", json::array({"resourceclaims"})},
                      {"verbs", json::array({"get"})}}}),
        [&] { return absl::IsNotFound(driver->Get(kResourceClaims, ns, "probe").status()); });
}

void GrantClaimStatusRights(Client& admin, const std::string& ns, const std::string& driver_name) {
  auto driver = MakeClient(DriverConfig(kDriverIdentity));
  Grant(admin, DriverUser(kDriverIdentity), "",
        json::array({{{"apiGroups", {"resource.k8s.io"}},
                      {"resources", {"resourceclaims"}},
                      {"verbs", {"get", "list", "watch"}}}}),
        [&] { return driver->List(kResourceClaims, "").ok(); });
  Grant(
      admin, DriverUser(kDriverIdentity), ns,
      json::array({{{"apiGroups", {"resource.k8s.io"}}, {"resources", {"resourceclaims/status"}}, {"verbs", {"patch"}}},
                   {{"apiGroups", {"resource.k8s.io"}},
                    {"resources", {"resourceclaims/driver"}},
                    {"resourceNames", {driver_name}},
                    {"verbs", {"arbitrary-node:patch"}}}}),
      [&] {
        // Allowed now, so the answer is about the (missing) claim.
        absl::StatusOr<json> probe = driver->Patch(kResourceClaims, ns, "probe", k8s::PatchType::kMerge, json::object(),
                                                   k8s::PatchOptions{"", false, "status"});
        return absl::IsNotFound(probe.status());
      });
}

k8s::NodeSelector LabelTheNode(Client& admin, const NodeEnv& node) {
  const json patch = {{"metadata", {{"labels", {{"accelerator-type", "high-performance"}}}}}};
  absl::StatusOr<json> patched = admin.Patch(k8s::kNodes, "", node.name, k8s::PatchType::kMerge, patch);
  INFO(patched.status().ToString());
  REQUIRE(patched.ok());
  return k8s::NodeSelectorForLabel("accelerator-type", {"high-performance"});
}

std::set<std::string> SliceUids(Client& admin, const std::string& node, const std::string& driver) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("spec.nodeName=", node, ",spec.driver=", driver);
  absl::StatusOr<k8s::ListResult> slices = admin.List(kResourceSlices, "", options);
  REQUIRE(slices.ok());
  std::set<std::string> uids;
  for (const json& slice : slices->items) uids.insert(slice["metadata"]["uid"].get<std::string>());
  return uids;
}

std::string DriverProcess::HttpEndpoint() const { return absl::StrCat("127.0.0.1:", port_); }

void DriverProcess::Start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  absl::StatusOr<testing::ChildProcess> child = testing::ChildProcess::Spawn(argv, log_file(), env);
  INFO(child.status().ToString());
  REQUIRE(child.ok());
  process_ = *std::move(child);
  std::string how;
  const bool registered =
      Eventually([&] { return process_.Exited(&how) || Metric("dra_registered") == 1; }, absl::Seconds(30));
  INFO("driver " << how << "; its log:\n" << Log());
  REQUIRE_FALSE(process_.Exited());
  REQUIRE(registered);
}

void DriverProcess::Stop() {
  const std::string how = process_.Stop();
  INFO(Log());
  CHECK(how == "exited with status 0");
}

std::string DriverProcess::Log() const { return testing::ReadFile(log_file()); }

int DriverProcess::LoggedFor(const std::string& message, const std::string& uid) const {
  const std::string log = Log();
  const std::regex line(absl::StrCat("\"", message, "\"[^\n]*uid=\"", uid, "\""));
  return static_cast<int>(std::distance(std::sregex_iterator(log.begin(), log.end(), line), std::sregex_iterator()));
}

double DriverProcess::Metric(const std::string& series) const {
  std::optional<std::pair<std::string, std::string>> response = testing::TryHttpGet(port_, "/metrics");
  if (!response.has_value()) return -1;
  const std::string prefix = series + " ";
  for (absl::string_view line : absl::StrSplit(response->second, '\n')) {
    double value = 0;
    if (absl::StartsWith(line, prefix) && absl::SimpleAtod(line.substr(prefix.size()), &value)) return value;
  }
  return -1;
}

std::string DriverProcess::CdiId(const std::string& uid, const std::string& device) const {
  if (specs_ == ClaimSpecs::kReference) return absl::StrCat("k8s.", name_, "/gpu=", uid, "-", device);
  return absl::StrCat(name_, "/claim=", uid, "-", device);
}

std::string DriverProcess::CdiSpecFile(const std::string& uid) const {
  if (specs_ == ClaimSpecs::kReference) return absl::StrCat(node_.cdi_dir, "/k8s.", name_, "-gpu_", uid, ".yaml");
  return absl::StrCat(node_.cdi_dir, "/", name_, "-claim_", uid, ".json");
}

ExampleDriverOnNode::ExampleDriverOnNode(const std::string& binary, const std::string& prefix,
                                         const std::vector<std::string>& flags)
    : admin(MakeClient(AdminConfig())),
      node(Node()),
      ns(CreateNamespace(*admin, "e2e-" + prefix)),
      driver(node, UniqueName(prefix) + ".example.com",
             prefix == "gpu" ? DriverProcess::ClaimSpecs::kReference : DriverProcess::ClaimSpecs::kHelperDefault),
      binary(binary) {
  GrantDriverRights(*admin, ns, node.name);
  GrantClaimStatusRights(*admin, ns, driver.name());
  driver.Start(Argv(driver, flags));
}

std::vector<std::string> ExampleDriverOnNode::Argv(const DriverProcess& process,
                                                   const std::vector<std::string>& flags) const {
  std::vector<std::string> argv = {binary,
                                   "--driver-name=" + process.name(),
                                   "--node-name=" + node.name,
                                   "--kubeconfig=" + DriverKubeconfig(),
                                   "--cdi-root=" + node.cdi_dir,
                                   "--kubelet-registrar-directory-path=" + node.plugins_registry,
                                   "--kubelet-plugins-directory-path=" + node.plugins_dir,
                                   "--http-endpoint=" + process.HttpEndpoint(),
                                   "-v=2"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

std::string ExampleDriverOnNode::Attributes() const {
  return absl::StrCat("device.attributes[\"", driver.name(), "\"]");
}

std::string ExampleDriverOnNode::DeviceClass(const std::string& expression) {
  const std::string name = UniqueName("class");
  json device_class = DriverDeviceClass(name, driver.name());
  device_class["spec"]["selectors"].push_back({{"cel", {{"expression", expression}}}});
  REQUIRE(admin->Create(k8s::kDeviceClasses, "", device_class).ok());
  return name;
}

void ExampleDriverOnNode::CreateClaim(const std::string& name, const json& spec) {
  const json claim = {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceClaim"},
                      {"metadata", {{"namespace", ns}, {"name", name}}},
                      {"spec", spec}};
  absl::StatusOr<json> created = admin->Create(k8s::kResourceClaims, ns, claim);
  INFO(created.status().ToString());
  REQUIRE(created.ok());
}

void ExampleDriverOnNode::CreateTemplate(const std::string& name, const json& spec) {
  const json object = {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaimTemplate"},
                       {"metadata", {{"namespace", ns}, {"name", name}}},
                       {"spec", {{"spec", spec}}}};
  REQUIRE(admin->Create(kResourceClaimTemplates, ns, object).ok());
}

json ExampleDriverOnNode::RunPod(const std::string& name,
                                 const std::vector<std::pair<std::string, std::string>>& claims, bool templates) {
  REQUIRE(admin->Create(kPods, ns, PodWithClaims(ns, name, claims, templates)).ok());
  json pod;
  const bool running = WaitForPod(*admin, ns, name, PodRunning, &pod);
  INFO("the pod as last seen: " << pod.dump(1) << "\nits events:\n"
                                << absl::StrJoin(PodEvents(*admin, ns, name), "\n") << "\nthe driver's log:\n"
                                << driver.Log());
  REQUIRE(running);
  return pod;
}

void ExampleDriverOnNode::DeletePod(const std::string& name) {
  REQUIRE(admin->Delete(kPods, ns, name).ok());
  CHECK(Eventually([&] { return absl::IsNotFound(admin->Get(kPods, ns, name).status()); }, absl::Seconds(90)));
}

std::vector<std::string> ExampleDriverOnNode::ContainerEnv(const json& pod) const {
  const std::vector<json> containers = CriContainers(node, pod["metadata"]["uid"].get<std::string>());
  REQUIRE(containers.size() == 1);
  return containers[0]["env"].get<std::vector<std::string>>();
}

json ExampleDriverOnNode::Claim(const std::string& name) {
  absl::StatusOr<json> claim = admin->Get(k8s::kResourceClaims, ns, name);
  REQUIRE(claim.ok());
  return *claim;
}

}  // namespace dra::e2e
