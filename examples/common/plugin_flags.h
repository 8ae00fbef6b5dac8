// example::PluginFlags: the SDK's kubelet plugin flags
// (dra::kubeletplugin::PluginFlags) and two that dra-example-driver's chart
// sets: --metrics-port and --healthcheck-port.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/grpc_health.h"
#include "dra/flags.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/options.h"
#include "dra/kubeletplugin/plugin_flags.h"

namespace example {

struct PluginFlags : dra::kubeletplugin::PluginFlags {
  int metrics_port = -1;      // --metrics-port, METRICS_PORT: /metrics, /healthz on ":<port>"
  int healthcheck_port = -1;  // --healthcheck-port, HEALTHCHECK_PORT: grpc.health.v1

  // The SDK's flags, then these.
  void Register(dra::FlagSet& flags);

  // The SDK's options, the HTTP server on --metrics-port where given;
  // InvalidArgument when it and --http-endpoint are both set.
  absl::StatusOr<dra::kubeletplugin::Options> MakeOptions(std::string_view driver_name) const;

  // With --healthcheck-port >= 0, a grpc.health.v1 server on that port (0:
  // any) that follows `helper`'s health; nullptr without.
  absl::StatusOr<std::unique_ptr<GrpcHealthServer>> StartGrpcHealth(const dra::kubeletplugin::Helper& helper) const;
};

}  // namespace example
