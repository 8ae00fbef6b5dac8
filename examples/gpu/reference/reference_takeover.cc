#include "reference_takeover.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace gpu {
namespace {

namespace k8s = dra::k8s;
using nlohmann::json;

constexpr char kApiVersion[] = "checkpoint.internal.example.com/v1";

// Removes `path`; a file that is not there is fine.
absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
  return absl::ErrnoToStatus(errno, "remove " + path);
}

}  // namespace

bool ValidClaimUid(const std::string& uid) {
  if (uid.empty() || uid.size() > 128) return false;
  for (char c : uid) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

absl::StatusOr<std::vector<std::string>> ReferenceCheckpointClaims(const std::string& content) {
  const json checkpoint = json::parse(content, nullptr, /*allow_exceptions=*/false);
  if (!checkpoint.is_object()) return absl::InvalidArgumentError("not a JSON object");
  std::vector<std::string> uids;
  if (checkpoint.value("kind", "") == "Checkpoint" && checkpoint.value("apiVersion", "") == kApiVersion) {
    const json claims = checkpoint.value("preparedClaims", json::array());
    if (!claims.is_array()) return absl::InvalidArgumentError("preparedClaims: must be an array");
    for (size_t i = 0; i < claims.size(); ++i) {
      if (!claims[i].is_object() || !claims[i].contains("uid") || !claims[i]["uid"].is_string()) {
        return absl::InvalidArgumentError(absl::StrCat("preparedClaims[", i, "].uid: must be a string"));
      }
      uids.push_back(claims[i]["uid"]);
    }
  } else if (checkpoint.contains("checksum") && checkpoint.contains("v1") && checkpoint["v1"].is_object()) {
    const json claims = checkpoint["v1"].value("preparedClaims", json::object());
    if (!claims.is_object()) return absl::InvalidArgumentError("v1.preparedClaims: must be an object");
    for (const auto& [uid, devices] : claims.items()) uids.push_back(uid);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("not a dra-example-driver checkpoint (kind Checkpoint, apiVersion ",
                                                   kApiVersion, ", or checksum and v1)"));
  }
  for (const std::string& uid : uids) {
    if (!ValidClaimUid(uid)) return absl::InvalidArgumentError(absl::StrCat("claim UID \"", uid, "\": not a UID"));
  }
  return uids;
}

std::string ReferenceCheckpoint(const std::vector<k8s::ClaimRef>& claims) {
  // Field order and indentation as its Go encoder writes them.
  nlohmann::ordered_json checkpoint = {{"kind", "Checkpoint"}, {"apiVersion", kApiVersion}};
  if (!claims.empty()) {
    nlohmann::ordered_json& prepared = checkpoint["preparedClaims"] = nlohmann::ordered_json::array();
    for (const k8s::ClaimRef& claim : claims) prepared.push_back({{"uid", claim.uid}});
  }
  return checkpoint.dump(2) + "\n";
}

std::string ReferenceClaimSpecPath(const std::string& cdi_root, const std::string& driver_name,
                                   const std::string& uid) {
  return absl::StrCat(cdi_root, "/k8s.", driver_name, "-gpu_", uid, ".yaml");
}

std::string ReferenceCommonSpecPath(const std::string& cdi_root, const std::string& driver_name) {
  return ReferenceClaimSpecPath(cdi_root, driver_name, "common");
}

CheckpointAdopter AdoptReferenceCheckpoint(std::shared_ptr<k8s::Client> client, std::string driver_name,
                                           std::string cdi_root, dra::Logger logger) {
  return [client = std::move(client), driver_name = std::move(driver_name), cdi_root = std::move(cdi_root),
          logger = std::move(logger)](const std::string& content) -> absl::StatusOr<std::vector<k8s::ClaimRef>> {
    absl::StatusOr<std::vector<std::string>> uids = ReferenceCheckpointClaims(content);
    if (!uids.ok()) return uids.status();
    std::map<std::string, k8s::ClaimRef> by_uid;
    if (!uids->empty()) {
      absl::StatusOr<k8s::ListResult> claims = client->ListAll(k8s::kResourceClaims, "");
      if (!claims.ok()) {
        return absl::Status(
            claims.status().code(),
            absl::StrCat("list ResourceClaims to adopt dra-example-driver's claims: ", claims.status().message()));
      }
      for (const json& claim : claims->items) {
        const json& metadata = claim["metadata"];
        const std::string uid = metadata.value("uid", "");
        by_uid[uid] = {metadata.value("namespace", ""), metadata.value("name", ""), uid};
      }
    }
    std::vector<k8s::ClaimRef> adopted;
    for (const std::string& uid : *uids) {
      auto found = by_uid.find(uid);
      if (found != by_uid.end()) {
        adopted.push_back(found->second);
        logger.Info("Adopted a claim dra-example-driver prepared", {{"claim", found->second.ToString()}, {"uid", uid}});
        continue;
      }
      const absl::Status removed = RemoveFile(ReferenceClaimSpecPath(cdi_root, driver_name, uid));
      logger.Warning("Not adopted: no ResourceClaim has this UID any more, its devices are free",
                     {{"uid", uid}, {"cdiSpecRemoved", removed.ok() ? "true" : removed.ToString()}});
    }
    if (absl::Status removed = RemoveFile(ReferenceCommonSpecPath(cdi_root, driver_name)); !removed.ok()) {
      logger.Warning("dra-example-driver's node-wide CDI spec not removed", {{"err", removed.ToString()}});
    }
    return adopted;
  };
}

void ShareNodeWithReference(dra::kubeletplugin::Options& options, const std::string& driver_name,
                            const dra::Logger& logger) {
  options.adopt_checkpoint = AdoptReferenceCheckpoint(options.kube_client, driver_name, options.cdi.dir.path, logger);
  options.encode_foreign_checkpoint = ReferenceCheckpoint;
  options.cdi.vendor = "k8s." + driver_name;
  options.cdi.class_name = "gpu";
  options.cdi.claim_format = dra::cdi::Format::kYaml;
}

}  // namespace gpu
