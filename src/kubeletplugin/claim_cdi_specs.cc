#include "kubeletplugin/claim_cdi_specs.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dra/cdi/codec.h"

namespace dra::kubeletplugin::internal {

ClaimCdiSpecs::ClaimCdiSpecs(cdi::Kind kind, cdi::SpecDirOptions dir) : kind_(std::move(kind)), dir_(std::move(dir)) {}

std::string ClaimCdiSpecs::FileName(const std::string& claim_uid) const {
  return cdi::TransientSpecFileName(kind_, claim_uid);
}

std::optional<cdi::Spec> ClaimCdiSpecs::TakeSpec(const std::string& claim_uid, std::vector<Device>& devices) const {
  cdi::Spec spec;
  spec.kind = kind_.ToString();
  std::map<std::string, int> seen;
  for (Device& device : devices) {
    if (!device.cdi_edits.has_value()) continue;
    std::string name = absl::StrCat(claim_uid, "-", device.device_name);
    if (const int count = ++seen[name]; count > 1) absl::StrAppend(&name, "-", count);
    cdi::QualifiedName id{kind_.vendor, kind_.class_name, name};
    // First: the kubelet names a device in the pod's allocatedResourcesStatus
    // (resourceID) after its first CDI ID, which must be the device's own,
    // not a spec that all devices share.
    device.cdi_device_ids.insert(device.cdi_device_ids.begin(), id.ToString());
    cdi::Device& entry = spec.devices.emplace_back();
    entry.name = std::move(name);
    entry.container_edits = *std::move(device.cdi_edits);
    entry.annotations = std::move(device.cdi_annotations);
    device.cdi_edits.reset();
    device.cdi_annotations.clear();
  }
  if (spec.devices.empty()) return std::nullopt;
  return spec;
}

absl::StatusOr<std::string> ClaimCdiSpecs::Write(const std::string& claim_uid, const cdi::Spec& spec) const {
  absl::StatusOr<std::string> json = cdi::EncodeSpec(spec, cdi::Format::kJson);
  if (!json.ok()) return json.status();
  if (absl::StatusOr<std::string> path = dir_.Write(FileName(claim_uid), spec, cdi::WriteSync::kUnsynced);
      !path.ok()) {
    return path.status();
  }
  return json;
}

bool ClaimCdiSpecs::Exists(const std::string& claim_uid) const { return dir_.Exists(FileName(claim_uid)); }

absl::Status ClaimCdiSpecs::Restore(const std::string& claim_uid, const std::string& spec_json) const {
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(spec_json, cdi::Format::kJson);
  if (!spec.ok()) return spec.status();
  return dir_.Write(FileName(claim_uid), *spec, cdi::WriteSync::kUnsynced).status();
}

absl::StatusOr<bool> ClaimCdiSpecs::Repair(const std::string& claim_uid, const std::string& spec_json) const {
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(spec_json, cdi::Format::kJson);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<bool> matches = dir_.Matches(FileName(claim_uid), *spec);
  if (!matches.ok()) return matches.status();
  if (*matches) return false;
  if (absl::StatusOr<std::string> path = dir_.Write(FileName(claim_uid), *spec); !path.ok()) return path.status();
  return true;
}

absl::Status ClaimCdiSpecs::Remove(const std::string& claim_uid) const { return dir_.Remove(FileName(claim_uid)); }

absl::StatusOr<std::vector<std::string>> ClaimCdiSpecs::RemoveAllExcept(const std::set<std::string>& keep) const {
  return dir_.RemoveTransientSpecsExcept(kind_, keep);
}

}  // namespace dra::kubeletplugin::internal
