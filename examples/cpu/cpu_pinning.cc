#include "cpu_pinning.h"

#include <algorithm>

#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "cpuset.h"

namespace cpu {

std::set<std::string> ClaimsInEnvironment(const std::vector<std::string>& env) {
  std::set<std::string> uids;
  for (absl::string_view entry : env) {
    const size_t eq = entry.find('=');
    absl::string_view name = entry.substr(0, eq);
    if (!absl::ConsumePrefix(&name, "DRA_CPUSET_") && !absl::ConsumePrefix(&name, "DRA_MEMS_")) continue;
    // The variable's name is the UID with '-' as '_'; a UID has no '_'.
    if (!name.empty()) uids.insert(absl::StrReplaceAll(name, {{"_", "-"}}));
  }
  return uids;
}

Placement PlaceContainer(const std::set<std::string>& container_claims,
                         const std::map<std::string, ClaimPlacement>& claims, const std::vector<int>& online) {
  std::vector<int> own_cpus, own_mems;
  for (const std::string& uid : container_claims) {
    auto it = claims.find(uid);
    if (it == claims.end()) continue;
    own_cpus.insert(own_cpus.end(), it->second.cpus.begin(), it->second.cpus.end());
    own_mems.insert(own_mems.end(), it->second.mems.begin(), it->second.mems.end());
  }
  Placement placement;
  placement.mems = own_mems.empty() ? "" : FormatCpuList(own_mems);
  if (!own_cpus.empty()) {
    placement.cpus = FormatCpuList(own_cpus);
    return placement;
  }
  std::set<int> held;
  for (const auto& [uid, claim] : claims) held.insert(claim.cpus.begin(), claim.cpus.end());
  std::vector<int> shared;
  std::copy_if(online.begin(), online.end(), std::back_inserter(shared), [&](int id) { return !held.contains(id); });
  placement.cpus = FormatCpuList(shared.empty() ? online : shared);
  return placement;
}

}  // namespace cpu
