// A control plane of its own (cluster.sh in a temp dir), for what the shared
// one must not see: feature gates off, or its kube-apiserver hung or
// stopped. Stopped when the object goes.
#pragma once

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "dra/k8s/client.h"
#include "support/temp_dir.h"

namespace dra::e2e {

class PrivateCluster {
 public:
  // `feature_gates`, `runtime_config` empty: the suite's (cluster.sh); else
  // these (the kube-apiserver's --feature-gates, --runtime-config).
  explicit PrivateCluster(const std::string& feature_gates = "", const std::string& runtime_config = "");
  ~PrivateCluster();
  PrivateCluster(const PrivateCluster&) = delete;
  PrivateCluster& operator=(const PrivateCluster&) = delete;

  // An admin client without client-side retries (what retries is under
  // test) or rate limit.
  std::shared_ptr<k8s::Client> Admin(absl::Duration timeout = absl::Seconds(30)) const;

  // SIGSTOP / SIGCONT to the kube-apiserver: it stops answering without
  // closing connections, as a hung or unreachable server does.
  void Freeze();
  void Thaw();
  // cluster.sh apiserver-stop / apiserver-start: connections are refused
  // until it is back (Start returns once /readyz is ok).
  void StopApiServer();
  void StartApiServer();
  // cluster.sh etcd-compact: etcd's history up to now is gone, so a watch
  // resuming from an older resourceVersion gets 410 Gone.
  void CompactEtcd();
  // cluster.sh node-start with DRA_E2E_RUNTIME=`runtime`; returns once the
  // node is Ready.
  void StartNode(const std::string& runtime);
  // A value of the cluster's cluster.env (DRA_E2E_NET_SLOT, ...).
  std::string Env(const std::string& name) const;

 private:
  void Signal(int signal);
  void Script(const std::string& command);

  testing::TempDir dir_;
  std::string script_;
};

}  // namespace dra::e2e
