// cdi_spec_check FILE...: checks CDI spec files the way the tests do, for the
// shell e2e tests: against the official JSON schema, then with dra::cdi's
// strict decoder and validator. Prints "ok <file>" or the problems; exits 1
// if any file fails.
#include <cstdio>
#include <string>

#include "absl/strings/match.h"
#include "dra/cdi/codec.h"
#include "dra/cdi/validation.h"
#include "support/cdi_schema_validator.h"
#include "support/temp_dir.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cdi_spec_check FILE...\n");
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string path = argv[i];
    const std::string text = dra::testing::ReadFile(path);
    std::vector<std::string> problems = dra::testing::CdiSchemaValidator::Reference().ValidateText(text);
    const auto format = absl::EndsWith(path, ".yaml") ? dra::cdi::Format::kYaml : dra::cdi::Format::kJson;
    absl::StatusOr<dra::cdi::Spec> spec = dra::cdi::DecodeSpec(text, format);
    if (!spec.ok()) {
      problems.emplace_back(spec.status().message());
    } else if (absl::Status status = dra::cdi::ValidateSpec(*spec); !status.ok()) {
      problems.emplace_back(status.message());
    }
    if (text.empty()) problems.emplace_back("empty or unreadable");
    if (problems.empty()) {
      std::printf("ok %s\n", path.c_str());
      continue;
    }
    ++failed;
    for (const std::string& problem : problems) std::printf("FAIL %s: %s\n", path.c_str(), problem.c_str());
  }
  return failed == 0 ? 0 : 1;
}
