#include "support/json_locations.h"

#include "absl/strings/str_cat.h"

namespace dra::testing {
namespace {

using nlohmann::json;

void Collect(const json& value, const json::json_pointer& pointer, const std::string& path, const JsonShape& shape,
             std::vector<JsonLocation>& out) {
  const std::string key = pointer.empty() ? "" : pointer.back();
  if (shape.raw_keys.count(key) > 0) return;
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string child_path = absl::StrCat(path, "[", i, "]");
      out.push_back({pointer / i, child_path, value[i]});
      Collect(value[i], pointer / i, child_path, shape, out);
    }
  } else if (value.is_object()) {
    const bool is_map = shape.map_keys.count(key) > 0;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string child_path = is_map         ? absl::StrCat(path, "[", it.key(), "]")
                                     : path.empty() ? it.key()
                                                    : absl::StrCat(path, ".", it.key());
      out.push_back({pointer / it.key(), child_path, it.value()});
      Collect(it.value(), pointer / it.key(), child_path, shape, out);
    }
  }
}

}  // namespace

std::vector<JsonLocation> AllLocations(const json& document, const JsonShape& shape) {
  std::vector<JsonLocation> locations;
  Collect(document, json::json_pointer(), "", shape, locations);
  return locations;
}

json WrongTypeFor(const json& value) {
  if (value.is_string()) return true;
  if (value.is_number() || value.is_boolean()) return "42";
  if (value.is_object()) return json::array();
  return json::object();
}

}  // namespace dra::testing
