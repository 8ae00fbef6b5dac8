/// @file
/// dra::kubeletplugin::ApiClaimSource: the ClaimSource a driver uses in a
/// cluster, reading ResourceClaims from the API server.
///
/// @code
///   auto config = dra::k8s::LoadDefaultConfig();
///   auto client = dra::k8s::Client::Create(*config);
///   options.claim_source = std::make_shared<ApiClaimSource>(*client);
/// @endcode
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim.h"
#include "dra/kubeletplugin/claim_source.h"

namespace dra::kubeletplugin {

/// Each GetClaim is one GET `/apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>`,
/// decoded with the ResourceClaim codec; nothing is cached, so the Helper
/// always checks the claim's current UID and allocation. Errors are the
/// client's, with its code (NotFound for a deleted claim, Unavailable when the
/// server cannot be reached, ...), its message and payloads (see client.h);
/// the client's retries, timeout and rate limit apply, none of them past the
/// context's deadline (a 429 whose Retry-After ends later fails the claim at
/// once, saying so). Thread-safe: the Helper
/// fetches the claims of one kubelet call concurrently, and the client is
/// shared with whatever else the driver uses it for.
class ApiClaimSource : public ClaimSource {
 public:
  /// `client` must not be null.
  explicit ApiClaimSource(std::shared_ptr<k8s::Client> client);

  absl::StatusOr<k8s::ResourceClaim> GetClaim(const k8s::ClaimRef& ref, const CallContext& ctx) override;

 private:
  const std::shared_ptr<k8s::Client> client_;
};

}  // namespace dra::kubeletplugin
