#include "checkpoint.h"

#include <algorithm>
#include <utility>

#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "atomic_file.h"
#include "nlohmann/json.hpp"

namespace dra::kubeletplugin::internal {
namespace {

using nlohmann::json;

constexpr int64_t kVersion = 1;
constexpr mode_t kFileMode = 0600;
constexpr char kPrepareStarted[] = "PrepareStarted";
constexpr char kPrepared[] = "Prepared";

// Compact and deterministic (object keys are sorted), so the checksum of the
// data re-serialized after parsing equals the one computed when writing.
// Invalid UTF-8 in a driver-supplied string is replaced instead of throwing.
std::string Dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

json EncodeDevice(const Device& device) {
  json out = json::object();
  out["requests"] = device.requests;
  out["poolName"] = device.pool_name;
  out["deviceName"] = device.device_name;
  out["cdiDeviceIDs"] = device.cdi_device_ids;
  if (device.share_id) out["shareID"] = *device.share_id;
  return out;
}

json EncodeEntry(const CheckpointEntry& entry) {
  json devices = json::array();
  for (const Device& device : entry.devices) devices.push_back(EncodeDevice(device));
  json out = json::object();
  out["namespace"] = entry.claim.namespace_;
  out["name"] = entry.claim.name;
  out["state"] = entry.state == ClaimState::kPrepared ? kPrepared : kPrepareStarted;
  out["devices"] = std::move(devices);
  return out;
}

// Reads typed fields out of parsed JSON, keeping the first problem found
// (named by its location, e.g. "data.claims.<uid>.devices[0].poolName"); after a
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

CheckpointEntry DecodeEntry(FieldReader& reader, const std::string& uid, const json& in) {
  const std::string where = absl::StrCat("data.claims.", uid, ".");
  CheckpointEntry entry;
  entry.claim.uid = uid;
  entry.claim.namespace_ = reader.String(in, where, "namespace");
  entry.claim.name = reader.String(in, where, "name");
  const std::string state = reader.String(in, where, "state");
  if (state == kPrepared) {
    entry.state = ClaimState::kPrepared;
  } else if (state != kPrepareStarted) {
    reader.Fail(absl::StrCat(where, "state: \"", state, "\" is neither \"", kPrepareStarted, "\" nor \"",
                             kPrepared, "\""));
  }
  const json* devices = reader.Field(in, where, "devices", json::value_t::array, "an array");
  if (devices == nullptr) return entry;
  for (size_t i = 0; i < devices->size(); ++i) {
    entry.devices.push_back(DecodeDevice(reader, (*devices)[i], absl::StrCat(where, "devices[", i, "].")));
  }
  return entry;
}

// Returns the entries in `content`, or an error saying what is wrong with it.
absl::StatusOr<std::map<std::string, CheckpointEntry>> Decode(const std::string& content) {
  const json file = json::parse(content, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded()) return absl::DataLossError("not valid JSON");
  if (!file.is_object()) return absl::DataLossError("not a JSON object");

  const auto version = file.find("version");
  if (version == file.end() || !version->is_number_integer()) {
    return absl::DataLossError("version: missing or not an integer");
  }
  if (version->get<int64_t>() != kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("unsupported version ", version->dump(), " (this build reads version ", kVersion, ")"));
  }

  FieldReader reader;
  const std::string checksum = reader.String(file, "", "checksum");
  const json* data = reader.Field(file, "", "data", json::value_t::object, "an object");
  if (!reader.status().ok()) return reader.status();
  if (Sha256Hex(Dump(*data)) != checksum) {
    return absl::DataLossError("checksum mismatch: file was modified or corrupted");
  }

  const json* claims = reader.Field(*data, "data.", "claims", json::value_t::object, "an object");
  std::map<std::string, CheckpointEntry> entries;
  if (claims == nullptr) return reader.status();
  for (const auto& [uid, claim] : claims->items()) entries.emplace(uid, DecodeEntry(reader, uid, claim));
  if (!reader.status().ok()) return reader.status();
  return entries;
}

// The entries in the file at `path`; none when it does not exist.
absl::StatusOr<std::map<std::string, CheckpointEntry>> Load(const std::string& path) {
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(path);
  if (absl::IsNotFound(content.status())) return std::map<std::string, CheckpointEntry>();
  if (!content.ok()) return content.status();

  absl::StatusOr<std::map<std::string, CheckpointEntry>> entries = Decode(*content);
  if (!entries.ok()) {
    return absl::Status(entries.status().code(),
                        absl::StrCat("checkpoint ", path, ": ", entries.status().message(),
                                     "; it has been left in place, move it away to start with an empty checkpoint"));
  }
  return entries;
}

}  // namespace

Checkpoint::Checkpoint(std::string path) : path_(std::move(path)) {}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(std::string path) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint(std::move(path)));
  absl::StatusOr<std::map<std::string, CheckpointEntry>> entries = Load(checkpoint->path_);
  if (!entries.ok()) return entries.status();
  checkpoint->entries_ = *std::move(entries);
  return checkpoint;
}

absl::Status Checkpoint::Reload() {
  std::unique_lock lock(mu_);
  // A commit is in flight until its batch is durable or its write failed.
  // Replacing the entries under it would drop its change from the file.
  cv_.wait(lock, [&] { return applied_seq_ <= std::max(durable_seq_, last_failed_seq_); });
  absl::StatusOr<std::map<std::string, CheckpointEntry>> entries = Load(path_);
  if (!entries.ok()) return entries.status();
  entries_ = *std::move(entries);
  return absl::OkStatus();
}

std::optional<CheckpointEntry> Checkpoint::Get(const std::string& uid) const {
  std::lock_guard lock(mu_);
  const auto it = entries_.find(uid);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::vector<CheckpointEntry> Checkpoint::Entries() const {
  std::lock_guard lock(mu_);
  std::vector<CheckpointEntry> out;
  out.reserve(entries_.size());
  for (const auto& [uid, entry] : entries_) out.push_back(entry);
  return out;
}

uint64_t Checkpoint::writes() const {
  std::lock_guard lock(mu_);
  return writes_;
}

absl::Status Checkpoint::Commit(std::vector<CheckpointChange> changes) {
  for (const CheckpointChange& change : changes) {
    if (change.entry && change.entry->claim.uid != change.uid) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint change for claim UID ", change.uid,
                                                     " carries an entry for UID ", change.entry->claim.uid));
    }
  }

  std::unique_lock lock(mu_);
  for (CheckpointChange& change : changes) {
    if (change.entry) {
      entries_.insert_or_assign(change.uid, std::move(*change.entry));
    } else {
      entries_.erase(change.uid);
    }
  }
  const uint64_t seq = ++applied_seq_;

  // Group commit: wait while another caller writes; its write may already
  // cover this batch. Otherwise become the writer for everything applied so far.
  while (true) {
    if (durable_seq_ >= seq) return absl::OkStatus();
    if (last_failed_seq_ >= seq) return last_write_status_;
    if (!writing_) break;
    cv_.wait(lock);
  }
  writing_ = true;
  const uint64_t covered = applied_seq_;
  const std::string content = Serialize();
  lock.unlock();

  absl::Status status = dra::internal::WriteFileAtomically(path_, content, kFileMode);

  lock.lock();
  writing_ = false;
  if (status.ok()) {
    durable_seq_ = covered;
    ++writes_;
  } else {
    last_failed_seq_ = covered;
    last_write_status_ = status;
  }
  cv_.notify_all();
  return status;
}

std::string Checkpoint::Serialize() const {
  json claims = json::object();
  for (const auto& [uid, entry] : entries_) claims[uid] = EncodeEntry(entry);
  json data = json::object();
  data["claims"] = std::move(claims);
  json file = json::object();
  file["version"] = kVersion;
  file["checksum"] = Sha256Hex(Dump(data));
  file["data"] = std::move(data);
  return Dump(file);
}

}  // namespace dra::kubeletplugin::internal
