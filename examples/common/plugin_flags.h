// example::PluginFlags: the flags and environment every example node plugin
// takes, with the names and defaults of the Go drivers
// (kubernetes-sigs/dra-example-driver), turned into kubeletplugin::Options;
// the API client's and the log's are ClientFlags'.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client_flags.h"
#include "common/flags.h"
#include "common/grpc_health.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/options.h"
#include "dra/log.h"

namespace example {

struct PluginFlags : ClientFlags {
  std::string node_name;                                            // --node-name, NODE_NAME (required)
  std::string cdi_root = "/var/run/cdi";                            // --cdi-root, CDI_ROOT
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";  // --kubelet-registrar-directory-path
  std::string plugins_dir = "/var/lib/kubelet/plugins";             // --kubelet-plugins-directory-path
  std::string pod_uid;                                              // --pod-uid, POD_UID (rolling updates)
  std::string http_endpoint;       // --http-endpoint, HTTP_ENDPOINT: /metrics, /healthz
  int metrics_port = -1;           // --metrics-port, METRICS_PORT: the same on ":<port>" (the reference's flag)
  int healthcheck_port = -1;       // --healthcheck-port, HEALTHCHECK_PORT: grpc.health.v1
  bool serialize = true;           // --serialize, SERIALIZE: Options::serialize
  bool device_exclusivity = true;  // --device-exclusivity, DEVICE_EXCLUSIVITY: Options::device_exclusivity.enabled

  // These flags, then ClientFlags'.
  void Register(FlagSet& flags);

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
