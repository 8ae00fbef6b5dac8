// Checks JSON against a schema of a Kubernetes OpenAPI v3 document, for tests.
//
// Supports the subset the Kubernetes documents use: $ref (to
// #/components/schemas/...), allOf, oneOf, type, properties, required, items,
// additionalProperties and x-kubernetes-preserve-unknown-fields. A schema with
// properties rejects keys it does not list, as the API server's strict field
// validation does; an object schema without properties (RawExtension) takes any
// keys. Annotations (description, default, format, x-kubernetes-*) are
// ignored; any other keyword is reported as an error, so that an unsupported
// schema never passes silently.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace dra::testing {

class OpenApiValidator {
 public:
  static absl::StatusOr<OpenApiValidator> FromFile(const std::string& path);
  explicit OpenApiValidator(nlohmann::json document);

  // Errors as "<path>: <problem>", e.g. "spec.devices.requests[0]: missing
  // required field \"name\""; empty if `value` conforms to
  // components.schemas[schema_name].
  std::vector<std::string> Validate(const nlohmann::json& value, absl::string_view schema_name) const;

 private:
  void Check(const nlohmann::json& value, const nlohmann::json& schema, const std::string& path,
             std::vector<std::string>& errors) const;
  void CheckObject(const nlohmann::json& value, const nlohmann::json& schema, const std::string& path,
                   std::vector<std::string>& errors) const;
  const nlohmann::json* Resolve(absl::string_view ref) const;

  nlohmann::json document_;
};

}  // namespace dra::testing
