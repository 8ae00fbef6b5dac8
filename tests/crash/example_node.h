// What the harnesses that run the example drivers under the kubelet peer
// (crash_harness, load_harness) share: the node without its kubelet (the
// fake API server with the Node, the driver's kubeconfig and dirs), claims
// allocated as the scheduler would, and where the kubelet peer is.
#pragma once

#include <charconv>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim.h"
#include "support/fake_apiserver.h"
#include "support/temp_dir.h"

namespace dra::testing {

// Claims live in this namespace.
inline constexpr char kHarnessNamespace[] = "default";

struct ExampleNode {
  std::unique_ptr<FakeApiServer> server;
  std::shared_ptr<k8s::Client> client;  // admin, unthrottled
};

// Starts the fake API server with the Node kExampleNode and lays out `dir`
// as ExampleDriverArgv expects: kubeconfig, registry/, plugins/, cdi/.
absl::StatusOr<ExampleNode> StartExampleNode(const TempDir& dir);

// Creates ResourceClaim `name` with one request per result and allocates it
// with `results` (on kExampleNode's pool of `driver_name`); returns its ref.
absl::StatusOr<k8s::ClaimRef> CreateAllocatedClaim(k8s::Client& client, const std::string& driver_name,
                                                   const std::string& name,
                                                   std::vector<k8s::DeviceRequestAllocationResult> results);

// What a driver stopped with every claim unprepared must not have left in
// `dir`: CDI specs naming one of `claims`, device metadata files, checkpoint
// entries; one line each.
// `orphans`: UIDs of checkpoint entries left to the Helper's orphan check.
std::vector<std::string> LeftAfterUnprepare(const TempDir& dir, const std::string& driver_name,
                                            const std::vector<k8s::ClaimRef>& claims,
                                            const std::set<std::string>& orphans = {});

// A flag's value as a whole number: false if anything else is in it.
template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// `peer` if not empty, else the kubelet peer build-k8s.sh built (the
// e2e_kubeletpeer fixture).
absl::StatusOr<std::string> KubeletPeerBinary(const std::string& peer);

}  // namespace dra::testing
