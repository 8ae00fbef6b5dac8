#include "support/cdi_schema_validator.h"

#include <regex>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "support/json_schema_basics.h"
#include "support/yaml_json.h"

namespace dra::testing {
namespace {

using nlohmann::json;

bool IsSkipped(const std::string& keyword) {
  return keyword == "description" || keyword == "$schema" || keyword == "definitions" || keyword == "ref";
}

}  // namespace

absl::StatusOr<CdiSchemaValidator> CdiSchemaValidator::FromDirectory(const std::string& dir) {
  CdiSchemaValidator validator;
  for (const char* file : {"schema.json", "defs.json"}) {
    absl::StatusOr<json> document = LoadJsonFile(absl::StrCat(dir, "/", file));
    if (!document.ok()) return document.status();
    validator.documents_[file] = *std::move(document);
  }
  return validator;
}

const CdiSchemaValidator& CdiSchemaValidator::Reference() {
  static const CdiSchemaValidator* const validator = [] {
    absl::StatusOr<CdiSchemaValidator> loaded = FromDirectory(DRA_REFERENCE_DIR "/cdi");
    if (!loaded.ok()) throw std::runtime_error(std::string(loaded.status().message()));
    return new CdiSchemaValidator(*std::move(loaded));
  }();
  return *validator;
}

std::vector<std::string> CdiSchemaValidator::Validate(const json& value) const {
  std::vector<std::string> errors;
  Check(value, documents_.at("schema.json"), "schema.json", "", errors);
  return errors;
}

std::vector<std::string> CdiSchemaValidator::ValidateText(const std::string& text) const {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    try {
      document = YamlToJson(YAML::Load(text));
    } catch (const YAML::Exception& e) {
      return {absl::StrCat("neither JSON nor YAML: ", e.what())};
    }
  }
  return Validate(document);
}

void CdiSchemaValidator::Check(const json& value, const json& schema, const std::string& file, const std::string& path,
                               std::vector<std::string>& errors) const {
  if (auto ref = schema.find("$ref"); ref != schema.end()) {
    // "other.json#/pointer" or "#/pointer" (in `file`).
    const std::string target = ref->get<std::string>();
    const size_t hash = target.find('#');
    const std::string ref_file = hash == 0 ? file : target.substr(0, hash);
    auto document = documents_.find(ref_file);
    const json::json_pointer pointer(hash == std::string::npos ? "" : target.substr(hash + 1));
    if (document == documents_.end() || !document->second.contains(pointer)) {
      errors.push_back(absl::StrCat(Where(path), ": unresolved $ref ", target));
      return;
    }
    Check(value, document->second.at(pointer), ref_file, path, errors);
  }
  if (auto type = schema.find("type"); type != schema.end()) {
    if (!HasSchemaType(value, type->get<std::string>())) {
      errors.push_back(absl::StrCat(Where(path), ": want type ", type->get<std::string>(), ", got ", value.dump()));
      return;
    }
  }
  for (const auto& [keyword, argument] : schema.items()) {
    if (keyword == "$ref" || keyword == "type" || IsSkipped(keyword)) continue;
    if (keyword == "properties") {
      if (!value.is_object()) continue;
      for (const auto& [name, property] : argument.items()) {
        if (auto member = value.find(name); member != value.end()) {
          Check(*member, property, file, path.empty() ? name : absl::StrCat(path, ".", name), errors);
        }
      }
    } else if (keyword == "required") {
      if (!value.is_object()) continue;
      for (const json& name : argument) {
        if (!value.contains(name.get<std::string>())) {
          errors.push_back(absl::StrCat(Where(path), ": missing required field \"", name.get<std::string>(), "\""));
        }
      }
    } else if (keyword == "patternProperties") {
      if (!value.is_object()) continue;
      for (const auto& [pattern, property] : argument.items()) {
        const std::regex re(pattern);
        for (const auto& [name, member] : value.items()) {
          if (std::regex_search(name, re)) Check(member, property, file, absl::StrCat(path, "[", name, "]"), errors);
        }
      }
    } else if (keyword == "items") {
      if (!value.is_array()) continue;
      for (size_t i = 0; i < value.size(); ++i)
        Check(value[i], argument, file, absl::StrCat(path, "[", i, "]"), errors);
    } else if (keyword == "minimum" || keyword == "maximum") {
      if (!value.is_number()) continue;
      // Compare as integers when both are: int64/uint32 bounds exceed a double's precision.
      bool in_range = true;
      if (value.is_number_integer() && argument.is_number_integer()) {
        const bool value_negative =
            value.is_number_integer() && !value.is_number_unsigned() && value.get<int64_t>() < 0;
        const bool bound_negative = !argument.is_number_unsigned() && argument.get<int64_t>() < 0;
        if (keyword == "minimum") {
          in_range = value_negative == bound_negative
                         ? (value_negative ? value.get<int64_t>() >= argument.get<int64_t>()
                                           : value.get<uint64_t>() >= argument.get<uint64_t>())
                         : bound_negative;
        } else {
          in_range = value_negative == bound_negative
                         ? (value_negative ? value.get<int64_t>() <= argument.get<int64_t>()
                                           : value.get<uint64_t>() <= argument.get<uint64_t>())
                         : value_negative;
        }
      } else {
        in_range = keyword == "minimum" ? value.get<double>() >= argument.get<double>()
                                        : value.get<double>() <= argument.get<double>();
      }
      if (!in_range)
        errors.push_back(absl::StrCat(Where(path), ": ", value.dump(), " violates ", keyword, " ", argument.dump()));
    } else {
      errors.push_back(absl::StrCat(Where(path), ": unsupported schema keyword \"", keyword, "\""));
    }
  }
}

}  // namespace dra::testing
