// Running programs in tests: to completion (exit code, stdout and stderr),
// or in the background with their output in a log file.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dra::testing {

struct ProcessResult {
  // The exit status, or 128 + the signal that ended the process.
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with argv[1..] and the current environment, reading
// stdout and stderr together so that neither pipe can fill up and block the
// child. Fails only when the program cannot be started.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv);

// A program running in the background, stdin from /dev/null, stdout and
// stderr appended to a log file. The destructor stops it.
class ChildProcess {
 public:
  // Starts argv[0] (a path) with argv[1..] and the current environment,
  // plus `env` ("NAME=value", replacing a variable of that name).
  static absl::StatusOr<ChildProcess> Spawn(const std::vector<std::string>& argv, const std::string& log_file,
                                            const std::vector<std::string>& env = {});

  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Reaps the process without blocking: true once it has exited (or was
  // never started), with how it ended in `how` ("exited with status 1").
  bool Exited(std::string* how = nullptr);
  // SIGTERM, then SIGKILL after `grace`; waits for the exit. Returns how the
  // process ended.
  std::string Stop(absl::Duration grace = absl::Seconds(10));
  // SIGKILL, as a crash would; waits for the exit.
  void Kill();

 private:
  pid_t pid_ = -1;
  std::string how_;
};

}  // namespace dra::testing
