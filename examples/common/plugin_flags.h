// example::PluginFlags: the flags and environment every example node plugin
// takes, with the names and defaults of the Go drivers
// (kubernetes-sigs/dra-example-driver), turned into kubeletplugin::Options
// and an API client (--kubeconfig, else $KUBECONFIG, ~/.kube/config, else the
// in-cluster service account).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/flags.h"
#include "common/grpc_health.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/options.h"
#include "dra/log.h"

namespace example {

struct PluginFlags {
  std::string node_name;                                            // --node-name, NODE_NAME (required)
  std::string kubeconfig;                                           // --kubeconfig, KUBECONFIG
  std::string cdi_root = "/var/run/cdi";                            // --cdi-root, CDI_ROOT
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";  // --kubelet-registrar-directory-path
  std::string plugins_dir = "/var/lib/kubelet/plugins";             // --kubelet-plugins-directory-path
  std::string pod_uid;                                              // --pod-uid, POD_UID (rolling updates)
  std::string http_endpoint;       // --http-endpoint, HTTP_ENDPOINT: /metrics, /healthz
  int healthcheck_port = -1;       // --healthcheck-port, HEALTHCHECK_PORT: grpc.health.v1
  bool serialize = true;           // --serialize, SERIALIZE: Options::serialize
  bool device_exclusivity = true;  // --device-exclusivity, DEVICE_EXCLUSIVITY: Options::device_exclusivity.enabled
  double kube_api_qps = dra::k8s::ClientConfig().qps;   // --kube-api-qps, KUBE_API_QPS (0: no limit)
  int kube_api_burst = dra::k8s::ClientConfig().burst;  // --kube-api-burst, KUBE_API_BURST
  int verbosity = 0;                                    // -v
  std::string log_format = "text";                      // --log-format text|json

  void Register(FlagSet& flags);

  // The logger the flags ask for.
  dra::Logger MakeLogger() const;

  // The API client (--kubeconfig, else the usual search), with
  // `user_agent`.
  absl::StatusOr<std::shared_ptr<dra::k8s::Client>> MakeClient(const std::string& user_agent) const;

  // Options for `driver_name` (plugin data dir <plugins_dir>/<driver_name>)
  // with the API client; InvalidArgument naming the flag when one is
  // missing or wrong, the loader's error when no API server config is found.
  absl::StatusOr<dra::kubeletplugin::Options> MakeOptions(const std::string& driver_name,
                                                          const dra::Logger& logger) const;

  // With --healthcheck-port >= 0, a grpc.health.v1 server on that port (0:
  // any) that follows `helper`'s health; nullptr without.
  absl::StatusOr<std::unique_ptr<GrpcHealthServer>> StartGrpcHealth(const dra::kubeletplugin::Helper& helper) const;
};

}  // namespace example
