#include "dra/resourceclaim/claim_status_writer.h"

#include <atomic>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "crashpoint/crash_point.h"
#include "dra/k8s/field_error.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/k8s/validation.h"
#include "resourceclaim/allocated_device_key.h"

namespace dra::resourceclaim {
namespace {

using internal::AllocatedDeviceKey;
using internal::Describe;
using internal::KeyOf;
using k8s::AllocatedDeviceStatus;
using k8s::FieldError;

bool Retryable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
      return true;
    case absl::StatusCode::kAborted:
      return k8s::IsConflict(status);
    default:
      return false;
  }
}

// FailedPrecondition when the claim read is not the one `ref` means.
absl::Status SameClaim(const std::string& uid, const k8s::ClaimRef& ref) {
  if (uid == ref.uid) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("the claim got replaced (UID ", uid, ", want ", ref.uid, ")"));
}

std::string Rfc3339Now() { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()); }

// Keeps a condition's lastTransitionTime when the live entry has the same
// condition with the same status, as meta.SetStatusCondition does.
void CompleteTransitionTimes(AllocatedDeviceStatus& entry, const AllocatedDeviceStatus* live) {
  for (k8s::Condition& condition : entry.conditions) {
    if (!condition.last_transition_time.empty()) continue;
    if (live != nullptr) {
      for (const k8s::Condition& old : live->conditions) {
        if (old.type == condition.type && old.status == condition.status) {
          condition.last_transition_time = old.last_transition_time;
        }
      }
    }
    if (condition.last_transition_time.empty()) condition.last_transition_time = Rfc3339Now();
  }
}

AllocatedDeviceKey KeyOfEntry(const nlohmann::json& entry) {
  return {entry.value("driver", ""), entry.value("pool", ""), entry.value("device", ""), entry.value("shareID", "")};
}

// The object at `key` of `object`, if both are objects.
const nlohmann::json* Member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

// The key of a FieldsV1 list-map item, "k:{...}"; null when it is not one.
nlohmann::json ListMapKey(const std::string& field) {
  if (field.rfind("k:", 0) != 0) return nullptr;
  nlohmann::json key = nlohmann::json::parse(field.substr(2), nullptr, /*allow_exceptions=*/false);
  return key.is_object() ? key : nullptr;
}

// What one field manager owns of a status.devices entry.
struct OwnedFields {
  std::set<std::string> condition_types;
  bool data = false;
  bool network_data = false;
};

// What `manager` owns of the claim's status.devices entries, as its
// managedFields record it (the status subresource, applied or updated).
std::map<AllocatedDeviceKey, OwnedFields> OwnedByManager(const nlohmann::json& claim, const std::string& manager) {
  std::map<AllocatedDeviceKey, OwnedFields> owned;
  const nlohmann::json* metadata = Member(claim, "metadata");
  if (metadata == nullptr || !metadata->contains("managedFields") || !(*metadata)["managedFields"].is_array()) {
    return owned;
  }
  for (const nlohmann::json& record : (*metadata)["managedFields"]) {
    if (!record.is_object() || record.value("manager", "") != manager || record.value("subresource", "") != "status") {
      continue;
    }
    const nlohmann::json* fields = Member(record, "fieldsV1");
    const nlohmann::json* status = fields != nullptr ? Member(*fields, "f:status") : nullptr;
    const nlohmann::json* devices = status != nullptr ? Member(*status, "f:devices") : nullptr;
    if (devices == nullptr) continue;
    for (const auto& [field, entry] : devices->items()) {
      const nlohmann::json key = ListMapKey(field);
      if (key.is_null()) continue;
      OwnedFields& of = owned[KeyOfEntry(key)];
      if (const nlohmann::json* conditions = Member(entry, "f:conditions"); conditions != nullptr) {
        for (const auto& [condition, ignored] : conditions->items()) {
          const nlohmann::json type = ListMapKey(condition);
          if (!type.is_null()) of.condition_types.insert(type.value("type", ""));
        }
      }
      of.data = of.data || entry.contains("f:data");
      of.network_data = of.network_data || entry.contains("f:networkData");
    }
  }
  return owned;
}

// Removes from a live entry what the writer's manager owns.
void Forget(const OwnedFields& owned, nlohmann::json& entry) {
  if (entry.contains("conditions") && entry["conditions"].is_array()) {
    nlohmann::json kept = nlohmann::json::array();
    for (const nlohmann::json& condition : entry["conditions"]) {
      if (!condition.is_object() || !owned.condition_types.contains(condition.value("type", ""))) {
        kept.push_back(condition);
      }
    }
    if (kept.empty()) {
      entry.erase("conditions");
    } else {
      entry["conditions"] = std::move(kept);
    }
  }
  if (owned.data) entry.erase("data");
  if (owned.network_data) entry.erase("networkData");
}

// The writer's entry over the live one with the same key: its conditions
// replace those of the same type, its data and networkData the live ones.
void MergeInto(const nlohmann::json& entry, nlohmann::json& live) {
  for (const nlohmann::json& condition : entry.value("conditions", nlohmann::json::array())) {
    nlohmann::json& conditions = live["conditions"];
    if (!conditions.is_array()) conditions = nlohmann::json::array();
    auto same = std::find_if(conditions.begin(), conditions.end(), [&](const nlohmann::json& other) {
      return other.is_object() && other.value("type", "") == condition.value("type", "");
    });
    if (same == conditions.end()) {
      conditions.push_back(condition);
    } else {
      *same = condition;
    }
  }
  for (const char* field : {"data", "networkData"}) {
    if (entry.contains(field)) live[field] = entry[field];
  }
}

}  // namespace

class ClaimStatusWriter::Impl {
 public:
  Impl(std::shared_ptr<k8s::Client> client, ClaimStatusWriterOptions options)
      : client_(std::move(client)), options_(std::move(options)) {}

  absl::Status Apply(const CallContext& ctx, const k8s::ClaimRef& claim,
                     std::vector<k8s::AllocatedDeviceStatus> devices) const;
  const ClaimStatusWriterOptions& options() const { return options_; }

 private:
  // One attempt: read the claim, check and complete the entries, apply.
  // Errors are the client's, unannotated, so that Apply can classify them.
  absl::Status ApplyOnce(const CallContext& ctx, const k8s::ClaimRef& claim,
                         std::vector<k8s::AllocatedDeviceStatus> devices) const;
  // Puts `claim` (as read) back with this driver's status entries replaced
  // by `entries` (encoded).
  absl::Status UpdateOnce(const k8s::ClaimRef& ref, nlohmann::json claim, const nlohmann::json& entries,
                          absl::Time deadline) const;

  const std::shared_ptr<k8s::Client> client_;
  const ClaimStatusWriterOptions options_;
  // Server-side apply was forbidden: write with update from now on.
  mutable std::atomic<bool> use_update_{false};
};

absl::StatusOr<std::unique_ptr<ClaimStatusWriter>> ClaimStatusWriter::Create(std::shared_ptr<k8s::Client> client,
                                                                             ClaimStatusWriterOptions options) {
  if (client == nullptr) return absl::InvalidArgumentError("ClaimStatusWriter: client: Required value");
  if (k8s::FieldErrors errors = k8s::ValidateDriverName(options.driver_name, "driver_name"); !errors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("ClaimStatusWriterOptions: ", errors.front().ToString()));
  }
  if (options.field_manager.empty()) options.field_manager = options.driver_name;
  if (options.backoff_initial <= absl::ZeroDuration() || options.backoff_max < options.backoff_initial) {
    return absl::InvalidArgumentError(
        "ClaimStatusWriterOptions: backoff_initial: Invalid value: must be positive and at most backoff_max");
  }
  return std::unique_ptr<ClaimStatusWriter>(
      new ClaimStatusWriter(std::make_unique<Impl>(std::move(client), std::move(options))));
}

ClaimStatusWriter::ClaimStatusWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClaimStatusWriter::~ClaimStatusWriter() = default;

const ClaimStatusWriterOptions& ClaimStatusWriter::options() const { return impl_->options(); }

absl::Status ClaimStatusWriter::Apply(const CallContext& ctx, const k8s::ClaimRef& claim,
                                      std::vector<AllocatedDeviceStatus> devices) const {
  return impl_->Apply(ctx, claim, std::move(devices));
}

absl::Status ClaimStatusWriter::Impl::Apply(const CallContext& ctx, const k8s::ClaimRef& claim,
                                            std::vector<AllocatedDeviceStatus> devices) const {
  const std::string what = absl::StrCat("write device status of claim ", claim.ToString());
  for (int attempt = 0;; ++attempt) {
    absl::Status status = ApplyOnce(ctx, claim, devices);
    if (status.ok()) return status;
    if (!Retryable(status)) {
      return k8s::Annotate(status, what);
    }
    const absl::Duration wait = base::Backoff(attempt, options_.backoff_initial, options_.backoff_max);
    ctx.logger().InfoV(
        2, "Retrying device status write",
        {{"claim", claim.ToString()}, {"err", status.ToString()}, {"after", absl::FormatDuration(wait)}});
    if (ctx.WaitForCancellation(wait)) {
      return absl::Status(ctx.status().code(),
                          absl::StrCat(what, ": ", ctx.status().message(), "; last error: ", status.message()));
    }
  }
}

absl::Status ClaimStatusWriter::Impl::ApplyOnce(const CallContext& ctx, const k8s::ClaimRef& ref,
                                                std::vector<AllocatedDeviceStatus> devices) const {
  const absl::Time deadline = ctx.deadline();
  // Writing by update: the claim as read, to be put back with the entries.
  std::optional<nlohmann::json> object;
  absl::StatusOr<k8s::ResourceClaim> live;
  if (use_update_) {
    absl::StatusOr<nlohmann::json> read = client_->Get(k8s::kResourceClaims, ref.namespace_, ref.name, deadline);
    if (!read.ok()) return read.status();
    live = k8s::ResourceClaimFromJson(*read);
    object = *std::move(read);
  } else {
    live = client_->GetResourceClaim(ref.namespace_, ref.name, deadline);
  }
  if (!live.ok()) return live.status();
  if (absl::Status same = SameClaim(live->metadata.uid, ref); !same.ok()) return same;
  if (!live->status.allocation.has_value()) return absl::FailedPreconditionError("the claim is not allocated");

  std::set<AllocatedDeviceKey> allocated;
  for (const k8s::DeviceRequestAllocationResult& result : live->status.allocation->devices.results) {
    if (result.driver == options_.driver_name) {
      allocated.insert(KeyOf(result));
    }
  }
  k8s::FieldErrors errors;
  std::set<AllocatedDeviceKey> seen;
  for (size_t i = 0; i < devices.size(); ++i) {
    AllocatedDeviceStatus& entry = devices[i];
    const std::string path = absl::StrCat("status.devices[", i, "]");
    const AllocatedDeviceKey key = KeyOf(entry);
    if (entry.driver != options_.driver_name) {
      errors.push_back(
          FieldError::Invalid(path + ".driver", k8s::GoQuote(entry.driver),
                              absl::StrCat("must be this writer's driver ", k8s::GoQuote(options_.driver_name))));
      continue;
    }
    if (!seen.insert(key).second) {
      errors.push_back(FieldError::Duplicate(path, k8s::GoQuote(Describe(key))));
      continue;
    }
    if (allocated.count(key) == 0) {
      errors.push_back(FieldError::Invalid(path, k8s::GoQuote(Describe(key)),
                                           "must be a device allocated to this driver in the claim"));
      continue;
    }
    const AllocatedDeviceStatus* live_entry = nullptr;
    for (const AllocatedDeviceStatus& old : live->status.devices) {
      if (KeyOf(old) == key) live_entry = &old;
    }
    CompleteTransitionTimes(entry, live_entry);
    k8s::FieldErrors invalid = k8s::ValidateAllocatedDeviceStatus(entry, path);
    errors.insert(errors.end(), invalid.begin(), invalid.end());
  }
  if (!errors.empty()) {
    return k8s::ToStatus(errors, absl::StrCat("ResourceClaim.resource.k8s.io ", k8s::GoQuote(ref.name)));
  }

  // Only what this manager owns: the entries' keys and fields. Encoded as
  // the claim codec writes them.
  k8s::ResourceClaim applied;
  applied.status.devices = std::move(devices);
  const nlohmann::json entries = k8s::ToJson(applied)["status"].value("devices", nlohmann::json::array());
  if (object) return UpdateOnce(ref, *std::move(object), entries, deadline);
  nlohmann::json body = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", ref.name}, {"namespace", ref.namespace_}, {"uid", ref.uid}}},
      {"status", {{"devices", entries}}},
  };
  k8s::PatchOptions options;
  options.field_manager = options_.field_manager;
  options.force = true;  // this driver's entries are its own, whoever wrote them before
  options.subresource = "status";
  options.deadline = deadline;
  DRA_CRASH_POINT("status.before_write");
  absl::StatusOr<nlohmann::json> patched =
      client_->Patch(k8s::kResourceClaims, ref.namespace_, ref.name, k8s::PatchType::kApply, body, options);
  DRA_CRASH_POINT("status.after_write");
  if (patched.status().code() != absl::StatusCode::kPermissionDenied) return patched.status();
  if (!use_update_.exchange(true)) {
    ctx.logger().Info("Applying device status is forbidden; writing it with update from now on",
                      {{"claim", ref.ToString()}, {"err", patched.status().ToString()}});
  }
  // The typed read cannot be put back whole: read the claim as JSON.
  absl::StatusOr<nlohmann::json> read = client_->Get(k8s::kResourceClaims, ref.namespace_, ref.name, deadline);
  if (!read.ok()) return read.status();
  if (absl::Status same = SameClaim((*read)["metadata"].value("uid", ""), ref); !same.ok()) return same;
  absl::Status updated = UpdateOnce(ref, *std::move(read), entries, deadline);
  if (updated.code() == absl::StatusCode::kPermissionDenied) use_update_ = false;  // neither: apply next time
  return updated;
}

absl::Status ClaimStatusWriter::Impl::UpdateOnce(const k8s::ClaimRef& ref, nlohmann::json claim,
                                                 const nlohmann::json& entries, absl::Time deadline) const {
  // As server-side apply would: what this writer's field manager wrote before
  // (managedFields) goes, what other managers of the driver wrote stays, and
  // `entries` are merged in.
  const std::map<AllocatedDeviceKey, OwnedFields> owned = OwnedByManager(claim, options_.field_manager);
  std::set<AllocatedDeviceKey> writing;
  for (const nlohmann::json& entry : entries) writing.insert(KeyOfEntry(entry));
  nlohmann::json devices = nlohmann::json::array();
  for (nlohmann::json entry : claim["status"].value("devices", nlohmann::json::array())) {
    const AllocatedDeviceKey key = KeyOfEntry(entry);
    if (entry.value("driver", "") == options_.driver_name) {
      if (const auto it = owned.find(key); it != owned.end()) Forget(it->second, entry);
      if (!writing.contains(key) && !entry.contains("conditions") && !entry.contains("data") &&
          !entry.contains("networkData")) {
        continue;  // nothing of anyone's is left in it
      }
    }
    devices.push_back(std::move(entry));
  }
  for (const nlohmann::json& entry : entries) {
    auto live = std::find_if(devices.begin(), devices.end(),
                             [&](const nlohmann::json& other) { return KeyOfEntry(other) == KeyOfEntry(entry); });
    if (live == devices.end()) {
      devices.push_back(entry);
    } else {
      MergeInto(entry, *live);
    }
  }
  claim["status"]["devices"] = std::move(devices);
  k8s::UpdateOptions options;
  options.field_manager = options_.field_manager;
  options.deadline = deadline;
  DRA_CRASH_POINT("status.before_write");
  absl::StatusOr<nlohmann::json> updated = client_->UpdateStatus(k8s::kResourceClaims, ref.namespace_, claim, options);
  DRA_CRASH_POINT("status.after_write");
  if (updated.status().code() == absl::StatusCode::kPermissionDenied) {
    return absl::PermissionDeniedError(
        absl::StrCat("neither patch (server-side apply) nor update of resourceclaims/status is allowed: ",
                     updated.status().message()));
  }
  return updated.status();
}

}  // namespace dra::resourceclaim
