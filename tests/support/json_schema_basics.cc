#include "support/json_schema_basics.h"

#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dra::testing {

absl::StatusOr<nlohmann::json> LoadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json document = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, " is not valid JSON"));
  return document;
}

bool HasSchemaType(const nlohmann::json& value, absl::string_view type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "null") return value.is_null();
  return false;
}

}  // namespace dra::testing
