#include "support/openapi_validator.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "support/json_schema_basics.h"

namespace dra::testing {
namespace {

using nlohmann::json;

constexpr absl::string_view kSchemaRefPrefix = "#/components/schemas/";

std::string FieldPath(const std::string& path, absl::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
}

std::string ElementPath(const std::string& path, absl::string_view index_or_key) {
  return absl::StrCat(path, "[", index_or_key, "]");
}

// Keywords that do not constrain values. x-kubernetes-preserve-unknown-fields
// is read by CheckObject.
bool IsAnnotation(absl::string_view keyword) {
  return keyword == "description" || keyword == "default" || keyword == "format" ||
         absl::StartsWith(keyword, "x-kubernetes-");
}

bool IsObjectKeyword(absl::string_view keyword) {
  return keyword == "properties" || keyword == "required" || keyword == "additionalProperties";
}

}  // namespace

absl::StatusOr<OpenApiValidator> OpenApiValidator::FromFile(const std::string& path) {
  absl::StatusOr<json> document = LoadJsonFile(path);
  if (!document.ok()) return document.status();
  return OpenApiValidator(*std::move(document));
}

OpenApiValidator::OpenApiValidator(json document) : document_(std::move(document)) {}

std::vector<std::string> OpenApiValidator::Validate(const json& value, absl::string_view schema_name) const {
  const json* schema = Resolve(absl::StrCat(kSchemaRefPrefix, schema_name));
  if (schema == nullptr) return {absl::StrCat("no schema named ", schema_name)};
  std::vector<std::string> errors;
  Check(value, *schema, "", errors);
  return errors;
}

const json* OpenApiValidator::Resolve(absl::string_view ref) const {
  if (!absl::StartsWith(ref, kSchemaRefPrefix)) return nullptr;
  const json::json_pointer pointer("/components/schemas");
  if (!document_.contains(pointer)) return nullptr;
  const json& schemas = document_.at(pointer);
  auto it = schemas.find(std::string(ref.substr(kSchemaRefPrefix.size())));
  return it == schemas.end() ? nullptr : &*it;
}

void OpenApiValidator::Check(const json& value, const json& schema, const std::string& path,
                             std::vector<std::string>& errors) const {
  // The type comes first: the other keywords assume it holds.
  if (auto type = schema.find("type"); type != schema.end()) {
    if (!type->is_string() || !HasSchemaType(value, type->get<std::string>())) {
      errors.push_back(absl::StrCat(Where(path), ": expected ", type->dump(), ", got ", value.type_name()));
      return;
    }
  }
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& keyword = it.key();
    const json& argument = it.value();
    if (keyword == "type" || IsAnnotation(keyword) || IsObjectKeyword(keyword)) continue;
    if (keyword == "$ref") {
      const json* target = argument.is_string() ? Resolve(argument.get<std::string>()) : nullptr;
      if (target == nullptr) {
        errors.push_back(absl::StrCat(Where(path), ": unresolvable $ref ", argument.dump()));
      } else {
        Check(value, *target, path, errors);
      }
    } else if (keyword == "allOf") {
      for (const json& sub_schema : argument) Check(value, sub_schema, path, errors);
    } else if (keyword == "oneOf") {
      int matches = 0;
      for (const json& sub_schema : argument) {
        std::vector<std::string> sub_errors;
        Check(value, sub_schema, path, sub_errors);
        if (sub_errors.empty()) ++matches;
      }
      if (matches != 1) {
        errors.push_back(absl::StrCat(Where(path), ": ", value.type_name(), " matches ", matches,
                                      " of the oneOf schemas, expected exactly 1"));
      }
    } else if (keyword == "items") {
      if (!value.is_array()) continue;
      for (size_t i = 0; i < value.size(); ++i) Check(value[i], argument, ElementPath(path, absl::StrCat(i)), errors);
    } else {
      errors.push_back(absl::StrCat(Where(path), ": unsupported schema keyword \"", keyword, "\""));
    }
  }
  if (value.is_object()) CheckObject(value, schema, path, errors);
}

void OpenApiValidator::CheckObject(const json& value, const json& schema, const std::string& path,
                                   std::vector<std::string>& errors) const {
  const auto properties = schema.find("properties");
  const auto additional = schema.find("additionalProperties");
  const bool has_properties = properties != schema.end();
  const bool has_additional_schema = additional != schema.end() && additional->is_object();
  // Keys outside properties and additionalProperties schemas: allowed by
  // additionalProperties: true, by x-kubernetes-preserve-unknown-fields, and in
  // free-form objects (no properties, e.g. RawExtension).
  const bool unknown_allowed = additional != schema.end() && additional->is_boolean()
                                   ? additional->get<bool>()
                                   : !has_properties || schema.value("x-kubernetes-preserve-unknown-fields", false);
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (has_properties && properties->contains(it.key())) {
      Check(it.value(), properties->at(it.key()), FieldPath(path, it.key()), errors);
    } else if (has_additional_schema) {
      Check(it.value(), *additional, ElementPath(path, it.key()), errors);
    } else if (!unknown_allowed) {
      errors.push_back(absl::StrCat(FieldPath(path, it.key()), ": unknown field"));
    }
  }
  if (auto required = schema.find("required"); required != schema.end()) {
    for (const json& name : *required) {
      if (!name.is_string() || !value.contains(name.get<std::string>())) {
        errors.push_back(absl::StrCat(Where(path), ": missing required field ", name.dump()));
      }
    }
  }
}

}  // namespace dra::testing
