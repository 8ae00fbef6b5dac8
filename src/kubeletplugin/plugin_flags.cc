#include "dra/kubeletplugin/plugin_flags.h"

#include "absl/strings/str_cat.h"

namespace dra::kubeletplugin {

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
  flags.Bool("serialize", &serialize,
             "one prepare or unprepare call at a time; false lets calls run side by side (the driver is thread-safe)",
             "SERIALIZE");
  flags.Bool("device-exclusivity", &device_exclusivity,
             "refuse a claim whose device another claim on the node still holds (a force-deleted pod's); false "
             "leaves that to the scheduler alone",
             "DEVICE_EXCLUSIVITY");
  ClientFlags::Register(flags);
}

absl::StatusOr<Options> PluginFlags::MakeOptions(std::string_view driver_name) const {
  if (node_name.empty()) return absl::InvalidArgumentError("flag --node-name (or NODE_NAME) is required");
  Options options;
  options.driver_name = driver_name;
  options.node_name = node_name;
  options.registrar_dir = registrar_dir;
  options.plugin_data_dir = absl::StrCat(plugins_dir, "/", options.driver_name);
  options.rolling_update_uid = pod_uid;
  options.http_endpoint = http_endpoint;
  options.serialize = serialize;
  options.device_exclusivity.enabled = device_exclusivity;
  options.cdi.dir.path = cdi_root;
  options.logger = MakeLogger();
  absl::StatusOr<std::shared_ptr<k8s::Client>> client =
      MakeClient(absl::StrCat(options.driver_name, "/kubelet-plugin"));
  if (!client.ok()) return client.status();
  options.kube_client = *std::move(client);
  return options;
}

}  // namespace dra::kubeletplugin
