#include "kubeletplugin/checkpoint.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fcntl.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "crashpoint/crash_point.h"
#include "dra/mutex.h"
#include "fileutil/atomic_file.h"
#include "nlohmann/json.hpp"

namespace dra::kubeletplugin::internal {
namespace {

using nlohmann::json;

constexpr int64_t kVersion = 2;
constexpr mode_t kFileMode = 0600;
constexpr char kPrepareStarted[] = "PrepareStarted";
constexpr char kPrepared[] = "Prepared";
constexpr size_t kCrcDigits = 8;

// More change records than this and the next commit compacts the file.
size_t MaxChangeRecords(size_t live_entries) { return std::max<size_t>(64, 4 * live_entries); }

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

// What a file holds.
struct Log {
  std::map<std::string, CheckpointEntry> entries;
  uint64_t seq = 0;      // of the last line
  uint64_t changes = 0;  // change records
  bool torn = false;     // the last line was a torn change record, ignored
};

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

absl::Status DecodeSnapshot(const json& record, Log& log) {
  FieldReader reader;
  log.seq = Seq(reader, record);
  const json* claims = reader.Field(record, "", "claims", json::value_t::object, "an object");
  if (claims == nullptr) return reader.status();
  for (const auto& [uid, claim] : claims->items()) log.entries.emplace(uid, DecodeEntry(reader, "claims.", uid, claim));
  return reader.status();
}

absl::Status ApplyChange(const json& record, Log& log) {
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

// The state in `content`, or an error naming the line that is wrong.
absl::StatusOr<Log> Decode(absl::string_view content) {
  Log log;
  size_t pos = 0;
  for (uint64_t number = 1; pos < content.size() || number <= 2; ++number) {
    auto at_line = [number](const absl::Status& problem) {
      return absl::Status(problem.code(), absl::StrCat("line ", number, ": ", problem.message()));
    };
    if (pos == content.size()) {
      return at_line(absl::DataLossError(number == 1 ? "missing header (empty file)" : "missing snapshot"));
    }
    const size_t newline = content.find('\n', pos);
    const bool complete = newline != absl::string_view::npos;
    const absl::string_view line = content.substr(pos, complete ? newline - pos : absl::string_view::npos);
    pos = complete ? newline + 1 : content.size();
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

// What a file that cannot be read whole still gives.
struct Salvaged {
  std::map<std::string, CheckpointEntry> entries;
  size_t unreadable_lines = 0;
};

// Replays every line that verifies, decoding each entry on its own; an entry
// that does not decode, or that a line failing its checksum names, is
// quarantined with what can be read of it, and so is every claim recorded
// before a line that fails its checksum or cannot be read: that line may have
// changed it (erased it, say, so that it would be prepared again from an
// older record).
Salvaged SalvageLog(absl::string_view content) {
  Salvaged out;
  const auto quarantine = [&](const std::string& uid, const json& in, std::string why) {
    CheckpointEntry& entry = out.entries[uid];
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
  };
  size_t pos = 0;
  for (uint64_t number = 1; pos < content.size(); ++number) {
    const size_t newline = content.find('\n', pos);
    const bool complete = newline != absl::string_view::npos;
    const absl::string_view line = content.substr(pos, complete ? newline - pos : absl::string_view::npos);
    pos = complete ? newline + 1 : content.size();
    absl::StatusOr<absl::string_view> verified = Verify(line);
    if (number >= 3 && pos == content.size() && (!complete || !verified.ok())) break;  // torn: never answered
    const absl::string_view text =
        verified.ok() ? *verified : (line.size() > kCrcDigits ? line.substr(kCrcDigits + 1) : absl::string_view());
    const json record = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (number == 1 && record.is_object() && record.contains("version")) continue;  // the header
    const json* claims = Member(record, "claims", json::value_t::object);
    if (claims == nullptr) claims = Member(record, "set", json::value_t::object);
    const json* erase = Member(record, "erase", json::value_t::array);
    const bool unreadable = claims == nullptr && (erase == nullptr || erase->empty());
    const std::string at = absl::StrCat("line ", number, ": ");
    if (!verified.ok() || unreadable) {
      // It may have set or erased any claim recorded before it.
      const std::string why = absl::StrCat(at, verified.ok() ? "not a checkpoint record" : verified.status().message(),
                                           "; it may have changed this claim's record");
      for (auto& [uid, entry] : out.entries) {
        if (entry.quarantined.empty()) quarantine(uid, json::object(), why);
      }
    }
    if (unreadable) {
      ++out.unreadable_lines;
      continue;
    }
    if (claims != nullptr) {
      for (const auto& [uid, in] : claims->items()) {
        if (!verified.ok()) {
          quarantine(uid, in, absl::StrCat(at, verified.status().message()));
          continue;
        }
        FieldReader reader;
        CheckpointEntry entry = DecodeEntry(reader, "", uid, in);
        if (reader.status().ok()) {
          out.entries.insert_or_assign(uid, std::move(entry));
        } else {
          quarantine(uid, in, absl::StrCat(at, reader.status().message()));
        }
      }
    }
    if (erase == nullptr) continue;
    for (const json& uid : *erase) {
      if (!uid.is_string()) continue;
      const auto it = out.entries.find(uid.get<std::string>());
      if (it == out.entries.end()) continue;
      if (verified.ok()) {
        out.entries.erase(it);
      } else {  // perhaps unprepared: it holds its devices until the kubelet says
        quarantine(it->first, json::object(), absl::StrCat(at, verified.status().message()));
      }
    }
  }
  return out;
}

// Whether `content` is a file of this format, damaged or not: its first
// line verifies.
bool OfThisFormat(absl::string_view content) { return Verify(content.substr(0, content.find('\n'))).ok(); }

// Links `path` as <path>.unreadable-<unix seconds>[-<n>], a name no file has
// (an earlier one kept aside is never replaced), or finds the name an earlier
// start that died before replacing `path` linked it as; returns that name.
// `path` itself stays until the caller replaces it, so that a crash in
// between leaves it to be salvaged again, never nothing. `unreadable` says
// why, for the error when it cannot be kept aside.
absl::StatusOr<std::string> KeepAside(const std::string& path, const absl::Status& unreadable) {
  const std::string prefix = absl::StrCat(path, ".unreadable-");
  struct stat file {};
  if (::stat(path.c_str(), &file) == 0 && file.st_nlink > 1) {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    std::error_code error;
    for (const auto& other : std::filesystem::directory_iterator(dir, error)) {
      struct stat st {};
      if (other.path().string().starts_with(prefix) && ::lstat(other.path().c_str(), &st) == 0 &&
          st.st_dev == file.st_dev && st.st_ino == file.st_ino) {
        return other.path().string();
      }
    }
  }
  const std::string base = absl::StrCat(prefix, absl::ToUnixSeconds(absl::Now()));
  std::string aside = base;
  struct stat st {};
  for (int n = 2; ::lstat(aside.c_str(), &st) == 0; ++n) aside = absl::StrCat(base, "-", n);
  if (::link(path.c_str(), aside.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat(unreadable.message(), "; and it cannot be kept aside as ", aside));
  }
  return aside;
}

absl::Status SyscallError(absl::string_view syscall, const std::string& path) {
  return absl::ErrnoToStatus(errno, absl::StrCat(syscall, " ", path));
}

// One write of `line` (more only after a short write), then fdatasync.
absl::Status Append(int fd, absl::string_view line, const std::string& path) {
  DRA_CRASH_POINT("checkpoint.before_append");
  while (!line.empty()) {
    const ssize_t n = ::write(fd, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SyscallError("write", path);
    if (n == 0) return absl::InternalError(absl::StrCat("write ", path, ": no progress"));
    line.remove_prefix(static_cast<size_t>(n));
  }
  DRA_CRASH_POINT("checkpoint.after_append");
  if (::fdatasync(fd) != 0) return SyscallError("fdatasync", path);
  DRA_CRASH_POINT("checkpoint.after_sync");
  return absl::OkStatus();
}

bool SameFile(int fd, const struct stat& other) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_dev == other.st_dev && st.st_ino == other.st_ino;
}

// An append descriptor on the file at `path`, if that is the file `expected`
// describes; -1 otherwise (then the next write replaces the file).
int OpenForAppend(const std::string& path, const struct stat& expected) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd >= 0 && !SameFile(fd, expected)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78u : 0);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

}  // namespace

uint32_t Crc32cPortable(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) crc = kCrcTable[(crc ^ static_cast<unsigned char>(c)) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes CRC-32C, 8 bytes per instruction: the
// table loop was 2.5% of a loaded driver's CPU with the checkpoint on.
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t crc = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    crc = _mm_crc32_u64(crc, word);
  }
  auto crc32 = static_cast<uint32_t>(crc);
  for (; n > 0; ++p, --n) crc32 = _mm_crc32_u8(crc32, static_cast<unsigned char>(*p));
  return ~crc32;
}
#endif

uint32_t Crc32c(std::string_view data) {
#if defined(__x86_64__)
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  if (sse42) return Crc32cSse42(data);
#endif
  return Crc32cPortable(data);
}

Checkpoint::Checkpoint(std::string path) : path_(std::move(path)) {}

Checkpoint::~Checkpoint() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<Checkpoint> Checkpoint::Off() { return std::unique_ptr<Checkpoint>(new Checkpoint("")); }

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(std::string path) {
  return Open(std::move(path), nullptr);
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(std::string path, const Adopter& adopt) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint(std::move(path)));
  absl::Status loaded;
  {
    dra::MutexLock lock(&checkpoint->mu_);
    loaded = checkpoint->Load();
  }
  if (loaded.ok()) return checkpoint;
  // Another driver's file goes to `adopt`: one whose header is this
  // format's is this driver's, damaged.
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(checkpoint->path_);
  absl::StatusOr<std::vector<k8s::ClaimRef>> claims = absl::FailedPreconditionError("");
  if (adopt && content.ok() && !OfThisFormat(*content)) {
    claims = adopt(*content);
    if (!claims.ok()) {
      loaded =
          absl::Status(loaded.code(), absl::StrCat(loaded.message(), "; not adopted: ", claims.status().message()));
      // Not knowing yet (the API server did not answer, say) is no reason
      // to set the file aside: the next start tries again.
      if (!absl::IsInvalidArgument(claims.status())) return loaded;
    }
  }
  if (!claims.ok()) {
    dra::MutexLock lock(&checkpoint->mu_);
    if (absl::Status kept = checkpoint->KeepAsideAndSalvage(loaded); !kept.ok()) return kept;
    return checkpoint;
  }
  if (claims->empty()) {
    if (::unlink(checkpoint->path_.c_str()) != 0 && errno != ENOENT) {
      return absl::ErrnoToStatus(errno, absl::StrCat("remove the adopted checkpoint ", checkpoint->path_));
    }
    return checkpoint;
  }
  // Nothing was loaded and no file is open for appending: the commit writes
  // a new file in place of the adopted one.
  std::vector<CheckpointChange> adopted;
  for (k8s::ClaimRef& claim : *claims) {
    std::string uid = claim.uid;
    adopted.push_back({std::move(uid), CheckpointEntry{std::move(claim), ClaimState::kPrepareStarted, {}}});
  }
  if (absl::Status status = checkpoint->Commit(std::move(adopted)); !status.ok()) return status;
  return checkpoint;
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::OpenBeside(std::string path, Foreign foreign) {
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(foreign.path);
  if (!content.ok() && !absl::IsNotFound(content.status())) return content.status();
  if (content.ok() && OfThisFormat(*content)) {
    // A release that kept no foreign file had its own checkpoint there, and
    // ran after this one wrote `path` (a downgrade and back): it is the newer.
    if (absl::Status status = dra::internal::WriteFileAtomically(path, *content, kFileMode); !status.ok()) {
      return status;
    }
    content = absl::NotFoundError(foreign.path);
  }
  absl::StatusOr<std::unique_ptr<Checkpoint>> opened = Open(std::move(path));
  if (!opened.ok()) return opened.status();
  std::unique_ptr<Checkpoint> checkpoint = *std::move(opened);
  checkpoint->foreign_ = std::move(foreign);
  std::vector<k8s::ClaimRef> recorded;
  checkpoint->ForEach([&](const CheckpointEntry& entry) { recorded.push_back(entry.claim); });
  if (content.ok() && *content != checkpoint->foreign_->encode(recorded)) {
    absl::StatusOr<std::vector<k8s::ClaimRef>> listed = checkpoint->foreign_->read(*content);
    if (!listed.ok() && !absl::IsInvalidArgument(listed.status())) {
      return absl::Status(listed.status().code(), absl::StrCat("checkpoint ", checkpoint->foreign_->path,
                                                               ": changed by another driver since this one wrote it: ",
                                                               listed.status().message()));
    }
    if (!listed.ok()) {
      // What it says cannot be known: this driver's own records stand.
      const std::string why = absl::StrCat("changed by another driver since this one wrote it, and not readable: ",
                                           listed.status().message());
      absl::StatusOr<std::string> aside = KeepAside(
          checkpoint->foreign_->path,
          absl::Status(listed.status().code(), absl::StrCat("checkpoint ", checkpoint->foreign_->path, ": ", why)));
      if (!aside.ok()) return aside.status();
      checkpoint->salvage_.kept_aside.emplace_back(*std::move(aside), why);
    } else {
      std::vector<CheckpointChange> changes;
      std::set<std::string> listed_uids;
      for (k8s::ClaimRef& claim : *listed) {
        listed_uids.insert(claim.uid);
        if (checkpoint->Get(claim.uid).has_value()) continue;  // what it recorded stays
        std::string uid = claim.uid;
        changes.push_back({std::move(uid), CheckpointEntry{std::move(claim), ClaimState::kPrepareStarted, {}}});
      }
      for (const k8s::ClaimRef& claim : recorded) {
        if (!listed_uids.contains(claim.uid)) changes.push_back({claim.uid, std::nullopt});  // unprepared by it
      }
      if (!changes.empty()) {
        if (absl::Status status = checkpoint->Commit(std::move(changes)); !status.ok()) return status;
      }
    }
  }
  if (absl::Status status = checkpoint->SyncForeign(); !status.ok()) return status;
  return checkpoint;
}

std::optional<std::string> Checkpoint::ForeignContent() {
  if (!foreign_.has_value()) return std::nullopt;
  if (foreign_claims_.has_value() &&
      std::equal(entries_.begin(), entries_.end(), foreign_claims_->begin(), foreign_claims_->end(),
                 [](const auto& entry, const std::string& uid) { return entry.first == uid; })) {
    return std::nullopt;
  }
  std::set<std::string> uids;
  std::vector<k8s::ClaimRef> claims;
  for (const auto& [uid, entry] : entries_) {
    uids.insert(uid);
    claims.push_back(entry.claim);
  }
  foreign_claims_ = std::move(uids);
  return foreign_->encode(claims);
}

absl::Status Checkpoint::SyncForeign() {
  std::string expected;
  {
    dra::MutexLock lock(&mu_);
    foreign_claims_.reset();  // so that ForeignContent gives it
    expected = *ForeignContent();
  }
  absl::StatusOr<std::string> current = dra::internal::ReadWholeFile(foreign_->path);
  if (current.ok() && *current == expected) return absl::OkStatus();
  absl::Status status = dra::internal::WriteFileAtomically(foreign_->path, expected, kFileMode);
  if (!status.ok()) {
    dra::MutexLock lock(&mu_);
    foreign_claims_.reset();
  }
  return status;
}

absl::Status Checkpoint::Load() {
  struct stat file {};
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(path_, &file);
  if (!content.ok() && !absl::IsNotFound(content.status())) return content.status();
  Log log;
  if (content.ok()) {
    absl::StatusOr<Log> decoded = Decode(*content);
    if (!decoded.ok()) {
      return absl::Status(decoded.status().code(),
                          absl::StrCat("checkpoint ", path_, ": ", decoded.status().message()));
    }
    log = *std::move(decoded);
  }

  entries_ = std::move(log.entries);
  dirty_.clear();
  record_seq_ = log.seq;
  log_changes_ = log.changes;
  // Appending after a torn line would bury later records behind garbage.
  if (log.torn) rewrite_ = true;
  // Keep appending where we did unless the file was replaced (another
  // instance compacted it) or removed.
  if (fd_ >= 0 && !(content.ok() && SameFile(fd_, file))) {
    ::close(fd_);
    fd_ = -1;
  }
  if (fd_ < 0 && content.ok()) fd_ = OpenForAppend(path_, file);
  return absl::OkStatus();
}

absl::Status Checkpoint::KeepAsideAndSalvage(const absl::Status& unreadable) {
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(path_);
  absl::StatusOr<std::string> aside = KeepAside(path_, unreadable);
  if (!aside.ok()) return aside.status();
  Salvaged salvaged = content.ok() ? SalvageLog(*content) : Salvaged{{}, 1};
  salvage_.kept_aside.emplace_back(*std::move(aside), std::string(unreadable.message()));
  salvage_.unreadable_lines += salvaged.unreadable_lines;
  for (const auto& [uid, entry] : salvaged.entries) {
    if (!entry.quarantined.empty()) salvage_.quarantined.emplace_back(entry.claim, entry.quarantined);
  }
  entries_ = std::move(salvaged.entries);
  dirty_.clear();
  record_seq_ = 0;
  log_changes_ = 0;
  rewrite_ = false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;  // the next write replaces the file
  salvage_unwritten_ = true;
  return absl::OkStatus();
}

absl::Status Checkpoint::WriteSalvaged() {
  {
    dra::MutexLock lock(&mu_);
    if (!salvage_unwritten_) return absl::OkStatus();
  }
  return Commit({});
}

absl::Status Checkpoint::Reload() {
  if (!records()) return absl::OkStatus();
  dra::MutexLock lock(&mu_);
  // A commit is in flight until its batch is durable or its write failed.
  // Replacing the entries under it would drop its change from the file.
  while (applied_seq_ > std::max(durable_seq_, last_failed_seq_)) cv_.Wait(&mu_);
  return Load();
}

std::optional<CheckpointEntry> Checkpoint::Get(const std::string& uid) const {
  dra::MutexLock lock(&mu_);
  const auto it = entries_.find(uid);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void Checkpoint::ForEach(absl::FunctionRef<void(const CheckpointEntry&)> visit) const {
  dra::MutexLock lock(&mu_);
  for (const auto& [uid, entry] : entries_) visit(entry);
}

std::vector<CheckpointEntry> Checkpoint::Entries() const {
  dra::MutexLock lock(&mu_);
  std::vector<CheckpointEntry> out;
  out.reserve(entries_.size());
  for (const auto& [uid, entry] : entries_) out.push_back(entry);
  return out;
}

uint64_t Checkpoint::writes() const {
  dra::MutexLock lock(&mu_);
  return writes_;
}

absl::Status Checkpoint::Commit(std::vector<CheckpointChange> changes) {
  for (const CheckpointChange& change : changes) {
    if (change.entry && change.entry->claim.uid != change.uid) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint change for claim UID ", change.uid,
                                                     " carries an entry for UID ", change.entry->claim.uid));
    }
  }
  if (!records()) return absl::OkStatus();

  dra::MutexLock lock(&mu_);
  for (CheckpointChange& change : changes) {
    if (change.entry) {
      entries_.insert_or_assign(change.uid, std::move(*change.entry));
    } else {
      entries_.erase(change.uid);
    }
    dirty_.insert(std::move(change.uid));
  }
  const uint64_t seq = ++applied_seq_;

  // Group commit: wait while another caller writes; its write may already
  // cover this batch. Otherwise become the writer for everything applied so far.
  while (true) {
    if (durable_seq_ >= seq) return absl::OkStatus();
    if (last_failed_seq_ >= seq) return last_write_status_;
    if (!writing_) break;
    cv_.Wait(&mu_);
  }
  writing_ = true;
  const uint64_t covered = applied_seq_;
  const uint64_t record_seq = record_seq_ + 1;
  // Replace the file rather than append: to create it, to compact it, or
  // because its end may be garbage.
  const bool replace = fd_ < 0 || rewrite_ || log_changes_ >= MaxChangeRecords(entries_.size());
  const std::string content = replace ? Snapshot(record_seq) : ChangeRecord(record_seq);
  const std::optional<std::string> foreign = ForeignContent();
  std::set<std::string> written = std::exchange(dirty_, {});
  const int fd = fd_;
  mu_.Unlock();

  absl::Status status;
  int new_fd = -1;
  if (replace) {
    DRA_CRASH_POINT("checkpoint.before_replace");
    status = dra::internal::WriteFileAtomically(path_, content, kFileMode);
    if (status.ok()) DRA_CRASH_POINT("checkpoint.after_replace");
    // The file just written (only one process writes at a time). Without
    // it, the next write replaces the file again.
    if (status.ok()) new_fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  } else {
    status = Append(fd, content, path_);
  }
  absl::Status foreign_status;
  if (status.ok() && foreign.has_value()) {
    foreign_status = dra::internal::WriteFileAtomically(foreign_->path, *foreign, kFileMode);
  }

  mu_.Lock();
  writing_ = false;
  if (status.ok() && !foreign_status.ok()) {
    // This file has the changes; the foreign one is written with the next
    // commit. Its callers learn that it lags.
    foreign_claims_.reset();
    last_failed_seq_ = covered;
    last_write_status_ =
        absl::Status(foreign_status.code(), absl::StrCat("write ", foreign_->path, ": ", foreign_status.message()));
  }
  if (status.ok()) {
    if (foreign_status.ok()) durable_seq_ = covered;
    ++writes_;
    record_seq_ = record_seq;
    if (replace) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = new_fd;
      log_changes_ = 0;
      rewrite_ = false;
      salvage_unwritten_ = false;
    } else {
      ++log_changes_;
    }
  } else {
    last_failed_seq_ = covered;
    last_write_status_ = status;
    dirty_.merge(written);  // written with the next commit
    // A failed append may have left part of its line.
    rewrite_ = true;
    if (foreign.has_value()) foreign_claims_.reset();
  }
  cv_.SignalAll();
  return foreign_status.ok() ? status : last_write_status_;
}

std::string Checkpoint::Snapshot(uint64_t seq) const {
  std::string snapshot = absl::StrCat("{\"seq\":", seq, ",\"claims\":{");
  const char* separator = "";
  for (const auto& [uid, entry] : entries_) {
    snapshot.append(std::exchange(separator, ","));
    AppendEntry(snapshot, uid, entry);
  }
  snapshot.append("}}");
  return Line(absl::StrCat("{\"version\":", kVersion, "}")) + Line(snapshot);
}

std::string Checkpoint::ChangeRecord(uint64_t seq) const {
  std::string set;
  std::string erase;
  for (const std::string& uid : dirty_) {
    const auto it = entries_.find(uid);
    if (it != entries_.end()) {
      if (!set.empty()) set.push_back(',');
      AppendEntry(set, uid, it->second);
    } else {
      if (!erase.empty()) erase.push_back(',');
      AppendString(erase, uid);
    }
  }
  return Line(absl::StrCat("{\"seq\":", seq, ",\"set\":{", set, "},\"erase\":[", erase, "]}"));
}

}  // namespace dra::kubeletplugin::internal
