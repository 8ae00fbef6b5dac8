// The plugin process dractl sanity checks: a child it started from the
// plugin's command line, or one it was given the PID of.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dra::sanity {

class PluginProcess {
 public:
  // Starts `argv` (argv[0] looked up in PATH) with this process's
  // environment, its stdout going to this process's stderr.
  static absl::StatusOr<PluginProcess> Start(const std::vector<std::string>& argv);
  // A process this one did not start, known by its PID.
  static PluginProcess Adopt(pid_t pid);

  PluginProcess(PluginProcess&& other) noexcept;
  PluginProcess& operator=(PluginProcess&&) = delete;
  // A child still running is killed (SIGKILL) and reaped.
  ~PluginProcess();

  pid_t pid() const { return pid_; }
  // Whether it has exited: reaped, for a child; for another process, gone
  // or a zombie its parent has not reaped yet.
  bool Exited();
  // How a child ended ("exited with status 0", "was killed by signal 15");
  // empty before that, or for a process it did not start.
  const std::string& how() const { return how_; }

 private:
  PluginProcess() = default;

  pid_t pid_ = 0;
  bool child_ = false;
  std::string how_;
};

}  // namespace dra::sanity
