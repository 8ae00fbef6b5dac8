// What the tests on the suite's real node share: where the node is
// (cluster.sh node-start), what its container runtime saw (the CRI
// stand-in's record), restarting its kubelet, and pods that use claims.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "dra/k8s/client.h"
#include "e2e/e2e_cluster.h"
#include "nlohmann/json.hpp"

namespace dra::e2e {

inline const k8s::ResourceRef kResourceClaimTemplates{"resource.k8s.io", "v1", "resourceclaimtemplates", true};

// The node of the running cluster, from DIR/node.env. A node that is not
// running fails the test (tests/e2e/CMakeLists.txt starts it; never skip).
struct NodeEnv {
  std::string name;
  std::string runtime;           // "stand-in", "containerd" or "crio" (DRA_E2E_RUNTIME)
  std::string dir;               // the node's directory (/tmp/dn.*)
  std::string plugins_registry;  // the kubelet's plugins_registry dir
  std::string plugins_dir;       // <kubelet root>/plugins: a driver's data dir is <this>/<driver>
  std::string cdi_dir;           // where the runtime reads CDI specs
  std::string cri_record;        // stand-in: its record (tests/e2e/cri/README.md)
  std::string kubelet_url;       // its HTTPS API (admin certificate)
};
NodeEnv Node();

// The container creations the CRI stand-in saw for the pod with `pod_uid`,
// oldest first (failed attempts included, state "failed").
std::vector<nlohmann::json> CriContainers(const NodeEnv& node, const std::string& pod_uid);

// cluster.sh kubelet-restart: the kubelet stops and starts again with the
// same root dir; returns once its /healthz answers.
void RestartKubelet();

// The lines of the kubelet's log (DIR/logs/kubelet.log, every start of it)
// that contain `text`: what a failed test shows of the kubelet's side.
std::string KubeletLogLines(const std::string& text);

// A DeviceClass for the devices of `driver`; with `run`, only those whose
// attribute "run" is `run` (a per-test attribute, so that pods other tests
// left pending on the same cluster cannot take them).
nlohmann::json DriverDeviceClass(const std::string& name, const std::string& driver, const std::string& run = "");

// Creates a ResourceClaim for one device of `device_class`
// (testing::NewClaimObject) and returns its UID.
std::string CreateClaim(k8s::Client& admin, const std::string& ns, const std::string& name,
                        const std::string& device_class);

// A pod with one container that uses every claim of `claims`: pairs of
// (pod claim name, ResourceClaimTemplate name), or with `template_claims`
// false, of (pod claim name, ResourceClaim name). No service account token
// is mounted: the node has no volume plugins to speak of.
nlohmann::json PodWithClaims(const std::string& ns, const std::string& name,
                             const std::vector<std::pair<std::string, std::string>>& claims,
                             bool template_claims = true);

// Polls the pod until `condition` holds for it; `last` gets the pod as last
// seen (for messages). False on timeout.
bool WaitForPod(k8s::Client& admin, const std::string& ns, const std::string& name,
                const std::function<bool(const nlohmann::json&)>& condition, nlohmann::json* last,
                absl::Duration timeout = absl::Seconds(90));
bool PodRunning(const nlohmann::json& pod);

// The ResourceClaim generated for pod claim `pod_claim` (from the pod's
// status.resourceClaimStatuses), or "" if there is none yet.
std::string GeneratedClaimName(const nlohmann::json& pod, const std::string& pod_claim);

// Events whose involvedObject is the pod, as "reason: message" lines.
std::vector<std::string> PodEvents(k8s::Client& admin, const std::string& ns, const std::string& pod);

}  // namespace dra::e2e
