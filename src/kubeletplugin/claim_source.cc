#include "dra/kubeletplugin/claim_source.h"

#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"

namespace dra::kubeletplugin {

struct InMemoryClaimSource::Claims {
  dra::Mutex mu;
  std::map<std::pair<std::string, std::string>, k8s::ResourceClaim> by_name ABSL_GUARDED_BY(mu);
};

InMemoryClaimSource::InMemoryClaimSource() : claims_(std::make_unique<Claims>()) {}
InMemoryClaimSource::~InMemoryClaimSource() = default;

void InMemoryClaimSource::Put(k8s::ResourceClaim claim) {
  dra::MutexLock lock(&claims_->mu);
  auto key = std::make_pair(claim.metadata.namespace_, claim.metadata.name);
  claims_->by_name.insert_or_assign(std::move(key), std::move(claim));
}

void InMemoryClaimSource::Remove(const std::string& namespace_, const std::string& name) {
  dra::MutexLock lock(&claims_->mu);
  claims_->by_name.erase({namespace_, name});
}

absl::StatusOr<k8s::ResourceClaim> InMemoryClaimSource::GetClaim(const k8s::ClaimRef& ref, const CallContext&) {
  dra::MutexLock lock(&claims_->mu);
  auto it = claims_->by_name.find({ref.namespace_, ref.name});
  if (it == claims_->by_name.end()) {
    return absl::NotFoundError(absl::StrCat("resourceclaims.resource.k8s.io \"", ref.name,
                                            "\" not found in namespace \"", ref.namespace_, "\""));
  }
  return it->second;
}

}  // namespace dra::kubeletplugin
