// Running a program to completion in tests: exit code, stdout and stderr.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

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

}  // namespace dra::testing
