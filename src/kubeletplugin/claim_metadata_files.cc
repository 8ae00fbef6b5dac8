#include "kubeletplugin/claim_metadata_files.h"

#include <filesystem>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dra/cdi/codec.h"
#include "dra/k8s/names.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/k8s/resource_slice_json.h"
#include "fileutil/atomic_file.h"
#include "fileutil/directories.h"
#include "kubeletplugin/claim_uid.h"
#include "kubeletplugin/request_names.h"

namespace dra::kubeletplugin::internal {
namespace {

// As in the Go helper (metadata.go) and its consumers (api/metadata).
constexpr char kMetadataSubDir[] = "dra-device-metadata";
constexpr char kContainerDir[] = "/var/run/kubernetes.io/dra-device-attributes";
constexpr char kPodClaimNameAnnotation[] = "resource.kubernetes.io/pod-claim-name";
constexpr mode_t kMetadataFileMode = 0644;  // read by the container's user
constexpr mode_t kMetadataDirMode = 0755;

absl::Status CheckPathPart(absl::string_view what, const std::string& value, std::vector<std::string> problems) {
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("device metadata: ", what, " \"", value,
                                                 "\" cannot be a file name: ", absl::StrJoin(problems, "; ")));
}

absl::Status CheckUid(const std::string& uid) { return CheckPathPart("claim UID", uid, ClaimUidProblems(uid)); }

}  // namespace

ClaimMetadataFiles::ClaimMetadataFiles(std::string driver_name, std::string plugin_data_dir,
                                       cdi::SpecDirOptions cdi_dir, std::vector<std::string> versions)
    : driver_name_(std::move(driver_name)),
      metadata_root_(plugin_data_dir + "/" + kMetadataSubDir),
      cdi_dir_(std::move(cdi_dir)),
      versions_(std::move(versions)) {}

absl::Status ClaimMetadataFiles::Check(const std::vector<std::string>& versions) {
  if (versions.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.device_metadata.versions: Required value: name the versions "
                     "to write, at least ",
                     kDeviceMetadataV1beta1));
  }
  bool latest = false;
  for (const std::string& version : versions) {
    if (version == kDeviceMetadataV1beta1) {
      latest = true;
    } else if (version != kDeviceMetadataV1alpha1) {
      return absl::InvalidArgumentError(absl::StrCat("options.device_metadata.versions: Unsupported value: \"", version,
                                                     "\": supported values: \"", kDeviceMetadataV1beta1, "\", \"",
                                                     kDeviceMetadataV1alpha1, "\""));
    }
  }
  if (!latest) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.device_metadata.versions: must include the latest version ", kDeviceMetadataV1beta1));
  }
  return absl::OkStatus();
}

std::string ClaimMetadataFiles::ClaimDir(const std::string& ns, const std::string& name) const {
  return absl::StrCat(metadata_root_, "/", ns, "_", name);
}

std::string ClaimMetadataFiles::MetadataPath(const std::string& ns, const std::string& name,
                                             const std::string& base_request) const {
  return absl::StrCat(ClaimDir(ns, name), "/", base_request, "/metadata.json");
}

absl::StatusOr<MetadataFiles> ClaimMetadataFiles::Write(const k8s::ResourceClaim& claim,
                                                        std::vector<Device>& devices) const {
  const k8s::ObjectMeta& meta = claim.metadata;
  if (absl::Status s = CheckPathPart("claim namespace", meta.namespace_, k8s::IsDns1123Label(meta.namespace_)); !s.ok())
    return s;
  if (absl::Status s = CheckPathPart("claim name", meta.name, k8s::IsDns1123Subdomain(meta.name)); !s.ok()) return s;
  if (absl::Status s = CheckUid(meta.uid); !s.ok()) return s;
  std::optional<std::string> pod_claim_name;
  if (auto it = meta.annotations.find(kPodClaimNameAnnotation); it != meta.annotations.end() && !it->second.empty()) {
    pod_claim_name = it->second;
    if (absl::Status s = CheckPathPart("pod claim name", it->second, k8s::IsDns1123Label(it->second)); !s.ok())
      return s;
  }

  // Base request -> (the request as allocated, the devices serving it).
  std::map<std::string, std::pair<std::string, std::vector<size_t>>> requests;
  for (size_t i = 0; i < devices.size(); ++i) {
    for (const std::string& request : devices[i].requests) {
      auto& [reference, indices] = requests[BaseRequestName(request)];
      reference = request;
      indices.push_back(i);
    }
  }

  MetadataFiles files;
  for (const auto& [base, request] : requests) {
    if (absl::Status s = CheckPathPart("request name", base, k8s::IsDns1123Label(base)); !s.ok()) return s;
    const auto& [reference, indices] = request;
    std::vector<const Device*> serving;
    for (size_t i : indices) serving.push_back(&devices[i]);
    const std::string stream = Stream(k8s::ClaimRefOf(claim), pod_claim_name, reference, serving, 1);

    const std::string path = MetadataPath(meta.namespace_, meta.name, base);
    if (absl::Status s = WriteFile(path, stream); !s.ok()) return s;
    files[path] = stream;

    const std::string cdi_name = absl::StrCat(meta.uid, "_", base);
    cdi::Spec spec;
    spec.kind = driver_name_ + "/metadata";
    cdi::Device& cdi_device = spec.devices.emplace_back();
    cdi_device.name = cdi_name;
    cdi::Mount& mount = cdi_device.container_edits.mounts.emplace_back();
    mount.host_path = path;
    mount.container_path = pod_claim_name.has_value()
                               ? absl::StrCat(kContainerDir, "/resourceclaimtemplates/", *pod_claim_name, "/", base,
                                              "/", driver_name_, "-metadata.json")
                               : absl::StrCat(kContainerDir, "/resourceclaims/", meta.name, "/", base, "/",
                                              driver_name_, "-metadata.json");
    mount.options = {"ro", "bind"};
    const std::string spec_file = absl::StrCat(driver_name_, "_metadata_", meta.uid, "_", base);
    absl::StatusOr<std::string> encoded = cdi::EncodeSpec(spec, cdi_dir_.options().format);
    if (!encoded.ok()) return encoded.status();
    absl::StatusOr<std::string> written = cdi_dir_.Write(spec_file, spec);
    if (!written.ok()) return written.status();
    files[*written] = *std::move(encoded);

    const std::string id = absl::StrCat(driver_name_, "/metadata=", cdi_name);
    for (size_t i : indices) devices[i].cdi_device_ids.push_back(id);
  }
  for (Device& device : devices) device.metadata.reset();
  return files;
}

bool ClaimMetadataFiles::AllExist(const MetadataFiles& files) const {
  std::error_code error;
  for (const auto& [path, content] : files) {
    if (!std::filesystem::exists(path, error)) return false;
  }
  return true;
}

absl::Status ClaimMetadataFiles::Restore(const MetadataFiles& files) const {
  std::error_code error;
  for (const auto& [path, content] : files) {
    if (std::filesystem::exists(path, error)) continue;
    if (absl::Status s = WriteFile(path, content); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ClaimMetadataFiles::Overwrite(const MetadataFiles& files) const {
  for (const auto& [path, content] : files) {
    if (absl::Status s = WriteFile(path, content); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ClaimMetadataFiles::Repair(const MetadataFiles& files) const {
  bool rewritten = false;
  for (const auto& [path, content] : files) {
    absl::StatusOr<std::string> current = dra::internal::ReadWholeFile(path);
    if (current.ok() && *current == content) continue;
    if (!current.ok() && !absl::IsNotFound(current.status())) return current.status();
    if (absl::Status s = WriteFile(path, content); !s.ok()) return s;
    rewritten = true;
  }
  return rewritten;
}

absl::Status ClaimMetadataFiles::WriteFile(const std::string& path, const std::string& content) const {
  const bool metadata = absl::StartsWith(path, metadata_root_);
  if (metadata) {
    if (absl::Status s = dra::internal::MakeDirectories(std::filesystem::path(path).parent_path(), kMetadataDirMode);
        !s.ok())
      return s;
  }
  return dra::internal::WriteFileAtomically(path, content, metadata ? kMetadataFileMode : cdi_dir_.options().file_mode);
}

std::string ClaimMetadataFiles::Stream(const k8s::ClaimRef& claim, const std::optional<std::string>& pod_claim_name,
                                       const std::string& request, const std::vector<const Device*>& devices,
                                       int64_t generation) const {
  nlohmann::ordered_json listed = nlohmann::ordered_json::array();
  for (const Device* device : devices) {
    nlohmann::ordered_json entry = {
        {"driver", driver_name_}, {"pool", device->pool_name}, {"name", device->device_name}};
    if (device->metadata.has_value()) {
      if (!device->metadata->attributes.empty()) {
        nlohmann::ordered_json attributes = nlohmann::ordered_json::object();
        for (const auto& [name, value] : device->metadata->attributes) attributes[name] = k8s::ToJson(value);
        entry["attributes"] = std::move(attributes);
      }
      if (device->metadata->network_data.has_value())
        entry["networkData"] = k8s::ToJson(*device->metadata->network_data);
    }
    listed.push_back(std::move(entry));
  }
  std::string stream;
  for (const std::string& version : versions_) {
    nlohmann::ordered_json object = {
        {"kind", "DeviceMetadata"},
        {"apiVersion", version},
        {"metadata",
         {{"name", claim.name}, {"namespace", claim.namespace_}, {"uid", claim.uid}, {"generation", generation}}},
    };
    if (pod_claim_name.has_value()) object["podClaimName"] = *pod_claim_name;
    object["requests"] = nlohmann::ordered_json::array({{{"name", request}, {"devices", listed}}});
    absl::StrAppend(&stream, object.dump(2), "\n");
  }
  return stream;
}

absl::StatusOr<MetadataFiles> ClaimMetadataFiles::NextGeneration(const k8s::ClaimRef& claim, const std::string& request,
                                                                 const std::vector<Device>& devices,
                                                                 const MetadataFiles& recorded) const {
  const std::string base = BaseRequestName(request);
  const std::string where = absl::StrCat("request \"", base, "\" of claim ", claim.ToString());
  if (!k8s::IsDns1123Label(claim.namespace_).empty() || !k8s::IsDns1123Subdomain(claim.name).empty() ||
      !k8s::IsDns1123Label(base).empty()) {
    return absl::NotFoundError(absl::StrCat("device metadata: ", where, " has no metadata file"));
  }
  const std::string path = MetadataPath(claim.namespace_, claim.name, base);
  std::string current;
  if (auto it = recorded.find(path); it != recorded.end()) {
    current = it->second;
  } else {
    absl::StatusOr<std::string> read = dra::internal::ReadWholeFile(path);
    if (absl::IsNotFound(read.status())) {
      return absl::NotFoundError(absl::StrCat("device metadata: ", where, " has no metadata file"));
    }
    if (!read.ok()) return read.status();
    current = *std::move(read);
  }

  // The stream's first object says what every object says.
  nlohmann::ordered_json first;
  std::istringstream in(current);
  try {
    in >> first;
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat("device metadata: ", path, ": ", e.what()));
  }
  const nlohmann::ordered_json& meta = first.value("metadata", nlohmann::ordered_json::object());
  const nlohmann::ordered_json& requests = first.value("requests", nlohmann::ordered_json::array());
  if (meta.value("uid", "") != claim.uid) {
    return absl::NotFoundError(absl::StrCat("device metadata: ", where, " has no metadata file (", path,
                                            " is of claim UID ", meta.value("uid", ""), ")"));
  }
  if (requests.size() != 1 || !meta.contains("generation") || !meta["generation"].is_number_integer()) {
    return absl::DataLossError(absl::StrCat("device metadata: ", path, " is not a file the Helper wrote"));
  }
  std::optional<std::string> pod_claim_name;
  if (first.contains("podClaimName")) pod_claim_name = first.value("podClaimName", "");

  // The devices in the order the prepare result gave them.
  std::map<std::pair<std::string, std::string>, const Device*> given;
  for (const Device& device : devices) {
    if (!given.emplace(std::pair(device.pool_name, device.device_name), &device).second) {
      return absl::InvalidArgumentError(absl::StrCat("device metadata: devices[]: device ", device.pool_name, "/",
                                                     device.device_name, " is listed twice for ", where));
    }
  }
  std::vector<const Device*> ordered;
  std::vector<std::string> prepared;
  for (const nlohmann::ordered_json& listed : requests[0].value("devices", nlohmann::ordered_json::array())) {
    const std::string pool = listed.value("pool", "");
    const std::string name = listed.value("name", "");
    prepared.push_back(absl::StrCat(pool, "/", name));
    if (auto it = given.find({pool, name}); it != given.end()) {
      ordered.push_back(it->second);
      given.erase(it);
    }
  }
  if (!given.empty() || ordered.size() != prepared.size()) {
    const std::string wrong = given.empty()
                                  ? "lacks a device"
                                  : absl::StrCat("has device ", given.begin()->first.first, "/",
                                                 given.begin()->first.second, ", which it was not prepared with");
    return absl::InvalidArgumentError(absl::StrCat("device metadata: devices[]: the update of ", where, " ", wrong,
                                                   ": it must list the devices of the prepare result (",
                                                   absl::StrJoin(prepared, ", "), ")"));
  }
  return MetadataFiles{{path, Stream(claim, pod_claim_name, requests[0].value("name", base), ordered,
                                     meta["generation"].get<int64_t>() + 1)}};
}

absl::Status ClaimMetadataFiles::Remove(const k8s::ClaimRef& claim) const {
  std::error_code error;
  // Only names Write could have made: anything else was never written.
  if (k8s::IsDns1123Label(claim.namespace_).empty() && k8s::IsDns1123Subdomain(claim.name).empty()) {
    std::filesystem::remove_all(ClaimDir(claim.namespace_, claim.name), error);
    if (error)
      return absl::InternalError(
          absl::StrCat("remove device metadata of claim ", claim.ToString(), ": ", error.message()));
  }
  if (!CheckUid(claim.uid).ok()) return absl::OkStatus();
  const std::string prefix = absl::StrCat(driver_name_, "_metadata_", claim.uid, "_");
  for (std::filesystem::directory_iterator it(cdi_dir_.options().path, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename();
    if (!absl::StartsWith(name, prefix)) continue;
    if (!std::filesystem::remove(it->path(), error) && error) break;
  }
  if (error && error != std::errc::no_such_file_or_directory) {
    return absl::InternalError(
        absl::StrCat("remove device metadata CDI specs of claim ", claim.ToString(), ": ", error.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ClaimMetadataFiles::RemoveAllExcept(
    const std::vector<k8s::ClaimRef>& keep) const {
  std::set<std::string> keep_dirs;
  std::set<std::string> keep_uids;
  for (const k8s::ClaimRef& ref : keep) {
    keep_dirs.insert(ref.namespace_ + "_" + ref.name);
    keep_uids.insert(ref.uid);
  }
  std::vector<std::string> removed;
  std::error_code error;
  auto fail = [&](const std::string& what) {
    return absl::InternalError(absl::StrCat("remove orphaned device metadata: ", what, ": ", error.message()));
  };
  for (std::filesystem::directory_iterator it(metadata_root_, error), end; !error && it != end; it.increment(error)) {
    if (keep_dirs.count(it->path().filename()) > 0) continue;
    std::filesystem::remove_all(it->path(), error);
    if (error) return fail(it->path());
    removed.push_back(it->path());
  }
  if (error && error != std::errc::no_such_file_or_directory) return fail(metadata_root_);
  error.clear();
  // <driver>_metadata_<uid>_<request>.<ext>: the UID has no '_'. A temp
  // file a crash left while writing one goes with it.
  const std::string prefix = driver_name_ + "_metadata_";
  for (std::filesystem::directory_iterator it(cdi_dir_.options().path, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename();
    const std::string_view target = dra::internal::AtomicFileTarget(name);
    if (!target.starts_with(prefix)) continue;
    const std::string rest(target.substr(prefix.size()));
    if (keep_uids.count(rest.substr(0, rest.find('_'))) > 0) continue;
    if (!std::filesystem::remove(it->path(), error) && error) return fail(it->path());
    removed.push_back(it->path());
  }
  if (error && error != std::errc::no_such_file_or_directory) return fail(cdi_dir_.options().path);
  return removed;
}

}  // namespace dra::kubeletplugin::internal
