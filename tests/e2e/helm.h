// The suite's helm (build-k8s.sh helm; the e2e_build_helm fixture builds it).
#pragma once

#include <string>
#include <vector>

#include "support/subprocess.h"

namespace dra::e2e {

std::string HelmPath();

// helm with `args`; fails the test when it cannot run (not when it exits
// non-zero: the caller judges that).
testing::ProcessResult Helm(std::vector<std::string> args);

}  // namespace dra::e2e
