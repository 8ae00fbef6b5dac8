#include <catch2/catch.hpp>

#include "dra/kubeletplugin/claim_source.h"
#include "kubeletplugin/request_names.h"

namespace dra::kubeletplugin {
namespace {

k8s::ResourceClaim Claim(const std::string& ns, const std::string& name, const std::string& uid) {
  k8s::ResourceClaim claim;
  claim.metadata.namespace_ = ns;
  claim.metadata.name = name;
  claim.metadata.uid = uid;
  return claim;
}

TEST_CASE("in-memory claims are found by namespace and name, replaced and removed", "[claim_source]") {
  InMemoryClaimSource source;
  source.Put(Claim("ns", "a", "uid-1"));
  source.Put(Claim("other", "a", "uid-2"));
  CHECK(source.GetClaim({"ns", "a", "uid-1"}, CallContext::Background())->metadata.uid == "uid-1");
  CHECK(source.GetClaim({"other", "a", "ignored"}, CallContext::Background())->metadata.uid == "uid-2");

  source.Put(Claim("ns", "a", "uid-3"));
  CHECK(source.GetClaim({"ns", "a", "uid-1"}, CallContext::Background())->metadata.uid == "uid-3");

  source.Remove("ns", "a");
  absl::StatusOr<k8s::ResourceClaim> missing = source.GetClaim({"ns", "a", "uid-3"}, CallContext::Background());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(missing.status().message() == "resourceclaims.resource.k8s.io \"a\" not found in namespace \"ns\"");
}

TEST_CASE("subrequest suffixes are stripped from request names", "[claim_source]") {
  CHECK(internal::BaseRequestName("gpu/large") == "gpu");
  CHECK(internal::BaseRequestName("gpu") == "gpu");
  CHECK(internal::BaseRequestName("") == "");
}

}  // namespace
}  // namespace dra::kubeletplugin
