#include "dra/kubeletplugin/claim_source.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dra/mutex.h"

namespace dra::kubeletplugin {

void InMemoryClaimSource::Put(k8s::ResourceClaim claim) {
  dra::MutexLock lock(&mu_);
  auto key = std::make_pair(claim.metadata.namespace_, claim.metadata.name);
  claims_.insert_or_assign(std::move(key), std::move(claim));
}

void InMemoryClaimSource::Remove(const std::string& namespace_, const std::string& name) {
  dra::MutexLock lock(&mu_);
  claims_.erase({namespace_, name});
}

absl::StatusOr<k8s::ResourceClaim> InMemoryClaimSource::GetClaim(const k8s::ClaimRef& ref, const CallContext&) {
  dra::MutexLock lock(&mu_);
  auto it = claims_.find({ref.namespace_, ref.name});
  if (it == claims_.end()) {
    return absl::NotFoundError(absl::StrCat("resourceclaims.resource.k8s.io \"", ref.name,
                                            "\" not found in namespace \"", ref.namespace_, "\""));
  }
  return it->second;
}

}  // namespace dra::kubeletplugin
