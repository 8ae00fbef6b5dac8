// example::ClientFlags: the flags every example program that talks to the
// API server and logs takes (the node plugins, dra-example-controller):
// --kubeconfig (else $KUBECONFIG, ~/.kube/config, else the in-cluster
// service account), the client's rate limit, and LogFlags' -v and
// --log-format.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/flags.h"
#include "common/log_flags.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"

namespace example {

struct ClientFlags : LogFlags {
  std::string kubeconfig;                               // --kubeconfig
  double kube_api_qps = dra::k8s::ClientConfig().qps;   // --kube-api-qps, KUBE_API_QPS (0: no limit)
  int kube_api_burst = dra::k8s::ClientConfig().burst;  // --kube-api-burst, KUBE_API_BURST

  void Register(FlagSet& flags);

  // The API client (--kubeconfig, else the usual search), with
  // `user_agent`; errors start with "API server: ".
  absl::StatusOr<std::shared_ptr<dra::k8s::Client>> MakeClient(const std::string& user_agent) const;
};

}  // namespace example
