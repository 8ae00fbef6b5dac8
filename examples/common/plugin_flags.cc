#include "common/plugin_flags.h"

#include "absl/strings/str_cat.h"
#include "dra/k8s/client_config.h"

namespace example {

void PluginFlags::Register(FlagSet& flags) {
  flags.String("node-name", &node_name, "the node this plugin runs on (required)", "NODE_NAME");
  flags.String("cdi-root", &cdi_root, "where the container runtime reads CDI specs", "CDI_ROOT");
  flags.String("kubelet-registrar-directory-path", &registrar_dir, "the kubelet's plugin registration directory",
               "KUBELET_REGISTRAR_DIRECTORY_PATH");
  flags.String("kubelet-plugins-directory-path", &plugins_dir,
               "the kubelet's plugins directory; the driver keeps its sockets and checkpoint in <this>/<driver>",
               "KUBELET_PLUGINS_DIRECTORY_PATH");
  flags.String("pod-uid", &pod_uid, "this pod's UID, for rolling updates with maxSurge (downward API)", "POD_UID");
  flags.String("http-endpoint", &http_endpoint, "host:port for /metrics and /healthz; empty: none", "HTTP_ENDPOINT");
  flags.Int("metrics-port", &metrics_port,
            "TCP port of /metrics and /healthz on every interface (dra-example-driver's flag); -1: none, 0: any",
            "METRICS_PORT", -1, 65535);
  flags.Int("healthcheck-port", &healthcheck_port,
            "TCP port of a grpc.health.v1 service (\"liveness\") for gRPC liveness probes; -1: none, 0: any",
            "HEALTHCHECK_PORT", -1, 65535);
  flags.Bool("serialize", &serialize,
             "one prepare or unprepare call at a time; false lets calls run side by side (the driver is thread-safe)",
             "SERIALIZE");
  flags.Bool("device-exclusivity", &device_exclusivity,
             "refuse a claim whose device another claim on the node still holds (a force-deleted pod's); false "
             "leaves that to the scheduler alone",
             "DEVICE_EXCLUSIVITY");
  ClientFlags::Register(flags);
}

absl::StatusOr<dra::kubeletplugin::Options> PluginFlags::MakeOptions(const std::string& driver_name,
                                                                     const dra::Logger& logger) const {
  if (node_name.empty()) return absl::InvalidArgumentError("flag --node-name (or NODE_NAME) is required");
  dra::kubeletplugin::Options options;
  options.driver_name = driver_name;
  options.node_name = node_name;
  options.registrar_dir = registrar_dir;
  options.plugin_data_dir = absl::StrCat(plugins_dir, "/", driver_name);
  options.rolling_update_uid = pod_uid;
  if (metrics_port >= 0 && !http_endpoint.empty()) {
    return absl::InvalidArgumentError("flags --metrics-port and --http-endpoint both place the HTTP server: set one");
  }
  options.http_endpoint = metrics_port >= 0 ? absl::StrCat(":", metrics_port) : http_endpoint;
  options.serialize = serialize;
  options.device_exclusivity.enabled = device_exclusivity;
  options.cdi.dir.path = cdi_root;
  options.logger = logger;
  absl::StatusOr<std::shared_ptr<dra::k8s::Client>> client = MakeClient(absl::StrCat(driver_name, "/kubelet-plugin"));
  if (!client.ok()) return client.status();
  options.kube_client = *std::move(client);
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
