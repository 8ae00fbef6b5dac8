// The Helper's CDI spec files: one transient spec per claim, holding the
// devices for which the driver returned CDI edits, and the node-wide specs
// the driver gave (Options::cdi.node_specs).
#pragma once

#include <map>
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
  // Per-claim specs in `claim_format`, node-wide ones in dir.format.
  static absl::StatusOr<std::unique_ptr<ClaimCdiSpecs>> Create(cdi::Kind kind, cdi::SpecDirOptions dir,
                                                               cdi::Format claim_format,
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
  // A checkpointed spec (`spec_json`, as Write returned it) lives in a file
  // named after the kind inside it. A spec that an earlier version of the
  // driver wrote under another kind (options.cdi.vendor or class_name have
  // changed since) so stays where the runtime found it until its claim is
  // unprepared, in the format it has on disk (JSON when it is gone).

  // Whether the claim's spec file is there.
  absl::StatusOr<bool> Exists(const std::string& claim_uid, const std::string& spec_json) const;
  // Writes the spec file again from its checkpointed JSON (after a reboot
  // emptied the spec dir), as Write does.
  absl::Status Restore(const std::string& claim_uid, const std::string& spec_json) const;
  // Writes the spec file again, with fsync, unless it holds exactly what the
  // checkpointed JSON gives; true when it did.
  absl::StatusOr<bool> Repair(const std::string& claim_uid, const std::string& spec_json) const;
  // Removes the claim's spec file, the one its checkpointed JSON names when
  // there is one, else this kind's; a missing one is success.
  absl::Status Remove(const std::string& claim_uid, const std::string& spec_json = "") const;
  // Removes this kind's per-claim spec files whose claim UID is not in `keep`.
  absl::StatusOr<std::vector<std::string>> RemoveAllExcept(const std::set<std::string>& keep) const;
  // This kind's per-claim spec files whose claim UID is not in `known`: UID
  // -> the names of the devices in it (its CDI devices "<uid>-<device>";
  // none when it does not decode).
  absl::StatusOr<std::map<std::string, std::vector<std::string>>> ClaimsOnDisk(
      const std::set<std::string>& known) const;

 private:
  ClaimCdiSpecs(cdi::Kind kind, cdi::SpecDirOptions dir, cdi::Format claim_format,
                std::vector<std::pair<std::string, cdi::Spec>> node_specs);
  std::string FileName(const std::string& claim_uid) const;
  // Where a checkpointed spec's file is: the spec dir in the format to use,
  // and the file name.
  struct Location {
    const cdi::SpecDir* dir;
    std::string name;
  };
  Location LocationOf(const std::string& claim_uid, const cdi::Spec& spec) const;

  const cdi::Kind kind_;
  const cdi::SpecDir dir_;        // node-wide specs
  const cdi::SpecDir claim_dir_;  // this kind's per-claim specs
  const cdi::SpecDir json_dir_;   // spec files of another kind
  const cdi::SpecDir yaml_dir_;
  const std::vector<std::pair<std::string, cdi::Spec>> node_specs_;  // by file name
};

}  // namespace dra::kubeletplugin::internal
