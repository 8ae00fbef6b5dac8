#include "dra/k8s/client_flags.h"

#include "absl/strings/str_cat.h"

namespace dra::k8s {

void ClientFlags::Register(FlagSet& flags) {
  // Not bound to $KUBECONFIG: LoadDefaultConfig reads that itself, and it may
  // be a colon-separated list, which is no file name.
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file; default $KUBECONFIG, ~/.kube/config, in-cluster");
  flags.Double("kube-api-qps", &kube_api_qps, "API requests per second, sustained (0: no client-side limit)",
               "KUBE_API_QPS", 0, 1e6);
  flags.Int("kube-api-burst", &kube_api_burst, "API requests at once above the sustained rate", "KUBE_API_BURST", 1,
            1 << 20);
  LogFlags::Register(flags);
}

absl::StatusOr<std::shared_ptr<Client>> ClientFlags::MakeClient(std::string_view user_agent) const {
  absl::StatusOr<ClientConfig> config = LoadDefaultConfig(kubeconfig);
  if (!config.ok())
    return absl::Status(config.status().code(), absl::StrCat("API server: ", config.status().message()));
  config->user_agent = std::string(user_agent);
  config->qps = kube_api_qps;
  config->burst = kube_api_burst;
  absl::StatusOr<std::shared_ptr<Client>> client = Client::Create(*std::move(config));
  if (!client.ok())
    return absl::Status(client.status().code(), absl::StrCat("API server: ", client.status().message()));
  return client;
}

}  // namespace dra::k8s
