/// @file
/// dra::kubeletplugin::ClaimSource: where the Helper gets ResourceClaims from.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "dra/call_context.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/resource_claim.h"

namespace dra::kubeletplugin {

/// Fetches the current ResourceClaim named by a kubelet request. Called
/// concurrently from gRPC threads; implementations must be thread-safe.
/// NotFound and other errors fail only the claim they concern. `ctx` is the
/// kubelet call's (for the orphan check, the check's own): a source that
/// waits (for the API server) gives up by its deadline or when it is
/// cancelled, so that the call answers before the kubelet stops listening,
/// and logs through its logger, which names the call.
class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  /// The current claim with ref's namespace and name (the Helper compares
  /// its UID with ref.uid); NotFound when there is none.
  virtual absl::StatusOr<k8s::ResourceClaim> GetClaim(const k8s::ClaimRef& ref, const CallContext& ctx) = 0;
};

/// Claims held in memory, keyed by namespace and name: for tests, demos and
/// drivers that learn claims some other way.
class InMemoryClaimSource : public ClaimSource {
 public:
  InMemoryClaimSource();
  ~InMemoryClaimSource() override;

  /// Adds or replaces the claim with the same namespace and name.
  void Put(k8s::ResourceClaim claim);
  /// Removes the claim with this namespace and name, if there is one.
  void Remove(const std::string& namespace_, const std::string& name);

  absl::StatusOr<k8s::ResourceClaim> GetClaim(const k8s::ClaimRef& ref, const CallContext& ctx) override;

 private:
  struct Claims;
  const std::unique_ptr<Claims> claims_;
};

}  // namespace dra::kubeletplugin
