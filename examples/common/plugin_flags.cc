#include "common/plugin_flags.h"

#include "absl/strings/str_cat.h"

namespace example {

void PluginFlags::Register(dra::FlagSet& flags) {
  dra::kubeletplugin::PluginFlags::Register(flags);
  flags.Int("metrics-port", &metrics_port,
            "TCP port of /metrics and /healthz on every interface (dra-example-driver's flag); -1: none, 0: any",
            "METRICS_PORT", -1, 65535);
  flags.Int("healthcheck-port", &healthcheck_port,
            "TCP port of a grpc.health.v1 service (\"liveness\") for gRPC liveness probes; -1: none, 0: any",
            "HEALTHCHECK_PORT", -1, 65535);
}

absl::StatusOr<dra::kubeletplugin::Options> PluginFlags::MakeOptions(std::string_view driver_name) const {
  if (metrics_port >= 0 && !http_endpoint.empty()) {
    return absl::InvalidArgumentError("flags --metrics-port and --http-endpoint both place the HTTP server: set one");
  }
  absl::StatusOr<dra::kubeletplugin::Options> options = dra::kubeletplugin::PluginFlags::MakeOptions(driver_name);
  if (options.ok() && metrics_port >= 0) options->http_endpoint = absl::StrCat(":", metrics_port);
  return options;
}

absl::StatusOr<std::unique_ptr<GrpcHealthServer>> PluginFlags::StartGrpcHealth(
    const dra::kubeletplugin::Helper& helper) const {
  if (healthcheck_port < 0) return nullptr;
  absl::StatusOr<std::unique_ptr<GrpcHealthServer>> server =
      GrpcHealthServer::Start(absl::StrCat("[::]:", healthcheck_port), [&helper] { return helper.Healthy(); });
  if (!server.ok()) {
    return absl::Status(server.status().code(), absl::StrCat("--healthcheck-port: ", server.status().message()));
  }
  return server;
}

}  // namespace example
