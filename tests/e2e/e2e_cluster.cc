#include "e2e/e2e_cluster.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <random>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "support/poll.h"

namespace dra::e2e {

using nlohmann::json;

std::string ClusterDir() {
  const char* kubeconfig = std::getenv("DRA_E2E_KUBECONFIG");
  INFO(
      "DRA_E2E_KUBECONFIG is not set: run the e2e tests through ctest (-L e2e), which starts the cluster "
      "with tests/e2e/cluster.sh, or set it to DIR/admin.kubeconfig of `cluster.sh start DIR`");
  REQUIRE(kubeconfig != nullptr);
  std::string path = kubeconfig;
  INFO("DRA_E2E_KUBECONFIG=" << path << " does not exist: is the cluster running?");
  REQUIRE(access(path.c_str(), R_OK) == 0);
  return path.substr(0, path.rfind('/'));
}

k8s::ClientConfig LoadConfig(const std::string& file) {
  absl::StatusOr<k8s::ClientConfig> config = k8s::LoadKubeconfig(ClusterDir() + "/" + file);
  INFO(config.status().ToString());
  REQUIRE(config.ok());
  config->qps = 0;  // the tests pace themselves
  config->timeout = absl::Seconds(30);
  return *config;
}

k8s::ClientConfig AdminConfig() { return LoadConfig("admin.kubeconfig"); }

k8s::ClientConfig DriverConfig(const std::string& identity) {
  return LoadConfig(absl::StrCat("driver-", identity, ".kubeconfig"));
}

std::string DriverUser(const std::string& identity) {
  return absl::StrCat("system:serviceaccount:dra-system:", identity);
}

std::shared_ptr<k8s::Client> MakeClient(const k8s::ClientConfig& config) {
  absl::StatusOr<std::shared_ptr<k8s::Client>> client = k8s::Client::Create(config);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return *client;
}

std::string UniqueName(const std::string& prefix) {
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(getpid()));
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  return absl::StrCat(prefix, "-", getpid(), "-", rng() % 1000000);
}

std::string CreateNamespace(k8s::Client& admin, const std::string& prefix) {
  const std::string name = UniqueName(prefix);
  absl::StatusOr<json> ns =
      admin.Create(kNamespaces, "", json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  INFO(ns.status().ToString());
  REQUIRE(ns.ok());
  return name;
}

bool Eventually(const std::function<bool()>& condition, absl::Duration timeout) {
  return testing::PollUntil(condition, timeout, absl::Milliseconds(50));
}

json SlicePublisherRules() {
  return json::array(
      {{{"apiGroups", json::array({"resource.k8s.io"})},
        {"resources", json::array({"resourceslices"})},
        {"verbs", json::array({"get", "list", "watch", "create", "update", "delete"})}},
       {{"apiGroups", json::array({""})}, {"resources", json::array({"nodes"})}, {"verbs", json::array({"get"})}}});
}

void Grant(k8s::Client& admin, const std::string& user, const std::string& ns, const json& rules,
           const std::function<bool()>& probe) {
  const std::string name = UniqueName("e2e-grant");
  const json subject = {{"kind", "User"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", user}};
  json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"}, {"metadata", {{"name", name}}}, {"rules", rules}};
  json binding = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                  {"metadata", {{"name", name}}},
                  {"subjects", json::array({subject})}};
  if (ns.empty()) {
    role["kind"] = "ClusterRole";
    binding["kind"] = "ClusterRoleBinding";
    binding["roleRef"] = {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", name}};
    REQUIRE(admin.Create(kClusterRoles, "", role).ok());
    REQUIRE(admin.Create(kClusterRoleBindings, "", binding).ok());
  } else {
    role["kind"] = "Role";
    role["metadata"]["namespace"] = ns;
    binding["kind"] = "RoleBinding";
    binding["metadata"]["namespace"] = ns;
    binding["roleRef"] = {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", name}};
    REQUIRE(admin.Create(kRoles, ns, role).ok());
    REQUIRE(admin.Create(kRoleBindings, ns, binding).ok());
  }
  REQUIRE(Eventually(probe));
}

}  // namespace dra::e2e
