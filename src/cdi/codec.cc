#include "dra/cdi/codec.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cdi/field_path.h"
#include "dra/cdi/validation.h"
#include "dra/cdi/version.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace dra::cdi {
namespace {

using internal::Field;
using internal::Index;
using nlohmann::json;
using nlohmann::ordered_json;

// ---- Spec -> JSON document, in the order of the specification ----

void PutStrings(ordered_json& object, const char* key, const std::vector<std::string>& values) {
  if (!values.empty()) object[key] = values;
}

void PutString(ordered_json& object, const char* key, const std::string& value) {
  if (!value.empty()) object[key] = value;
}

ordered_json ToJson(const std::map<std::string, std::string>& annotations) {
  ordered_json object = ordered_json::object();
  for (const auto& [key, value] : annotations) object[key] = value;
  return object;
}

ordered_json ToJson(const DeviceNode& node) {
  ordered_json object = ordered_json::object();
  object["path"] = node.path;
  PutString(object, "hostPath", node.host_path);
  PutString(object, "type", node.type);
  if (node.major != 0) object["major"] = node.major;
  if (node.minor != 0) object["minor"] = node.minor;
  if (node.file_mode.has_value()) object["fileMode"] = *node.file_mode;
  PutString(object, "permissions", node.permissions);
  if (node.uid.has_value()) object["uid"] = *node.uid;
  if (node.gid.has_value()) object["gid"] = *node.gid;
  return object;
}

ordered_json ToJson(const ContainerEdits& edits) {
  ordered_json object = ordered_json::object();
  PutStrings(object, "env", edits.env);
  if (!edits.device_nodes.empty()) {
    ordered_json& nodes = object["deviceNodes"] = ordered_json::array();
    for (const DeviceNode& node : edits.device_nodes) nodes.push_back(ToJson(node));
  }
  if (!edits.net_devices.empty()) {
    ordered_json& devices = object["netDevices"] = ordered_json::array();
    for (const NetDevice& device : edits.net_devices) {
      ordered_json entry = ordered_json::object();
      entry["hostInterfaceName"] = device.host_interface_name;
      entry["name"] = device.name;
      devices.push_back(std::move(entry));
    }
  }
  if (!edits.hooks.empty()) {
    ordered_json& hooks = object["hooks"] = ordered_json::array();
    for (const Hook& hook : edits.hooks) {
      ordered_json entry = ordered_json::object();
      entry["hookName"] = hook.hook_name;
      entry["path"] = hook.path;
      PutStrings(entry, "args", hook.args);
      PutStrings(entry, "env", hook.env);
      if (hook.timeout.has_value()) entry["timeout"] = *hook.timeout;
      hooks.push_back(std::move(entry));
    }
  }
  if (!edits.mounts.empty()) {
    ordered_json& mounts = object["mounts"] = ordered_json::array();
    for (const Mount& mount : edits.mounts) {
      ordered_json entry = ordered_json::object();
      entry["hostPath"] = mount.host_path;
      entry["containerPath"] = mount.container_path;
      PutStrings(entry, "options", mount.options);
      PutString(entry, "type", mount.type);
      mounts.push_back(std::move(entry));
    }
  }
  if (edits.intel_rdt.has_value()) {
    const IntelRdt& rdt = *edits.intel_rdt;
    ordered_json entry = ordered_json::object();
    PutString(entry, "closID", rdt.clos_id);
    PutString(entry, "l3CacheSchema", rdt.l3_cache_schema);
    PutString(entry, "memBwSchema", rdt.mem_bw_schema);
    PutStrings(entry, "schemata", rdt.schemata);
    if (rdt.enable_monitoring) entry["enableMonitoring"] = true;
    object["intelRdt"] = std::move(entry);
  }
  if (!edits.additional_gids.empty()) object["additionalGids"] = edits.additional_gids;
  return object;
}

ordered_json ToJson(const Spec& spec, const Version& version) {
  ordered_json object = ordered_json::object();
  object["cdiVersion"] = version.ToString();
  object["kind"] = spec.kind;
  if (!spec.annotations.empty()) object["annotations"] = ToJson(spec.annotations);
  ordered_json& devices = object["devices"] = ordered_json::array();
  for (const Device& device : spec.devices) {
    ordered_json entry = ordered_json::object();
    entry["name"] = device.name;
    if (!device.annotations.empty()) entry["annotations"] = ToJson(device.annotations);
    entry["containerEdits"] = ToJson(device.container_edits);
    devices.push_back(std::move(entry));
  }
  if (!spec.container_edits.empty()) object["containerEdits"] = ToJson(spec.container_edits);
  return object;
}

// ---- JSON document -> YAML text ----

void EmitYaml(YAML::Emitter& out, const ordered_json& value) {
  switch (value.type()) {
    case ordered_json::value_t::object:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key << key << YAML::Value;
        EmitYaml(out, item);
      }
      out << YAML::EndMap;
      break;
    case ordered_json::value_t::array:
      if (value.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const ordered_json& item : value) EmitYaml(out, item);
      out << YAML::EndSeq;
      break;
    case ordered_json::value_t::string:
      // Quoted, so that "0", "true" or "null" stay strings for every reader.
      out << YAML::DoubleQuoted << value.get<std::string>();
      break;
    case ordered_json::value_t::boolean:
      out << (value.get<bool>() ? "true" : "false");
      break;
    case ordered_json::value_t::number_unsigned:
      out << value.get<uint64_t>();
      break;
    case ordered_json::value_t::number_integer:
      out << value.get<int64_t>();
      break;
    default:
      out << YAML::Null;
      break;
  }
}

// ---- YAML text -> JSON document ----

// The offset of the first byte of `text` that is not valid UTF-8, or npos.
// yaml-cpp passes such bytes into strings; Go's YAML decoder, which the
// reference library reads specs with, refuses them, as JSON parsers do.
size_t InvalidUtf8At(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    uint32_t code_point = 0;
    if (byte < 0x80) {
      length = 1;
      code_point = byte;
    } else if ((byte & 0xe0) == 0xc0) {
      length = 2;
      code_point = byte & 0x1f;
    } else if ((byte & 0xf0) == 0xe0) {
      length = 3;
      code_point = byte & 0x0f;
    } else if ((byte & 0xf8) == 0xf0) {
      length = 4;
      code_point = byte & 0x07;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return i;
      code_point = code_point << 6 | (next & 0x3f);
    }
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
    if (code_point < kSmallest[length] || code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff)) {
      return i;
    }
    i += length;
  }
  return absl::string_view::npos;
}

absl::StatusOr<json> ScalarToJson(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  // Quoted scalars carry the non-specific tag "!"; so do explicit strings.
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return json(text);
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return json(nullptr);
  if (text == "true" || text == "True" || text == "TRUE") return json(true);
  if (text == "false" || text == "False" || text == "FALSE") return json(false);
  int64_t signed_value = 0;
  if (absl::SimpleAtoi(text, &signed_value)) return json(signed_value);
  uint64_t unsigned_value = 0;
  if (absl::SimpleAtoi(text, &unsigned_value)) return json(unsigned_value);
  double double_value = 0;
  if (absl::ascii_isdigit(text.back()) && absl::SimpleAtod(text, &double_value)) return json(double_value);
  return json(text);
}

absl::StatusOr<json> YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) return absl::InvalidArgumentError("YAML: a mapping key is not a scalar");
        absl::StatusOr<json> value = YamlToJson(entry.second);
        if (!value.ok()) return value.status();
        object[entry.first.Scalar()] = *std::move(value);
      }
      return object;
    }
    case YAML::NodeType::Sequence: {
      json array = json::array();
      for (const auto& item : node) {
        absl::StatusOr<json> value = YamlToJson(item);
        if (!value.ok()) return value.status();
        array.push_back(*std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    default:
      return json(nullptr);
  }
}

// ---- JSON document -> Spec, strictly ----

absl::Status Invalid(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(path.empty() ? "the document" : path, ": ", problem));
}

// Reads the members of one object; every member must be claimed by a reader.
class ObjectReader {
 public:
  ObjectReader(const json& value, std::string path) : value_(value), path_(std::move(path)) {}

  using Read = std::function<absl::Status(const json&, const std::string&)>;
  ObjectReader& On(const char* key, Read read) {
    readers_.emplace(key, std::move(read));
    return *this;
  }

  absl::Status Run(std::initializer_list<const char*> required = {}) const {
    if (!value_.is_object()) return Invalid(path_, "must be an object");
    for (const char* key : required) {
      if (!value_.contains(key)) return Invalid(Field(path_, key), "required");
    }
    for (const auto& [key, item] : value_.items()) {
      const std::string path = Field(path_, key);
      auto reader = readers_.find(key);
      if (reader == readers_.end()) return Invalid(path, "unknown field");
      if (item.is_null()) continue;  // as omitted
      if (absl::Status s = reader->second(item, path); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  const json& value_;
  std::string path_;
  std::map<std::string, Read, std::less<>> readers_;
};

absl::Status ReadString(const json& value, const std::string& path, std::string& out) {
  if (!value.is_string()) return Invalid(path, "must be a string");
  out = value.get<std::string>();
  return absl::OkStatus();
}

ObjectReader::Read String(std::string& out) {
  return [&out](const json& value, const std::string& path) { return ReadString(value, path, out); };
}

ObjectReader::Read Strings(std::vector<std::string>& out) {
  return [&out](const json& value, const std::string& path) {
    if (!value.is_array()) return Invalid(path, "must be an array of strings");
    for (size_t i = 0; i < value.size(); ++i) {
      if (absl::Status s = ReadString(value[i], Index(path, i), out.emplace_back()); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
}

template <typename Int>
absl::Status ReadInteger(const json& value, const std::string& path, Int& out) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v <= static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
      out = static_cast<Int>(v);
      return absl::OkStatus();
    }
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v >= static_cast<int64_t>(std::numeric_limits<Int>::min()) &&
        (v < 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<Int>::max()))) {
      out = static_cast<Int>(v);
      return absl::OkStatus();
    }
  } else {
    return Invalid(path, "must be an integer");
  }
  return Invalid(path, absl::StrCat("out of range [", std::numeric_limits<Int>::min(), ", ",
                                    std::numeric_limits<Int>::max(), "]"));
}

template <typename Int>
ObjectReader::Read Integer(Int& out) {
  return [&out](const json& value, const std::string& path) { return ReadInteger(value, path, out); };
}

template <typename Int>
ObjectReader::Read OptionalInteger(std::optional<Int>& out) {
  return [&out](const json& value, const std::string& path) { return ReadInteger(value, path, out.emplace()); };
}

ObjectReader::Read Annotations(std::map<std::string, std::string>& out) {
  return [&out](const json& value, const std::string& path) {
    if (!value.is_object()) return Invalid(path, "must be an object of strings");
    for (const auto& [key, item] : value.items()) {
      if (absl::Status s = ReadString(item, absl::StrCat(path, "[\"", key, "\"]"), out[key]); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
}

// Reads an array of objects with `read_one(item, path, element)`.
template <typename T, typename ReadOne>
ObjectReader::Read Objects(std::vector<T>& out, ReadOne read_one) {
  return [&out, read_one](const json& value, const std::string& path) {
    if (!value.is_array()) return Invalid(path, "must be an array");
    for (size_t i = 0; i < value.size(); ++i) {
      if (absl::Status s = read_one(value[i], Index(path, i), out.emplace_back()); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
}

absl::Status ReadDeviceNode(const json& value, const std::string& path, DeviceNode& node) {
  return ObjectReader(value, path)
      .On("path", String(node.path))
      .On("hostPath", String(node.host_path))
      .On("type", String(node.type))
      .On("major", Integer(node.major))
      .On("minor", Integer(node.minor))
      .On("fileMode", OptionalInteger(node.file_mode))
      .On("permissions", String(node.permissions))
      .On("uid", OptionalInteger(node.uid))
      .On("gid", OptionalInteger(node.gid))
      .Run({"path"});
}

absl::Status ReadNetDevice(const json& value, const std::string& path, NetDevice& device) {
  return ObjectReader(value, path)
      .On("hostInterfaceName", String(device.host_interface_name))
      .On("name", String(device.name))
      .Run({"hostInterfaceName", "name"});
}

absl::Status ReadHook(const json& value, const std::string& path, Hook& hook) {
  return ObjectReader(value, path)
      .On("hookName", String(hook.hook_name))
      .On("path", String(hook.path))
      .On("args", Strings(hook.args))
      .On("env", Strings(hook.env))
      .On("timeout", OptionalInteger(hook.timeout))
      .Run({"hookName", "path"});
}

absl::Status ReadMount(const json& value, const std::string& path, Mount& mount) {
  return ObjectReader(value, path)
      .On("hostPath", String(mount.host_path))
      .On("containerPath", String(mount.container_path))
      .On("options", Strings(mount.options))
      .On("type", String(mount.type))
      .Run({"hostPath", "containerPath"});
}

absl::Status ReadIntelRdt(const json& value, const std::string& path, IntelRdt& rdt) {
  return ObjectReader(value, path)
      .On("closID", String(rdt.clos_id))
      .On("l3CacheSchema", String(rdt.l3_cache_schema))
      .On("memBwSchema", String(rdt.mem_bw_schema))
      .On("schemata", Strings(rdt.schemata))
      .On("enableMonitoring",
          [&rdt](const json& item, const std::string& item_path) {
            if (!item.is_boolean()) return Invalid(item_path, "must be a boolean");
            rdt.enable_monitoring = item.get<bool>();
            return absl::OkStatus();
          })
      .Run();
}

absl::Status ReadContainerEdits(const json& value, const std::string& path, ContainerEdits& edits) {
  return ObjectReader(value, path)
      .On("env", Strings(edits.env))
      .On("deviceNodes", Objects(edits.device_nodes, ReadDeviceNode))
      .On("netDevices", Objects(edits.net_devices, ReadNetDevice))
      .On("hooks", Objects(edits.hooks, ReadHook))
      .On("mounts", Objects(edits.mounts, ReadMount))
      .On("intelRdt",
          [&edits](const json& item, const std::string& item_path) {
            return ReadIntelRdt(item, item_path, edits.intel_rdt.emplace());
          })
      .On("additionalGids",
          Objects(edits.additional_gids, [](const json& item, const std::string& item_path,
                                            uint32_t& gid) { return ReadInteger(item, item_path, gid); }))
      .Run();
}

ObjectReader::Read Edits(ContainerEdits& out) {
  return [&out](const json& value, const std::string& path) { return ReadContainerEdits(value, path, out); };
}

absl::Status ReadDevice(const json& value, const std::string& path, Device& device) {
  // The device's name is not known before it is read: report by index.
  return ObjectReader(value, path)
      .On("name", String(device.name))
      .On("annotations", Annotations(device.annotations))
      .On("containerEdits", Edits(device.container_edits))
      .Run({"name", "containerEdits"});
}

absl::StatusOr<Spec> ReadSpec(const json& value) {
  Spec spec;
  absl::Status status = ObjectReader(value, "")
                            .On("cdiVersion", String(spec.cdi_version))
                            .On("kind", String(spec.kind))
                            .On("annotations", Annotations(spec.annotations))
                            .On("devices", Objects(spec.devices, ReadDevice))
                            .On("containerEdits", Edits(spec.container_edits))
                            .Run({"cdiVersion", "kind", "devices"});
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("CDI spec: ", status.message()));
  }
  return spec;
}

}  // namespace

absl::string_view FileExtension(Format format) { return format == Format::kYaml ? ".yaml" : ".json"; }

absl::StatusOr<std::string> EncodeSpec(const Spec& spec, Format format) {
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  absl::StatusOr<Version> version = ResolveVersion(spec);
  if (!version.ok()) return version.status();
  const ordered_json document = ToJson(spec, *version);
  // Strings built in memory (a driver's edits) may hold bytes that are not
  // UTF-8: they become U+FFFD, as with Go's encoding/json and yaml-cpp's
  // emitter, instead of nlohmann's default exception.
  if (format == Format::kJson) {
    return absl::StrCat(document.dump(2, ' ', false, ordered_json::error_handler_t::replace), "\n");
  }
  YAML::Emitter out;
  out.SetIndent(2);
  EmitYaml(out, document);
  if (!out.good()) return absl::InternalError(absl::StrCat("YAML encoding: ", out.GetLastError()));
  return absl::StrCat("---\n", out.c_str(), "\n");
}

absl::StatusOr<Spec> DecodeSpec(absl::string_view text, Format format) {
  if (format == Format::kJson) {
    json document = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) return absl::InvalidArgumentError("CDI spec: not valid JSON");
    return ReadSpec(document);
  }
  if (const size_t at = InvalidUtf8At(text); at != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("CDI spec: not valid YAML: invalid UTF-8 at byte ", at));
  }
  YAML::Node node;
  try {
    node = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("CDI spec: not valid YAML: ", e.what()));
  }
  absl::StatusOr<json> document = YamlToJson(node);
  if (!document.ok()) return document.status();
  return ReadSpec(*document);
}

}  // namespace dra::cdi
