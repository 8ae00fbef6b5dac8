// YAML as JSON, the way Go's sigs.k8s.io/yaml reads it (plain scalars become
// numbers, booleans or null; quoted ones stay strings), for tests that read
// CDI specs and Kubernetes manifests written in YAML.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace dra::testing {

nlohmann::json YamlToJson(const YAML::Node& node);

// Every non-empty document of a multi-document YAML text ("---"
// separated); InvalidArgument with the parser's message.
absl::StatusOr<std::vector<nlohmann::json>> YamlDocuments(const std::string& text);

}  // namespace dra::testing
