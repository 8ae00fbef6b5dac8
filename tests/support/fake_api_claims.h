// The fake API server (tests/support/fakeapiserver) with claims in it, for
// tests that read and write ResourceClaims over real HTTPS: start it, make
// an admin client, create claims and allocate them as the scheduler would.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim_json.h"
#include "support/claim_object.h"
#include "support/fake_apiserver.h"
#include "support/test_driver.h"

namespace dra::testing {

// Claims live in this namespace.
inline constexpr char kClaimNamespace[] = "ns";

inline std::unique_ptr<FakeApiServer> StartServer() {
  FakeApiServer::Options options;
  options.extra_args.push_back("--quiet");
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(options);
  INFO(server.status().ToString());
  REQUIRE(server.ok());
  return *std::move(server);
}

// An admin client's config; no client-side rate limit unless a test wants
// the default one.
inline k8s::ClientConfig AdminClientConfig(const FakeApiServer& server, bool default_rate_limit = false,
                                           int max_retries = 5) {
  k8s::ClientConfig config;
  config.server = server.url();
  config.ca_file = server.ca_file();
  config.bearer_token = server.admin_token();
  if (!default_rate_limit) config.qps = 0;
  config.timeout = absl::Seconds(20);
  config.max_retries = max_retries;
  return config;
}

inline std::shared_ptr<k8s::Client> MakeClient(const k8s::ClientConfig& config) {
  absl::StatusOr<std::shared_ptr<k8s::Client>> client = k8s::Client::Create(config);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return *client;
}

// An admin client (AdminClientConfig).
inline std::shared_ptr<k8s::Client> MakeClient(const FakeApiServer& server, bool default_rate_limit = false,
                                               int max_retries = 5) {
  return MakeClient(AdminClientConfig(server, default_rate_limit, max_retries));
}

// Creates the claim (no status: the server resets it) and returns it.
inline k8s::ResourceClaim CreateClaim(k8s::Client& client, const std::string& name) {
  absl::StatusOr<nlohmann::json> created =
      client.Create(k8s::kResourceClaims, kClaimNamespace, NewClaimObject(kClaimNamespace, name));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  absl::StatusOr<k8s::ResourceClaim> claim = k8s::ResourceClaimFromJson(*created);
  INFO(claim.status().ToString());
  REQUIRE(claim.ok());
  return *claim;
}

// Creates the claim and allocates it as the scheduler would (PUT .../status):
// `devices` of TestDriver's driver (pool "pool-a") plus one device of
// another driver.
inline k8s::ClaimRef CreateAllocatedClaim(k8s::Client& client, const std::string& name,
                                          const std::vector<std::string>& devices = {"gpu-0"}) {
  k8s::ResourceClaim claim = CreateClaim(client, name);
  claim.status.allocation = AllocatedClaim(kClaimNamespace, name, claim.metadata.uid, devices).status.allocation;
  absl::StatusOr<k8s::ResourceClaim> allocated = client.UpdateResourceClaimStatus(claim);
  INFO(allocated.status().ToString());
  REQUIRE(allocated.ok());
  REQUIRE(allocated->status.allocation.has_value());
  return k8s::ClaimRef{kClaimNamespace, name, claim.metadata.uid};
}

}  // namespace dra::testing
