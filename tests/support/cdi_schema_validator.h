// Checks JSON against the official CDI JSON schema (draft-07), for tests.
//
// Covers what schema.json and defs.json use: $ref to another file of the
// same directory or within a document (JSON pointer), type, properties,
// required, items, patternProperties, minimum and maximum. Annotations
// (description, $schema, definitions) are skipped, and so is "ref", a typo in
// defs.json that draft-07 ignores as an unknown keyword; any other keyword is
// reported as an error so that an unsupported schema never passes silently.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace dra::testing {

class CdiSchemaValidator {
 public:
  // Loads <dir>/schema.json and the files it refers to.
  static absl::StatusOr<CdiSchemaValidator> FromDirectory(const std::string& dir);
  // The copy under tests/data/reference/cdi.
  static const CdiSchemaValidator& Reference();

  // Errors as "<path>: <problem>"; empty when `value` conforms.
  std::vector<std::string> Validate(const nlohmann::json& value) const;
  // Same, for JSON or YAML text (YAML is converted the way Go's sigs.k8s.io/yaml does).
  std::vector<std::string> ValidateText(const std::string& text) const;

 private:
  void Check(const nlohmann::json& value, const nlohmann::json& schema, const std::string& file,
             const std::string& path, std::vector<std::string>& errors) const;

  std::map<std::string, nlohmann::json> documents_;  // by file name
};

}  // namespace dra::testing
