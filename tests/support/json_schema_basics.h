// Pieces shared by the tests' two schema validators (the CDI JSON schema and
// the API server's OpenAPI document).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace dra::testing {

// Parses a JSON file; errors name the file.
absl::StatusOr<nlohmann::json> LoadJsonFile(const std::string& path);

// Whether `value` is of the schema type `type` ("object", "integer", ...).
bool HasSchemaType(const nlohmann::json& value, absl::string_view type);

// A value's path for an error message: "<root>" for the document itself.
inline std::string Where(const std::string& path) { return path.empty() ? "<root>" : path; }

}  // namespace dra::testing
