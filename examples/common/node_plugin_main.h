// The steps every example's node plugin takes between its options and its
// exit code, so that each main says only what is its own: start the Helper
// and the --healthcheck-port server, publish (the driver's start step), log
// that it started, wait for SIGTERM or a fatal error, stop.
#pragma once

#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "common/plugin_flags.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/options.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/log.h"

namespace example {

// What one driver's node plugin does beside the common steps.
struct NodePluginSteps {
  // Once the Helper serves: publish the driver's resources, start what keeps
  // them current. An error ends start-up with exit code 1 and its message
  // after "<program>: ": name the step in it (Annotate).
  std::function<absl::Status(dra::kubeletplugin::Helper& helper)> start;
  // Logs that the driver started, with what it serves.
  std::function<void()> log_started;
  // After Helper::Wait, or after `start` failed, while the Helper still
  // serves: stop what `start` (and main) started. May be empty.
  std::function<void()> stop;
};

// Starts the Helper serving `driver` with `options`, then plugin's
// --healthcheck-port server, then steps.start; logs steps.log_started; waits
// (Helper::Wait); logs that it stopped, runs steps.stop. Returns main's exit
// code: Helper::Wait's, or 1 when starting failed (reported by Fail).
int RunNodePlugin(std::string_view program, const PluginFlags& plugin, dra::kubeletplugin::Driver& driver,
                  dra::kubeletplugin::Options options, const dra::Logger& logger,
                  const dra::kubeletplugin::TerminationSignals& signals, const NodePluginSteps& steps);

// Prints "<program>: <what>: <message>" on stderr; returns 1, main's exit
// code for a failed start.
int Fail(std::string_view program, std::string_view what, const absl::Status& status);

// `status` with "<what>: " before its message; OK stays OK.
absl::Status Annotate(std::string_view what, const absl::Status& status);

}  // namespace example
