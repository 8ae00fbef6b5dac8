// The files a prepared claim leaves on the node for the container runtime:
// its CDI spec (Options::cdi) and its device metadata files
// (Options::device_metadata), either of which may be off, and the driver's
// node-wide CDI specs. The checkpoint keeps what was written, so that files
// a reboot or a crash lost are written again and files no claim owns are
// removed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/resource_claim.h"
#include "dra/kubeletplugin/driver.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/claim_cdi_specs.h"
#include "kubeletplugin/claim_metadata_files.h"

namespace dra::kubeletplugin::internal {

class ClaimFiles {
 public:
  // A null one is off.
  ClaimFiles(std::unique_ptr<ClaimCdiSpecs> cdi_specs, std::unique_ptr<ClaimMetadataFiles> metadata_files);

  // What Write wrote, for the checkpoint entry.
  struct Written {
    std::string cdi_spec;          // JSON; empty when no device had edits
    MetadataFiles metadata_files;  // empty when no device had metadata
  };
  // Writes the claim's metadata files (they record subrequest names), then
  // its CDI spec, and leaves `devices` as the kubelet gets them: edits and
  // metadata moved into the files, their CDI IDs appended, request names
  // without subrequest suffix. With device metadata off, metadata is
  // dropped (as the Go helper does); with CDI off, a device with edits is the
  // claim's error, as is a failed write.
  absl::StatusOr<Written> Write(const k8s::ResourceClaim& claim, std::vector<Device>& devices) const;

  // Whether a file the prepared claim's entry records is gone (a reboot
  // emptied the tmpfs); Restore writes those again.
  bool Lost(const CheckpointEntry& entry) const;
  absl::Status Restore(const CheckpointEntry& entry) const;

  // Removes the claim's files after the driver unprepared it: those its
  // prepared entry records, or, without one (no checkpoint, or preparation
  // started and cut short), any it may have. Missing files are success.
  absl::Status Remove(const k8s::ClaimRef& ref, const CheckpointEntry* prepared) const;

  // Helper::UpdateRequestMetadata: the next generation of a request's
  // metadata file (ClaimMetadataFiles::NextGeneration), not yet written, and
  // writing it. FailedPrecondition with device metadata off.
  absl::StatusOr<MetadataFiles> NextMetadataGeneration(const k8s::ClaimRef& ref, const std::string& request,
                                                       const std::vector<Device>& devices,
                                                       const MetadataFiles& recorded) const;
  absl::Status WriteMetadata(const MetadataFiles& files) const;

  // Writes every node-wide spec (Start), or with `only_missing` those whose
  // file is gone (before a prepare call is answered). OK with CDI off.
  absl::Status WriteNodeSpecs(bool only_missing) const;

  struct Repaired {
    std::vector<std::string> removed;    // paths
    std::vector<std::string> rewritten;  // claim UIDs
    // Claims whose files could not be written again, by UID, with why; the
    // others are repaired all the same.
    std::vector<std::pair<std::string, absl::Status>> failed;
    // With `unaccounted`: claims the entries lack whose CDI spec is there,
    // by UID, with the devices it names.
    std::map<std::string, std::vector<std::string>> unknown;
    // Entries whose held devices may be short (quarantined ones, and started
    // ones that hold none: adopted from another driver's checkpoint, or
    // written by 0.1.0) whose CDI spec is there, by UID, with the devices it
    // names.
    std::map<std::string, std::vector<std::string>> spec_devices;
  };
  // Removes the per-claim files of claims not in `entries` (left by a crash
  // between writing them and recording the claim, or by an unprepare that
  // never came), and writes again, with fsync, each prepared claim's CDI
  // spec file that does not hold the entry's copy (they are written without
  // fsync, so a power loss may have left one empty), and each metadata file
  // that does not (a crash between recording a metadata update and writing
  // it). With `unaccounted` (the checkpoint lost records) the files of
  // claims not in `entries` stay, and their claims are reported instead.
  // Reports what the CDI specs of entries whose held devices may be short name.
  absl::StatusOr<Repaired> Repair(const std::vector<CheckpointEntry>& entries, bool unaccounted) const;

 private:
  bool CdiSpecLost(const CheckpointEntry& entry) const;

  const std::unique_ptr<ClaimCdiSpecs> cdi_specs_;
  const std::unique_ptr<ClaimMetadataFiles> metadata_files_;
};

}  // namespace dra::kubeletplugin::internal
