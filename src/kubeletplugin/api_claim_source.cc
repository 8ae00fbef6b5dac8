#include "dra/kubeletplugin/api_claim_source.h"

#include <utility>

#include "absl/status/status.h"

namespace dra::kubeletplugin {

ApiClaimSource::ApiClaimSource(std::shared_ptr<k8s::Client> client) : client_(std::move(client)) {}

absl::StatusOr<k8s::ResourceClaim> ApiClaimSource::GetClaim(const k8s::ClaimRef& ref, const CallContext& ctx) {
  if (client_ == nullptr) return absl::FailedPreconditionError("ApiClaimSource: no API client");
  // GetResourceClaim keeps the client's status and names the claim when the
  // object does not decode.
  if (absl::Status cancelled = ctx.status(); !cancelled.ok()) return cancelled;
  return client_->GetResourceClaim(ref.namespace_, ref.name, ctx.deadline());
}

}  // namespace dra::kubeletplugin
