// What the e2e tests share about the running cluster (started by cluster.sh
// as a ctest fixture): where it is, a client per identity, unique names,
// namespaces, RBAC grants, and polling for conditions that send requests.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "nlohmann/json.hpp"

namespace dra::e2e {

inline const k8s::ResourceRef kNamespaces{"", "v1", "namespaces", false};
inline const k8s::ResourceRef kPods{"", "v1", "pods", true};
inline const k8s::ResourceRef kEvents{"", "v1", "events", true};
inline const k8s::ResourceRef kRoles{"rbac.authorization.k8s.io", "v1", "roles", true};
inline const k8s::ResourceRef kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings", true};
inline const k8s::ResourceRef kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles", false};
inline const k8s::ResourceRef kClusterRoleBindings{"rbac.authorization.k8s.io", "v1", "clusterrolebindings", false};

// The directory of DRA_E2E_KUBECONFIG. A missing variable fails the test (it
// is set by tests/e2e/CMakeLists.txt; never skip).
std::string ClusterDir();

// The kubeconfig `file` of the cluster directory ("admin.kubeconfig",
// "driver-<identity>.kubeconfig", "unprivileged.kubeconfig"), unthrottled.
k8s::ClientConfig LoadConfig(const std::string& file);
k8s::ClientConfig AdminConfig();
// The service account identity cluster.sh made for driver `identity`
// (gpu-driver, cpu-driver, minimal-driver).
k8s::ClientConfig DriverConfig(const std::string& identity);
// "system:serviceaccount:dra-system:<identity>".
std::string DriverUser(const std::string& identity);

std::shared_ptr<k8s::Client> MakeClient(const k8s::ClientConfig& config);

// A DNS label unique to this process and call: "<prefix>-<pid>-<random>".
std::string UniqueName(const std::string& prefix);

// Creates a namespace named UniqueName(prefix) and returns its name.
std::string CreateNamespace(k8s::Client& admin, const std::string& prefix);

// Polls `condition` every 50 ms (for conditions that send requests).
bool Eventually(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(20));

// The RBAC rules a driver's ClusterRole needs for ResourceSlice publishing:
// its slices, and the Node it reads once for owner references.
nlohmann::json SlicePublisherRules();

// Grants `rules` to `user` in `ns` (a Role), or cluster-wide when ns is empty
// (a ClusterRole), and waits until the authorizer sees it (`probe` succeeds).
void Grant(k8s::Client& admin, const std::string& user, const std::string& ns, const nlohmann::json& rules,
           const std::function<bool()>& probe);

}  // namespace dra::e2e
