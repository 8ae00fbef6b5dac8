/// @file
/// dra::k8s::ClientFlags: the flags of a program that talks to the API
/// server, and the client they ask for in one call: --kubeconfig (else
/// $KUBECONFIG, ~/.kube/config, else the in-cluster service account, as
/// LoadDefaultConfig), the client's rate limit, and LogFlags' -v and
/// --log-format. A default-constructed ClientFlags makes the client of the
/// environment.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dra/flags.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/log_flags.h"

namespace dra::k8s {

/// The API client's flags; register them, parse, then MakeClient().
struct ClientFlags : LogFlags {
  std::string kubeconfig;                     ///< --kubeconfig
  double kube_api_qps = ClientConfig().qps;   ///< --kube-api-qps, KUBE_API_QPS (0: no limit)
  int kube_api_burst = ClientConfig().burst;  ///< --kube-api-burst, KUBE_API_BURST

  /// These flags, then LogFlags'.
  void Register(FlagSet& flags);

  /// The API client, with `user_agent`; errors start with "API server: ".
  absl::StatusOr<std::shared_ptr<Client>> MakeClient(std::string_view user_agent) const;
};

}  // namespace dra::k8s
