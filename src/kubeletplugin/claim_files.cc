#include "kubeletplugin/claim_files.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/annotate.h"
#include "crashpoint/crash_point.h"
#include "kubeletplugin/request_names.h"

namespace dra::kubeletplugin::internal {
namespace {

using base::Annotate;

}  // namespace

ClaimFiles::ClaimFiles(std::unique_ptr<ClaimCdiSpecs> cdi_specs, std::unique_ptr<ClaimMetadataFiles> metadata_files)
    : cdi_specs_(std::move(cdi_specs)), metadata_files_(std::move(metadata_files)) {}

absl::StatusOr<ClaimFiles::Written> ClaimFiles::Write(const k8s::ResourceClaim& claim,
                                                      std::vector<Device>& devices) const {
  const k8s::ClaimRef ref = k8s::ClaimRefOf(claim);
  Written written;
  if (metadata_files_ == nullptr) {
    for (Device& device : devices) device.metadata.reset();
  } else {
    absl::StatusOr<MetadataFiles> files = metadata_files_->Write(claim, devices);
    if (!files.ok()) return Annotate(files.status(), absl::StrCat("write device metadata of claim ", ref.ToString()));
    written.metadata_files = *std::move(files);
    if (!written.metadata_files.empty()) DRA_CRASH_POINT("prepare.after_metadata_files");
  }
  for (Device& device : devices) {
    for (std::string& request : device.requests) request = BaseRequestName(request);
  }
  if (cdi_specs_ == nullptr) {
    for (const Device& device : devices) {
      if (device.cdi_edits.has_value()) {
        return absl::FailedPreconditionError(absl::StrCat("device ", device.device_name, " of claim ", ref.ToString(),
                                                          " has CDI edits but options.cdi.enabled is off"));
      }
    }
    return written;
  }
  std::optional<cdi::Spec> spec = cdi_specs_->TakeSpec(ref.uid, devices);
  if (!spec.has_value()) return written;
  absl::StatusOr<std::string> json = cdi_specs_->Write(ref.uid, *spec);
  if (!json.ok()) return Annotate(json.status(), absl::StrCat("write CDI spec of claim ", ref.ToString()));
  written.cdi_spec = *std::move(json);
  DRA_CRASH_POINT("prepare.after_cdi_spec");
  return written;
}

bool ClaimFiles::CdiSpecLost(const CheckpointEntry& entry) const {
  if (cdi_specs_ == nullptr || entry.cdi_spec.empty()) return false;
  absl::StatusOr<bool> exists = cdi_specs_->Exists(entry.claim.uid, entry.cdi_spec);
  return !exists.ok() || !*exists;  // Restore reports what is wrong
}

bool ClaimFiles::Lost(const CheckpointEntry& entry) const {
  return CdiSpecLost(entry) || (metadata_files_ != nullptr && !metadata_files_->AllExist(entry.metadata_files));
}

absl::Status ClaimFiles::Restore(const CheckpointEntry& entry) const {
  if (CdiSpecLost(entry)) {
    if (absl::Status status = cdi_specs_->Restore(entry.claim.uid, entry.cdi_spec); !status.ok()) return status;
  }
  if (metadata_files_ != nullptr) return metadata_files_->Restore(entry.metadata_files);
  return absl::OkStatus();
}

absl::Status ClaimFiles::Remove(const k8s::ClaimRef& ref, const CheckpointEntry* prepared) const {
  // With a prepared entry, only where it says files are: saves two failing
  // unlinks, and a scan of the CDI dir for metadata specs, per claim of a
  // driver that returns CDI IDs only.
  if (metadata_files_ != nullptr && (prepared == nullptr || !prepared->metadata_files.empty())) {
    if (absl::Status status = metadata_files_->Remove(ref); !status.ok()) return status;
  }
  if (cdi_specs_ != nullptr && (prepared == nullptr || !prepared->cdi_spec.empty())) {
    const std::string no_spec;
    const std::string& spec = prepared == nullptr ? no_spec : prepared->cdi_spec;
    if (absl::Status status = cdi_specs_->Remove(ref.uid, spec); !status.ok())
      return Annotate(status, "remove CDI spec");
  }
  return absl::OkStatus();
}

absl::StatusOr<MetadataFiles> ClaimFiles::NextMetadataGeneration(const k8s::ClaimRef& ref, const std::string& request,
                                                                 const std::vector<Device>& devices,
                                                                 const MetadataFiles& recorded) const {
  if (metadata_files_ == nullptr) {
    return absl::FailedPreconditionError("update device metadata: options.device_metadata.enabled is off");
  }
  return metadata_files_->NextGeneration(ref, request, devices, recorded);
}

absl::Status ClaimFiles::WriteMetadata(const MetadataFiles& files) const {
  if (metadata_files_ == nullptr) return absl::FailedPreconditionError("options.device_metadata.enabled is off");
  return metadata_files_->Overwrite(files);
}

absl::Status ClaimFiles::WriteNodeSpecs(bool only_missing) const {
  if (cdi_specs_ == nullptr) return absl::OkStatus();
  return cdi_specs_->WriteNodeSpecs(only_missing);
}

absl::StatusOr<ClaimFiles::Repaired> ClaimFiles::Repair(const std::vector<CheckpointEntry>& entries,
                                                        bool unaccounted) const {
  Repaired repaired;
  if (cdi_specs_ == nullptr) return repaired;  // metadata files need CDI too
  std::set<std::string> known;
  std::set<std::string> unsure;  // of their held devices
  std::vector<k8s::ClaimRef> claims;
  for (const CheckpointEntry& entry : entries) {
    known.insert(entry.claim.uid);
    claims.push_back(entry.claim);
    if ((entry.state == ClaimState::kPrepareStarted && entry.held.empty()) || !entry.quarantined.empty()) {
      unsure.insert(entry.claim.uid);
    }
  }
  std::map<std::string, std::vector<std::string>> on_disk;
  if (unaccounted || !unsure.empty()) {
    std::set<std::string> skip;
    std::set_difference(known.begin(), known.end(), unsure.begin(), unsure.end(), std::inserter(skip, skip.end()));
    absl::StatusOr<std::map<std::string, std::vector<std::string>>> specs = cdi_specs_->ClaimsOnDisk(skip);
    if (!specs.ok()) return specs.status();
    on_disk = *std::move(specs);
  }
  // Unaccounted, a spec of a claim not in `entries` stays; its temp files
  // without it never held a whole spec.
  std::set<std::string> keep = known;
  for (auto& [uid, devices] : on_disk) {
    if (unsure.contains(uid)) {
      repaired.spec_devices[uid] = std::move(devices);
    } else if (unaccounted) {
      keep.insert(uid);
      repaired.unknown[uid] = std::move(devices);
    }
  }
  absl::StatusOr<std::vector<std::string>> removed = cdi_specs_->RemoveAllExcept(keep);
  if (!removed.ok()) return removed.status();
  repaired.removed = *std::move(removed);
  if (metadata_files_ != nullptr && !unaccounted) {
    absl::StatusOr<std::vector<std::string>> metadata = metadata_files_->RemoveAllExcept(claims);
    if (!metadata.ok()) return metadata.status();
    repaired.removed.insert(repaired.removed.end(), metadata->begin(), metadata->end());
  }
  for (const CheckpointEntry& entry : entries) {
    if (entry.state != ClaimState::kPrepared) continue;
    bool rewritten = false;
    if (!entry.cdi_spec.empty()) {
      absl::StatusOr<bool> spec = cdi_specs_->Repair(entry.claim.uid, entry.cdi_spec);
      if (!spec.ok()) {
        repaired.failed.emplace_back(entry.claim.uid, Annotate(spec.status(), "repair its CDI spec"));
        continue;
      }
      rewritten = *spec;
    }
    if (metadata_files_ != nullptr && !entry.metadata_files.empty()) {
      absl::StatusOr<bool> metadata = metadata_files_->Repair(entry.metadata_files);
      if (!metadata.ok()) {
        repaired.failed.emplace_back(entry.claim.uid, Annotate(metadata.status(), "repair its device metadata"));
        continue;
      }
      rewritten = rewritten || *metadata;
    }
    if (rewritten) repaired.rewritten.push_back(entry.claim.uid);
  }
  return repaired;
}

}  // namespace dra::kubeletplugin::internal
