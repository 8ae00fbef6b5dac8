#include "kubeletplugin/checkpoint_codec.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kubeletplugin/crc32c.h"
#include "nlohmann/json.hpp"

namespace dra::kubeletplugin::internal {
namespace {

using nlohmann::json;

constexpr int64_t kVersion = 2;
constexpr char kPrepareStarted[] = "PrepareStarted";
constexpr char kPrepared[] = "Prepared";
constexpr size_t kCrcDigits = 8;

// "<crc32c hex> <json>\n"
std::string Line(const std::string& text) {
  char crc[kCrcDigits + 2];
  std::snprintf(crc, sizeof(crc), "%08x ", Crc32c(text));
  std::string line;
  line.reserve(kCrcDigits + 1 + text.size() + 1);
  line.append(crc, kCrcDigits + 1).append(text).push_back('\n');
  return line;
}

// The JSON of a line (without its newline) whose checksum matches.
absl::StatusOr<absl::string_view> Verify(absl::string_view line) {
  const absl::Status not_a_record = absl::DataLossError("not a checksummed record (8 hex digits, a space, JSON)");
  if (line.size() <= kCrcDigits || line[kCrcDigits] != ' ') return not_a_record;
  uint32_t crc = 0;
  for (const char c : line.substr(0, kCrcDigits)) {
    const bool digit = c >= '0' && c <= '9';
    if (!digit && !(c >= 'a' && c <= 'f')) return not_a_record;
    crc = crc << 4 | static_cast<uint32_t>(digit ? c - '0' : c - 'a' + 10);
  }
  const absl::string_view text = line.substr(kCrcDigits + 1);
  if (Crc32c(std::string_view(text.data(), text.size())) != crc) return absl::DataLossError("checksum mismatch");
  return text;
}

// Records are written directly rather than built as nlohmann::json values,
// which took most of a commit's time; they are read with nlohmann.

// Appends `value` as a JSON string. Printable ASCII without quote or
// backslash is copied; anything else goes through nlohmann, which escapes it
// (a newline too, keeping records on one line) and replaces invalid UTF-8.
void AppendString(std::string& out, const std::string& value) {
  const bool plain = std::all_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out.append("\"").append(value).append("\"");
  } else {
    out.append(json(value).dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

void AppendStrings(std::string& out, const std::vector<std::string>& values) {
  out.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendString(out, values[i]);
  }
  out.push_back(']');
}

void AppendDevice(std::string& out, const Device& device) {
  out.append("{\"requests\":");
  AppendStrings(out, device.requests);
  out.append(",\"poolName\":");
  AppendString(out, device.pool_name);
  out.append(",\"deviceName\":");
  AppendString(out, device.device_name);
  out.append(",\"cdiDeviceIDs\":");
  AppendStrings(out, device.cdi_device_ids);
  if (device.share_id) {
    out.append(",\"shareID\":");
    AppendString(out, *device.share_id);
  }
  out.push_back('}');
}

void AppendHeld(std::string& out, const HeldDevice& held) {
  out.append("{\"pool\":");
  AppendString(out, held.pool);
  out.append(",\"device\":");
  AppendString(out, held.device);
  if (held.share_id) {
    out.append(",\"shareID\":");
    AppendString(out, *held.share_id);
  }
  if (held.admin_access) out.append(",\"adminAccess\":true");
  if (!held.units.empty()) {
    out.append(",\"units\":");
    AppendStrings(out, held.units);
  }
  out.push_back('}');
}

// "<uid>":{...}
void AppendEntry(std::string& out, const std::string& uid, const CheckpointEntry& entry) {
  AppendString(out, uid);
  out.append(":{\"namespace\":");
  AppendString(out, entry.claim.namespace_);
  out.append(",\"name\":");
  AppendString(out, entry.claim.name);
  out.append(",\"state\":\"").append(entry.state == ClaimState::kPrepared ? kPrepared : kPrepareStarted);
  out.append("\",\"devices\":[");
  for (size_t i = 0; i < entry.devices.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendDevice(out, entry.devices[i]);
  }
  out.push_back(']');
  if (!entry.cdi_spec.empty()) {
    out.append(",\"cdiSpec\":");
    AppendString(out, entry.cdi_spec);
  }
  if (!entry.metadata_files.empty()) {
    out.append(",\"metadataFiles\":{");
    bool first = true;
    for (const auto& [path, content] : entry.metadata_files) {
      if (!first) out.push_back(',');
      first = false;
      AppendString(out, path);
      out.push_back(':');
      AppendString(out, content);
    }
    out.push_back('}');
  }
  if (!entry.driver_data.empty()) {
    out.append(",\"driverData\":");
    AppendString(out, entry.driver_data);
  }
  if (!entry.held.empty()) {
    out.append(",\"held\":[");
    for (size_t i = 0; i < entry.held.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendHeld(out, entry.held[i]);
    }
    out.push_back(']');
  }
  if (!entry.quarantined.empty()) {
    out.append(",\"quarantined\":");
    AppendString(out, entry.quarantined);
  }
  out.push_back('}');
}

// Reads typed fields out of parsed JSON, keeping the first problem found
// (named by its location, e.g. "claims.<uid>.devices[0].poolName"); after a
// problem every read returns an empty value.
class FieldReader {
 public:
  const json* Field(const json& object, const std::string& where, const char* key, json::value_t type,
                    absl::string_view type_name) {
    const auto it = object.find(key);  // end() when `object` is not an object
    if (it == object.end() || it->type() != type) {
      Fail(absl::StrCat(where, key, ": missing or not ", type_name));
      return nullptr;
    }
    return &*it;
  }

  std::string String(const json& object, const std::string& where, const char* key) {
    const json* value = Field(object, where, key, json::value_t::string, "a string");
    return value ? value->get<std::string>() : std::string();
  }

  std::vector<std::string> Strings(const json& object, const std::string& where, const char* key) {
    const json* value = Field(object, where, key, json::value_t::array, "an array");
    std::vector<std::string> out;
    if (value == nullptr) return out;
    for (size_t i = 0; i < value->size(); ++i) {
      if (!(*value)[i].is_string()) {
        Fail(absl::StrCat(where, key, "[", i, "]: not a string"));
        return {};
      }
      out.push_back((*value)[i].get<std::string>());
    }
    return out;
  }

  void Fail(absl::string_view problem) {
    if (status_.ok()) status_ = absl::DataLossError(problem);
  }

  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

Device DecodeDevice(FieldReader& reader, const json& in, const std::string& where) {
  Device device;
  device.requests = reader.Strings(in, where, "requests");
  device.pool_name = reader.String(in, where, "poolName");
  device.device_name = reader.String(in, where, "deviceName");
  device.cdi_device_ids = reader.Strings(in, where, "cdiDeviceIDs");
  if (in.contains("shareID")) device.share_id = reader.String(in, where, "shareID");
  return device;
}

HeldDevice DecodeHeld(FieldReader& reader, const json& in, const std::string& where) {
  HeldDevice held;
  held.pool = reader.String(in, where, "pool");
  held.device = reader.String(in, where, "device");
  if (in.contains("shareID")) held.share_id = reader.String(in, where, "shareID");
  if (in.contains("adminAccess")) {
    const json* admin = reader.Field(in, where, "adminAccess", json::value_t::boolean, "a boolean");
    held.admin_access = admin != nullptr && admin->get<bool>();
  }
  if (in.contains("units")) held.units = reader.Strings(in, where, "units");
  return held;
}

CheckpointEntry DecodeEntry(FieldReader& reader, const std::string& where_map, const std::string& uid, const json& in) {
  const std::string where = absl::StrCat(where_map, uid, ".");
  CheckpointEntry entry;
  entry.claim.uid = uid;
  entry.claim.namespace_ = reader.String(in, where, "namespace");
  entry.claim.name = reader.String(in, where, "name");
  const std::string state = reader.String(in, where, "state");
  if (state == kPrepared) {
    entry.state = ClaimState::kPrepared;
  } else if (state != kPrepareStarted) {
    reader.Fail(
        absl::StrCat(where, "state: \"", state, "\" is neither \"", kPrepareStarted, "\" nor \"", kPrepared, "\""));
  }
  if (in.contains("cdiSpec")) entry.cdi_spec = reader.String(in, where, "cdiSpec");
  if (in.contains("driverData")) entry.driver_data = reader.String(in, where, "driverData");
  if (in.contains("quarantined")) entry.quarantined = reader.String(in, where, "quarantined");
  if (in.contains("metadataFiles")) {
    if (const json* files = reader.Field(in, where, "metadataFiles", json::value_t::object, "an object")) {
      for (const auto& [path, content] : files->items()) {
        if (!content.is_string()) {
          reader.Fail(absl::StrCat(where, "metadataFiles.", path, ": not a string"));
          break;
        }
        entry.metadata_files[path] = content.get<std::string>();
      }
    }
  }
  if (in.contains("held")) {
    if (const json* held = reader.Field(in, where, "held", json::value_t::array, "an array")) {
      for (size_t i = 0; i < held->size(); ++i) {
        entry.held.push_back(DecodeHeld(reader, (*held)[i], absl::StrCat(where, "held[", i, "].")));
      }
    }
  }
  const json* devices = reader.Field(in, where, "devices", json::value_t::array, "an array");
  if (devices == nullptr) return entry;
  for (size_t i = 0; i < devices->size(); ++i) {
    entry.devices.push_back(DecodeDevice(reader, (*devices)[i], absl::StrCat(where, "devices[", i, "].")));
  }
  return entry;
}

absl::Status DecodeHeader(const json& record) {
  const auto version = record.find("version");
  if (version == record.end() || !version->is_number_integer()) {
    return absl::DataLossError("version: missing or not an integer");
  }
  if (version->get<int64_t>() != kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("unsupported version ", version->dump(), " (this build reads version ", kVersion, ")"));
  }
  return absl::OkStatus();
}

uint64_t Seq(FieldReader& reader, const json& record) {
  const json* seq = reader.Field(record, "", "seq", json::value_t::number_unsigned, "a non-negative integer");
  return seq ? seq->get<uint64_t>() : 0;
}

absl::Status DecodeSnapshot(const json& record, DecodedLog& log) {
  FieldReader reader;
  log.seq = Seq(reader, record);
  const json* claims = reader.Field(record, "", "claims", json::value_t::object, "an object");
  if (claims == nullptr) return reader.status();
  for (const auto& [uid, claim] : claims->items()) log.entries.emplace(uid, DecodeEntry(reader, "claims.", uid, claim));
  return reader.status();
}

absl::Status ApplyChange(const json& record, DecodedLog& log) {
  FieldReader reader;
  const uint64_t seq = Seq(reader, record);
  const json* set = reader.Field(record, "", "set", json::value_t::object, "an object");
  const std::vector<std::string> erase = reader.Strings(record, "", "erase");
  if (!reader.status().ok()) return reader.status();
  if (seq != log.seq + 1) return absl::DataLossError(absl::StrCat("seq ", seq, " does not follow seq ", log.seq));
  std::vector<CheckpointEntry> entries;
  for (const auto& [uid, claim] : set->items()) entries.push_back(DecodeEntry(reader, "set.", uid, claim));
  if (!reader.status().ok()) return reader.status();
  for (const std::string& uid : erase) log.entries.erase(uid);
  for (CheckpointEntry& entry : entries) log.entries.insert_or_assign(entry.claim.uid, std::move(entry));
  log.seq = seq;
  ++log.changes;
  return absl::OkStatus();
}

// The line at `pos` without its newline; moves `pos` past it and says
// whether it had one.
absl::string_view TakeLine(absl::string_view content, size_t& pos, bool& complete) {
  const size_t newline = content.find('\n', pos);
  complete = newline != absl::string_view::npos;
  const absl::string_view line = content.substr(pos, complete ? newline - pos : absl::string_view::npos);
  pos = complete ? newline + 1 : content.size();
  return line;
}

// A field of `object` of `type`, or nullptr.
const json* Member(const json& object, const char* key, json::value_t type) {
  const auto it = object.find(key);  // end() when `object` is not an object
  return it != object.end() && it->type() == type ? &*it : nullptr;
}

// A string field of `object`, or "" when it is missing or not a string.
std::string StringOr(const json& object, const char* key) {
  const json* value = Member(object, key, json::value_t::string);
  return value != nullptr ? value->get<std::string>() : std::string();
}

// What can be read of an entry that does not decode: its name and the
// devices it holds ("held", or else its prepared "devices").
void ReadWhatCan(const json& in, CheckpointEntry& entry) {
  if (!in.is_object()) return;
  if (std::string ns = StringOr(in, "namespace"); !ns.empty()) entry.claim.namespace_ = std::move(ns);
  if (std::string name = StringOr(in, "name"); !name.empty()) entry.claim.name = std::move(name);
  std::vector<HeldDevice> held;
  const bool own = in.contains("held");
  const json* list = Member(in, own ? "held" : "devices", json::value_t::array);
  if (list == nullptr) return;
  for (const json& device : *list) {
    if (!device.is_object()) continue;
    HeldDevice one{StringOr(device, own ? "pool" : "poolName"), StringOr(device, own ? "device" : "deviceName")};
    if (one.pool.empty() || one.device.empty()) continue;
    if (device.contains("shareID")) one.share_id = StringOr(device, "shareID");
    const json* admin = Member(device, "adminAccess", json::value_t::boolean);
    one.admin_access = admin != nullptr && admin->get<bool>();
    if (const json* units = Member(device, "units", json::value_t::array)) {
      for (const json& unit : *units) {
        if (unit.is_string()) one.units.push_back(unit.get<std::string>());
      }
    }
    held.push_back(std::move(one));
  }
  if (!held.empty()) entry.held = std::move(held);
}

// Quarantines claim `uid` with what can be read of it: its name, and the
// devices it holds, from its entry so far (when it has one) and from `in`.
void Quarantine(CheckpointEntries& entries, const std::string& uid, const json& in, std::string why) {
  CheckpointEntry& entry = entries[uid];
  entry.claim.uid = uid;
  entry.state = ClaimState::kPrepareStarted;
  if (entry.held.empty()) {
    for (const Device& device : entry.devices)
      entry.held.push_back({device.pool_name, device.device_name, device.share_id});
  }
  entry.devices.clear();
  entry.cdi_spec.clear();
  entry.metadata_files.clear();
  entry.driver_data.clear();
  ReadWhatCan(in, entry);
  entry.quarantined = std::move(why);
}

// The claims a salvaged record sets: each decoded on its own.
void SalvageClaims(SalvagedLog& out, const std::string& at, const absl::Status& verified, const json& claims) {
  for (const auto& [uid, in] : claims.items()) {
    if (!verified.ok()) {
      Quarantine(out.entries, uid, in, absl::StrCat(at, verified.message()));
      continue;
    }
    FieldReader reader;
    CheckpointEntry entry = DecodeEntry(reader, "", uid, in);
    if (reader.status().ok()) {
      out.entries.insert_or_assign(uid, std::move(entry));
    } else {
      Quarantine(out.entries, uid, in, absl::StrCat(at, reader.status().message()));
    }
  }
}

// The claims a salvaged record erases.
void SalvageErase(SalvagedLog& out, const std::string& at, const absl::Status& verified, const json& erase) {
  for (const json& uid : erase) {
    if (!uid.is_string()) continue;
    const auto it = out.entries.find(uid.get<std::string>());
    if (it == out.entries.end()) continue;
    if (verified.ok()) {
      out.entries.erase(it);
    } else {  // perhaps unprepared: it holds its devices until the kubelet says
      Quarantine(out.entries, it->first, json::object(), absl::StrCat(at, verified.message()));
    }
  }
}

// Replays the snapshot or change `record` of line `number` over `out`;
// `verified`: whether the line's checksum matched.
void SalvageRecord(SalvagedLog& out, uint64_t number, const absl::Status& verified, const json& record) {
  const json* claims = Member(record, "claims", json::value_t::object);
  if (claims == nullptr) claims = Member(record, "set", json::value_t::object);
  const json* erase = Member(record, "erase", json::value_t::array);
  const bool unreadable = claims == nullptr && (erase == nullptr || erase->empty());
  const std::string at = absl::StrCat("line ", number, ": ");
  if (!verified.ok() || unreadable) {
    // It may have set or erased any claim recorded before it.
    const std::string why = absl::StrCat(at, verified.ok() ? "not a checkpoint record" : verified.message(),
                                         "; it may have changed this claim's record");
    for (auto& [uid, entry] : out.entries) {
      if (entry.quarantined.empty()) Quarantine(out.entries, uid, json::object(), why);
    }
  }
  if (!verified.ok()) ++out.unverified_lines;
  if (unreadable) {
    ++out.unreadable_lines;
    return;
  }
  if (claims != nullptr) SalvageClaims(out, at, verified, *claims);
  if (erase != nullptr) SalvageErase(out, at, verified, *erase);
}

}  // namespace

std::string EncodeSnapshot(uint64_t seq, const CheckpointEntries& entries) {
  std::string snapshot = absl::StrCat("{\"seq\":", seq, ",\"claims\":{");
  const char* separator = "";
  for (const auto& [uid, entry] : entries) {
    snapshot.append(std::exchange(separator, ","));
    AppendEntry(snapshot, uid, entry);
  }
  snapshot.append("}}");
  return Line(absl::StrCat("{\"version\":", kVersion, "}")) + Line(snapshot);
}

std::string EncodeChange(uint64_t seq, const CheckpointEntries& entries, const std::set<std::string>& changed) {
  std::string set;
  std::string erase;
  for (const std::string& uid : changed) {
    const auto it = entries.find(uid);
    if (it != entries.end()) {
      if (!set.empty()) set.push_back(',');
      AppendEntry(set, uid, it->second);
    } else {
      if (!erase.empty()) erase.push_back(',');
      AppendString(erase, uid);
    }
  }
  return Line(absl::StrCat("{\"seq\":", seq, ",\"set\":{", set, "},\"erase\":[", erase, "]}"));
}

absl::StatusOr<DecodedLog> DecodeLog(absl::string_view content) {
  DecodedLog log;
  size_t pos = 0;
  for (uint64_t number = 1; pos < content.size() || number <= 2; ++number) {
    auto at_line = [number](const absl::Status& problem) {
      return absl::Status(problem.code(), absl::StrCat("line ", number, ": ", problem.message()));
    };
    if (pos == content.size()) {
      return at_line(absl::DataLossError(number == 1 ? "missing header (empty file)" : "missing snapshot"));
    }
    bool complete = false;
    const absl::string_view line = TakeLine(content, pos, complete);
    absl::StatusOr<absl::string_view> text = Verify(line);
    // Only change records are appended, so only they can be torn by a crash
    // (or be seen half-written by a reader).
    if (number >= 3 && pos == content.size() && (!complete || !text.ok())) {
      log.torn = true;
      break;
    }
    if (!text.ok()) return at_line(text.status());
    if (!complete) return at_line(absl::DataLossError("truncated (no newline)"));
    const json record = json::parse(text->begin(), text->end(), nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) return at_line(absl::DataLossError("not a JSON object"));  // also when discarded
    const absl::Status status = number == 1   ? DecodeHeader(record)
                                : number == 2 ? DecodeSnapshot(record, log)
                                              : ApplyChange(record, log);
    if (!status.ok()) return at_line(status);
  }
  return log;
}

SalvagedLog SalvageLog(absl::string_view content) {
  SalvagedLog out;
  size_t pos = 0;
  for (uint64_t number = 1; pos < content.size(); ++number) {
    bool complete = false;
    const absl::string_view line = TakeLine(content, pos, complete);
    absl::StatusOr<absl::string_view> verified = Verify(line);
    if (number >= 3 && pos == content.size() && (!complete || !verified.ok())) break;  // torn: never answered
    const absl::string_view text =
        verified.ok() ? *verified : (line.size() > kCrcDigits ? line.substr(kCrcDigits + 1) : absl::string_view());
    const json record = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (number == 1 && record.is_object() && record.contains("version")) continue;  // the header
    SalvageRecord(out, number, verified.status(), record);
  }
  return out;
}

bool IsCheckpointFormat(absl::string_view content) { return Verify(content.substr(0, content.find('\n'))).ok(); }

}  // namespace dra::kubeletplugin::internal
