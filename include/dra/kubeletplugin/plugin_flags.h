/// @file
/// dra::kubeletplugin::PluginFlags: the flags and environment variables every
/// kubelet plugin takes, with the names and defaults of the Go drivers
/// (kubernetes-sigs/dra-example-driver), turned into the Helper's Options in
/// one call; the API client's and the log's flags are ClientFlags'.
///
///     dra::FlagSet flags("my-driver", "A DRA driver for my devices.");
///     dra::kubeletplugin::PluginFlags plugin_flags;
///     plugin_flags.Register(flags);
///     if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
///     absl::StatusOr<dra::kubeletplugin::Options> options = plugin_flags.MakeOptions("my.example.com");
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dra/flags.h"
#include "dra/k8s/client_flags.h"
#include "dra/kubeletplugin/options.h"

namespace dra::kubeletplugin {

/// The kubelet plugin's flags; register them, parse, then MakeOptions().
struct PluginFlags : k8s::ClientFlags {
  std::string node_name;                                            ///< --node-name, NODE_NAME (required)
  std::string cdi_root = "/var/run/cdi";                            ///< --cdi-root, CDI_ROOT
  std::string registrar_dir = "/var/lib/kubelet/plugins_registry";  ///< --kubelet-registrar-directory-path
  std::string plugins_dir = "/var/lib/kubelet/plugins";             ///< --kubelet-plugins-directory-path
  std::string pod_uid;             ///< --pod-uid, POD_UID (downward API): Options::rolling_update_uid
  std::string http_endpoint;       ///< --http-endpoint, HTTP_ENDPOINT: /metrics, /healthz
  bool serialize = true;           ///< --serialize, SERIALIZE: Options::serialize
  bool device_exclusivity = true;  ///< --device-exclusivity, DEVICE_EXCLUSIVITY

  /// These flags, then ClientFlags'.
  void Register(FlagSet& flags);

  /// Options for `driver_name` (plugin data dir `plugins_dir/driver_name`),
  /// with the logger of the log flags and the API client; InvalidArgument
  /// naming the flag when one is missing, the loader's error ("API server:
  /// ...") when no API server config is found. The Helper checks the rest
  /// when it starts.
  absl::StatusOr<Options> MakeOptions(std::string_view driver_name) const;
};

}  // namespace dra::kubeletplugin
