#include "e2e/helm.h"

#include <utility>

#include <catch2/catch.hpp>

namespace dra::e2e {

std::string HelmPath() {
  absl::StatusOr<testing::ProcessResult> dir = testing::RunProcess({DRA_E2E_BUILD_K8S, "--print-dir", "helm"});
  REQUIRE(dir.ok());
  INFO(dir->err);
  REQUIRE(dir->exit_code == 0);
  return dir->out.substr(0, dir->out.find('\n')) + "/helm";
}

testing::ProcessResult Helm(std::vector<std::string> args) {
  args.insert(args.begin(), HelmPath());
  absl::StatusOr<testing::ProcessResult> result = testing::RunProcess(args);
  REQUIRE(result.ok());
  return *std::move(result);
}

}  // namespace dra::e2e
