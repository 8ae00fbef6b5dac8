// What the driver tests on the suite's real node share: the identity the
// drivers run as and the rights its ClusterRole would give, a driver binary
// run as a process on the node (registered with the kubelet, its log and
// /metrics at hand), and the node label the fabric pools select.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dra/k8s/client.h"
#include "dra/k8s/node_selector.h"
#include "e2e/e2e_node.h"
#include "support/free_port.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {

// The service account identity (cluster.sh) the drivers run as.
inline constexpr char kDriverIdentity[] = "minimal-driver";
std::string DriverKubeconfig();

// The driver identity may publish slices and read the claims of `ns`.
void GrantDriverRights(k8s::Client& admin, const std::string& ns, const std::string& node);
// And watch claims of all namespaces and write its entries of the claims'
// status in `ns` (1.37's granular status authorization), for `driver`.
void GrantClaimStatusRights(k8s::Client& admin, const std::string& ns, const std::string& driver);

// Labels the node accelerator-type=high-performance and returns the
// selector of that label.
k8s::NodeSelector LabelTheNode(k8s::Client& admin, const NodeEnv& node);

// The UIDs of the ResourceSlices of `driver` on the node.
std::set<std::string> SliceUids(k8s::Client& admin, const std::string& node, const std::string& driver);

// A driver binary as a process on the node, with /metrics on a port of its
// own (HttpEndpoint()).
class DriverProcess {
 public:
  // How the driver names its per-claim CDI specs: as the Helper does by
  // default (<driver>/claim, JSON), or as dra-example-driver does
  // (k8s.<driver>/gpu, YAML: the GPU example).
  enum class ClaimSpecs { kHelperDefault, kReference };
  DriverProcess(const NodeEnv& node, std::string name, ClaimSpecs specs = ClaimSpecs::kHelperDefault)
      : node_(node), name_(std::move(name)), specs_(specs), port_(testing::FreePort()) {}

  const std::string& name() const { return name_; }
  std::string HttpEndpoint() const;

  // Spawns `argv` with `env` ("NAME=value") added and waits until the
  // kubelet accepted its registration (dra_registered 1 on /metrics).
  void Start(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  // Whether the process has exited, and how ("exited with status 137").
  bool Exited(std::string* how = nullptr) { return process_.Exited(how); }
  // SIGTERM; the driver must exit 0.
  void Stop();

  std::string log_file() const { return dir_.Join("driver.log"); }
  std::string Log() const;
  // How often the driver itself logged `message` for the claim with `uid`.
  int LoggedFor(const std::string& message, const std::string& uid) const;
  // A sample of the driver's /metrics: `series` as written there, e.g.
  // dra_kubelet_calls_total{method="NodePrepareResources"}; -1 if unreadable.
  double Metric(const std::string& series) const;
  int port() const { return port_; }

  // The CDI ID the Helper gives device `device` of claim `uid`.
  std::string CdiId(const std::string& uid, const std::string& device) const;
  std::string CdiSpecFile(const std::string& uid) const;

 private:
  const NodeEnv node_;
  const std::string name_;
  const ClaimSpecs specs_;
  const int port_;
  testing::TempDir dir_;
  testing::ChildProcess process_;
};

// An example driver binary (examples/gpu, examples/cpu) on the node with a
// driver name of its own ("<prefix>-<random>.example.com"), a namespace and
// the RBAC of its ClusterRole, and what its tests do with claims and pods.
struct ExampleDriverOnNode {
  std::shared_ptr<k8s::Client> admin;
  NodeEnv node;
  std::string ns;
  DriverProcess driver;
  const std::string binary;

  // Starts `binary` with the node's flags and `flags`.
  ExampleDriverOnNode(const std::string& binary, const std::string& prefix, const std::vector<std::string>& flags);

  // The command line of this driver for `process` (its /metrics port) with
  // `flags`: for a second instance of it, as in a rolling update.
  std::vector<std::string> Argv(const DriverProcess& process, const std::vector<std::string>& flags) const;

  // The driver's attributes in CEL: device.attributes["<driver>"].
  std::string Attributes() const;
  // A DeviceClass of this driver's devices that the CEL `expression` also
  // selects; returns its name.
  std::string DeviceClass(const std::string& expression = "true");
  void CreateClaim(const std::string& name, const nlohmann::json& spec);
  void CreateTemplate(const std::string& name, const nlohmann::json& spec);
  // Creates the pod and waits for it to run; returns it.
  nlohmann::json RunPod(const std::string& name, const std::vector<std::pair<std::string, std::string>>& claims,
                        bool templates);
  void DeletePod(const std::string& name);
  nlohmann::json Claim(const std::string& name);
  // The env of the pod's one container as the runtime made it.
  std::vector<std::string> ContainerEnv(const nlohmann::json& pod) const;
};

}  // namespace dra::e2e
