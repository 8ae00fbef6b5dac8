#include "support/yaml_json.h"

#include "absl/strings/numbers.h"

namespace dra::testing {

using nlohmann::json;

json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& entry : node) object[entry.first.Scalar()] = YamlToJson(entry.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      json array = json::array();
      for (const auto& item : node) array.push_back(YamlToJson(item));
      return array;
    }
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() == "!") return text;
      if (text == "true") return true;
      if (text == "false") return false;
      if (text == "null" || text == "~") return nullptr;
      int64_t number = 0;
      if (absl::SimpleAtoi(text, &number)) return number;
      return text;
    }
    default:
      return nullptr;
  }
}

absl::StatusOr<std::vector<json>> YamlDocuments(const std::string& text) {
  std::vector<json> documents;
  try {
    for (const YAML::Node& document : YAML::LoadAll(text)) {
      if (document.IsNull()) continue;
      documents.push_back(YamlToJson(document));
    }
  } catch (const YAML::Exception& error) {
    return absl::InvalidArgumentError(error.what());
  }
  return documents;
}

}  // namespace dra::testing
