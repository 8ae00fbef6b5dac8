#include "kubeletplugin/claim_cdi_specs.h"

#include <cerrno>
#include <map>
#include <utility>

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dra/cdi/codec.h"
#include "dra/cdi/validation.h"
#include "fileutil/atomic_file.h"

namespace dra::kubeletplugin::internal {
namespace {

cdi::SpecDirOptions WithFormat(cdi::SpecDirOptions options, cdi::Format format) {
  options.format = format;
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClaimCdiSpecs>> ClaimCdiSpecs::Create(cdi::Kind kind, cdi::SpecDirOptions dir,
                                                                     cdi::Format claim_format,
                                                                     std::vector<cdi::Spec> node_specs) {
  std::vector<std::pair<std::string, cdi::Spec>> named;
  for (size_t i = 0; i < node_specs.size(); ++i) {
    const std::string field = absl::StrCat("options.cdi.node_specs[", i, "]");
    if (absl::Status status = cdi::ValidateSpec(node_specs[i]); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", status.message()));
    }
    absl::StatusOr<cdi::Kind> node_kind = cdi::ParseKind(node_specs[i].kind);
    if (!node_kind.ok())
      return absl::InvalidArgumentError(absl::StrCat(field, ".kind: ", node_kind.status().message()));
    if (node_kind->ToString() == kind.ToString()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".kind: \"", kind.ToString(),
                                                     "\" is the per-claim specs' kind (options.cdi.class_name)"));
    }
    named.emplace_back(cdi::SpecFileName(*node_kind), std::move(node_specs[i]));
  }
  return std::unique_ptr<ClaimCdiSpecs>(
      new ClaimCdiSpecs(std::move(kind), std::move(dir), claim_format, std::move(named)));
}

ClaimCdiSpecs::ClaimCdiSpecs(cdi::Kind kind, cdi::SpecDirOptions dir, cdi::Format claim_format,
                             std::vector<std::pair<std::string, cdi::Spec>> node_specs)
    : kind_(std::move(kind)),
      dir_(dir),
      claim_dir_(WithFormat(dir, claim_format)),
      json_dir_(WithFormat(dir, cdi::Format::kJson)),
      yaml_dir_(WithFormat(dir, cdi::Format::kYaml)),
      node_specs_(std::move(node_specs)) {}

absl::Status ClaimCdiSpecs::WriteNodeSpecs(bool only_missing) const {
  const cdi::SpecDir& other_format = dir_.options().format == cdi::Format::kJson ? yaml_dir_ : json_dir_;
  for (const auto& [name, spec] : node_specs_) {
    if (only_missing && dir_.Exists(name)) continue;
    if (absl::StatusOr<std::string> path = dir_.Write(name, spec); !path.ok()) {
      return absl::Status(path.status().code(),
                          absl::StrCat("write node-wide CDI spec ", dir_.PathOf(name), ": ", path.status().message()));
    }
    // The same spec in the other format, as an earlier version of the
    // driver wrote it, would define its devices twice: runtimes then
    // resolve none of them.
    const std::string old = other_format.PathOf(name);
    if (::unlink(old.c_str()) != 0 && errno != ENOENT) {
      return absl::ErrnoToStatus(errno,
                                 absl::StrCat("remove node-wide CDI spec ", old, " (now ", dir_.PathOf(name), ")"));
    }
  }
  return absl::OkStatus();
}

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
  if (absl::StatusOr<std::string> path = claim_dir_.Write(FileName(claim_uid), spec, cdi::WriteSync::kUnsynced);
      !path.ok()) {
    return path.status();
  }
  return json;
}

ClaimCdiSpecs::Location ClaimCdiSpecs::LocationOf(const std::string& claim_uid, const cdi::Spec& spec) const {
  absl::StatusOr<cdi::Kind> kind = cdi::ParseKind(spec.kind);
  if (!kind.ok() || kind->ToString() == kind_.ToString()) return {&claim_dir_, FileName(claim_uid)};
  std::string name = cdi::TransientSpecFileName(*kind, claim_uid);
  const cdi::SpecDir* dir = yaml_dir_.Exists(name) ? &yaml_dir_ : &json_dir_;
  return {dir, std::move(name)};
}

absl::StatusOr<bool> ClaimCdiSpecs::Exists(const std::string& claim_uid, const std::string& spec_json) const {
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(spec_json, cdi::Format::kJson);
  if (!spec.ok()) return spec.status();
  const Location location = LocationOf(claim_uid, *spec);
  return location.dir->Exists(location.name);
}

absl::Status ClaimCdiSpecs::Restore(const std::string& claim_uid, const std::string& spec_json) const {
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(spec_json, cdi::Format::kJson);
  if (!spec.ok()) return spec.status();
  const Location location = LocationOf(claim_uid, *spec);
  return location.dir->Write(location.name, *spec, cdi::WriteSync::kUnsynced).status();
}

absl::StatusOr<bool> ClaimCdiSpecs::Repair(const std::string& claim_uid, const std::string& spec_json) const {
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(spec_json, cdi::Format::kJson);
  if (!spec.ok()) return spec.status();
  const Location location = LocationOf(claim_uid, *spec);
  absl::StatusOr<bool> matches = location.dir->Matches(location.name, *spec);
  if (!matches.ok()) return matches.status();
  if (*matches) return false;
  if (absl::StatusOr<std::string> path = location.dir->Write(location.name, *spec); !path.ok()) return path.status();
  return true;
}

absl::Status ClaimCdiSpecs::Remove(const std::string& claim_uid, const std::string& spec_json) const {
  if (spec_json.empty()) return dir_.Remove(FileName(claim_uid));
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(spec_json, cdi::Format::kJson);
  if (!spec.ok()) return spec.status();
  return dir_.Remove(LocationOf(claim_uid, *spec).name);  // either format
}

absl::StatusOr<std::map<std::string, std::vector<std::string>>> ClaimCdiSpecs::ClaimsOnDisk(
    const std::set<std::string>& known) const {
  absl::StatusOr<std::set<std::string>> ids = dir_.ListTransientIds(kind_);
  if (!ids.ok()) return ids.status();
  std::map<std::string, std::vector<std::string>> claims;
  for (const std::string& uid : *ids) {
    if (known.contains(uid)) continue;
    std::vector<std::string>& devices = claims[uid];
    for (const cdi::SpecDir* dir : {&json_dir_, &yaml_dir_}) {
      absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(dir->PathOf(FileName(uid)));
      if (!content.ok()) continue;
      absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(*content, cdi::Format::kYaml);  // YAML reads JSON too
      if (!spec.ok()) continue;
      for (const cdi::Device& device : spec->devices) {
        if (absl::StartsWith(device.name, uid + "-")) devices.push_back(device.name.substr(uid.size() + 1));
      }
    }
  }
  return claims;
}

absl::StatusOr<std::vector<std::string>> ClaimCdiSpecs::RemoveAllExcept(const std::set<std::string>& keep) const {
  return dir_.RemoveTransientSpecsExcept(kind_, keep);
}

}  // namespace dra::kubeletplugin::internal
