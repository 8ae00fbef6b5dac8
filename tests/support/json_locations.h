// Every value in a JSON document with its JSON pointer and its path as the
// dra::k8s codecs print it in errors: for tests that change each value in
// turn (wrong types, nulls) and check the error names the right place.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dra::testing {

struct JsonLocation {
  nlohmann::json::json_pointer pointer;
  std::string path;  // "spec.devices[0].attributes[model]"
  nlohmann::json value;
};

struct JsonShape {
  // Objects under these keys are string-keyed maps: children print as [key].
  std::set<std::string> map_keys;
  // Objects under these keys are raw JSON: nothing inside is listed.
  std::set<std::string> raw_keys;
};

// All locations but the root, in document order.
std::vector<JsonLocation> AllLocations(const nlohmann::json& document, const JsonShape& shape);

// A value that neither a string, a quantity, an integer nor a boolean field
// accepts where `value` stands.
nlohmann::json WrongTypeFor(const nlohmann::json& value);

}  // namespace dra::testing
