// The Helper's CDI spec files: one transient spec per claim, holding the
// devices for which the driver returned CDI edits, and the node-wide specs
// the driver gave (Options::cdi.node_specs).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/cdi/qualified_name.h"
#include "dra/cdi/spec.h"
#include "dra/cdi/spec_dir.h"
#include "dra/kubeletplugin/driver.h"

namespace dra::kubeletplugin::internal {

class ClaimCdiSpecs {
 public:
  // Fails, naming the spec, when a node-wide spec does not validate or has
  // the per-claim kind.
  static absl::StatusOr<std::unique_ptr<ClaimCdiSpecs>> Create(cdi::Kind kind, cdi::SpecDirOptions dir,
                                                               std::vector<cdi::Spec> node_specs);

  // Writes every node-wide spec (Start), or with `only_missing` those whose
  // file is gone (before a prepare call is answered).
  absl::Status WriteNodeSpecs(bool only_missing) const;

  // Moves the edits out of `devices` into the claim's spec, as CDI devices
  // "<claim UID>-<device name>" (with "-2", "-3", ... for a name seen twice),
  // and appends their qualified IDs to the devices' cdi_device_ids. nullopt
  // when no device carries edits.
  std::optional<cdi::Spec> TakeSpec(const std::string& claim_uid, std::vector<Device>& devices) const;

  // Writes the claim's spec file; returns the spec as JSON for the
  // checkpoint. Without fsync: the checkpoint's durable copy is what
  // survives a power loss, and Repair puts the file right after one.
  absl::StatusOr<std::string> Write(const std::string& claim_uid, const cdi::Spec& spec) const;
  // Whether the claim's spec file is there.
  bool Exists(const std::string& claim_uid) const;
  // Writes the spec file again from its checkpointed JSON (after a reboot
  // emptied the spec dir), as Write does.
  absl::Status Restore(const std::string& claim_uid, const std::string& spec_json) const;
  // Writes the spec file again, with fsync, unless it holds exactly what the
  // checkpointed JSON gives; true when it did.
  absl::StatusOr<bool> Repair(const std::string& claim_uid, const std::string& spec_json) const;
  // Removes the claim's spec file; a missing one is success.
  absl::Status Remove(const std::string& claim_uid) const;
  // Removes this kind's per-claim spec files whose claim UID is not in `keep`.
  absl::StatusOr<std::vector<std::string>> RemoveAllExcept(const std::set<std::string>& keep) const;

 private:
  ClaimCdiSpecs(cdi::Kind kind, cdi::SpecDirOptions dir, std::vector<std::pair<std::string, cdi::Spec>> node_specs);
  std::string FileName(const std::string& claim_uid) const;

  const cdi::Kind kind_;
  const cdi::SpecDir dir_;
  const std::vector<std::pair<std::string, cdi::Spec>> node_specs_;  // by file name
};

}  // namespace dra::kubeletplugin::internal
