#include "dra/resourceclaim/claim_status_writer.h"

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

}  // namespace

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
  return std::unique_ptr<ClaimStatusWriter>(new ClaimStatusWriter(std::move(client), std::move(options)));
}

absl::Status ClaimStatusWriter::Apply(const CallContext& ctx, const k8s::ClaimRef& claim,
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

absl::Status ClaimStatusWriter::ApplyOnce(const CallContext& ctx, const k8s::ClaimRef& ref,
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

absl::Status ClaimStatusWriter::UpdateOnce(const k8s::ClaimRef& ref, nlohmann::json claim,
                                           const nlohmann::json& entries, absl::Time deadline) const {
  nlohmann::json devices = nlohmann::json::array();
  for (const nlohmann::json& entry : claim["status"].value("devices", nlohmann::json::array())) {
    if (entry.value("driver", "") != options_.driver_name) devices.push_back(entry);
  }
  devices.insert(devices.end(), entries.begin(), entries.end());
  claim["status"]["devices"] = std::move(devices);
  DRA_CRASH_POINT("status.before_write");
  absl::StatusOr<nlohmann::json> updated = client_->UpdateStatus(k8s::kResourceClaims, ref.namespace_, claim, deadline);
  DRA_CRASH_POINT("status.after_write");
  if (updated.status().code() == absl::StatusCode::kPermissionDenied) {
    return absl::PermissionDeniedError(
        absl::StrCat("neither patch (server-side apply) nor update of resourceclaims/status is allowed: ",
                     updated.status().message()));
  }
  return updated.status();
}

}  // namespace dra::resourceclaim
