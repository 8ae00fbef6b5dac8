#include "common/node_plugin_main.h"

#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_health.h"

namespace example {

namespace kp = dra::kubeletplugin;

int RunNodePlugin(std::string_view program, const PluginFlags& plugin, kp::Driver& driver, kp::Options options,
                  const dra::Logger& logger, const kp::TerminationSignals& signals, const NodePluginSteps& steps) {
  absl::StatusOr<std::unique_ptr<kp::Helper>> helper = kp::Helper::Start(driver, std::move(options));
  if (!helper.ok()) return Fail(program, "start", helper.status());
  absl::StatusOr<std::unique_ptr<GrpcHealthServer>> grpc_health = plugin.StartGrpcHealth(**helper);
  if (!grpc_health.ok()) return Fail(program, "start", grpc_health.status());
  if (absl::Status started = steps.start(**helper); !started.ok()) {
    if (steps.stop) steps.stop();
    std::cerr << program << ": " << started.message() << "\n";
    return 1;
  }
  steps.log_started();
  const int exit_code = (*helper)->Wait(signals);
  logger.Info("Stopped; the ResourceSlices stay for the next instance");
  if (steps.stop) steps.stop();
  return exit_code;
}

int Fail(std::string_view program, std::string_view what, const absl::Status& status) {
  std::cerr << program << ": " << Annotate(what, status).message() << "\n";
  return 1;
}

absl::Status Annotate(std::string_view what, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(std::string(what), ": ", status.message()));
}

}  // namespace example
