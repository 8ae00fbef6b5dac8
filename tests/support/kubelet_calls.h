// One claim at a time through a Helper's DRA socket, as the kubelet sends
// it, for tests that look at each claim's answer.
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dra/k8s/claim_ref.h"
#include "dractl/kubelet_client.h"

namespace dra::testing {

// The claim's error from NodePrepareResources, "" when it was prepared; the
// test fails when the call itself does.
inline std::string Prepare(kubeletclient::DraClient& client, const k8s::ClaimRef& ref,
                           kubeletclient::DraApi api = kubeletclient::DraApi::kV1) {
  auto answer = client.NodePrepareResources(api, std::vector<k8s::ClaimRef>{ref});
  REQUIRE(answer.ok());
  return answer->at(ref.uid).error;
}

// The claim's error from NodeUnprepareResources, "" when it was unprepared.
inline std::string Unprepare(kubeletclient::DraClient& client, const k8s::ClaimRef& ref) {
  auto answer = client.NodeUnprepareResources(kubeletclient::DraApi::kV1, std::vector<k8s::ClaimRef>{ref});
  REQUIRE(answer.ok());
  return answer->at(ref.uid);
}

}  // namespace dra::testing
