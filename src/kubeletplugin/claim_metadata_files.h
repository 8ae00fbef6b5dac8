// The KEP-5304 device metadata files of prepared claims and the CDI specs
// that mount them (layout and format: dra/kubeletplugin/device_metadata.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/cdi/spec_dir.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/resource_claim.h"
#include "dra/kubeletplugin/driver.h"

namespace dra::kubeletplugin::internal {

// Path -> content of every file written for one claim, as the checkpoint
// keeps them to write them again.
using MetadataFiles = std::map<std::string, std::string>;

class ClaimMetadataFiles {
 public:
  // `versions` as DeviceMetadataOptions::versions; Check() first.
  ClaimMetadataFiles(std::string driver_name, std::string plugin_data_dir, cdi::SpecDirOptions cdi_dir,
                     std::vector<std::string> versions);

  // InvalidArgument naming options.device_metadata.versions when they are
  // empty, unknown or lack the latest version.
  static absl::Status Check(const std::vector<std::string>& versions);

  // For each request (subrequest suffix dropped) that a device of `devices`
  // serves: writes its metadata file and CDI spec (each atomically), appends
  // the spec's CDI ID to those devices and clears their metadata. Devices
  // that serve all requests (empty Device::requests) get none, as in the Go
  // helper. The claim's namespace, name, UID and request names become path
  // components and are checked first. Returns what was written.
  absl::StatusOr<MetadataFiles> Write(const k8s::ResourceClaim& claim, std::vector<Device>& devices) const;

  // Writes the files of `files` that are missing (a reboot emptied the CDI dir).
  absl::Status Restore(const MetadataFiles& files) const;
  bool AllExist(const MetadataFiles& files) const;
  // Writes the files of `files` that are missing or differ (a crash between
  // recording an update and writing it); true when it wrote any.
  absl::StatusOr<bool> Repair(const MetadataFiles& files) const;
  // Writes each file of `files` (atomically).
  absl::Status Overwrite(const MetadataFiles& files) const;

  // The next generation of the metadata file of `request` (subrequest suffix
  // dropped) of a prepared claim, with the metadata of `devices`
  // (Helper::UpdateRequestMetadata); not written. The current file is
  // `recorded`'s copy, else the file itself. NotFound when the claim (this
  // UID) has no such file; InvalidArgument unless `devices` are exactly the
  // devices the file lists (any order; they stay in the file's order).
  absl::StatusOr<MetadataFiles> NextGeneration(const k8s::ClaimRef& claim, const std::string& request,
                                               const std::vector<Device>& devices, const MetadataFiles& recorded) const;

  // Removes the claim's metadata directory and CDI specs; missing is success.
  absl::Status Remove(const k8s::ClaimRef& claim) const;

  // Removes the metadata directories and this driver's metadata CDI specs of
  // claims not in `keep` (left by a crash between writing them and recording
  // the claim). Returns the paths removed.
  absl::StatusOr<std::vector<std::string>> RemoveAllExcept(const std::vector<k8s::ClaimRef>& keep) const;

 private:
  std::string ClaimDir(const std::string& ns, const std::string& name) const;
  std::string MetadataPath(const std::string& ns, const std::string& name, const std::string& base_request) const;
  // A metadata file (mode 0644, its directories made) or a CDI spec.
  absl::Status WriteFile(const std::string& path, const std::string& content) const;
  // The file's content: one object per configured version.
  std::string Stream(const k8s::ClaimRef& claim, const std::optional<std::string>& pod_claim_name,
                     const std::string& request, const std::vector<const Device*>& devices, int64_t generation) const;

  const std::string driver_name_;
  const std::string metadata_root_;  // <plugin data dir>/dra-device-metadata
  const cdi::SpecDir cdi_dir_;
  const std::vector<std::string> versions_;
};

}  // namespace dra::kubeletplugin::internal
