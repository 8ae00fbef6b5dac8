// Sharing a node with dra-example-driver, the reference driver this example
// stands in for, in both directions and without draining it. Taking over,
// the reference's prepared claims are adopted (Options::adopt_checkpoint).
// Rolled back, the reference finds its own checkpoint
// (<plugins dir>/gpu.example.com/checkpoint.json), which the Helper keeps
// listing the example's claims (Options::encode_foreign_checkpoint), and
// per-claim CDI specs named as its own, which its unprepare removes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/client.h"
#include "dra/kubeletplugin/options.h"
#include "dra/log.h"

namespace gpu {

// The UIDs of the claims a dra-example-driver checkpoint records as
// prepared, from either of its formats: v0.3.0 and later
//   {"kind": "Checkpoint", "apiVersion": "checkpoint.internal.example.com/v1",
//    "preparedClaims": [{"uid": "..."}, ...]}
// and v0.2.x
//   {"checksum": N, "v1": {"preparedClaims": {"<uid>": {...}, ...}}}.
// InvalidArgument naming what is wrong when it is neither, or a UID is not
// one (ValidClaimUid).
absl::StatusOr<std::vector<std::string>> ReferenceCheckpointClaims(const std::string& content);

// Whether `uid` can be a Kubernetes UID, and so part of a file name:
// 1 to 128 lower-case letters, digits and '-'.
bool ValidClaimUid(const std::string& uid);

// dra-example-driver's checkpoint (v0.3.0 and later) listing `claims` as
// prepared, as it writes it.
std::string ReferenceCheckpoint(const std::vector<dra::k8s::ClaimRef>& claims);

// The CDI spec files dra-example-driver writes in `cdi_root`: one per claim,
// k8s.<driver>-gpu_<uid>.yaml, and the node-wide k8s.<driver>-gpu_common.yaml.
std::string ReferenceClaimSpecPath(const std::string& cdi_root, const std::string& driver_name, const std::string& uid);
std::string ReferenceCommonSpecPath(const std::string& cdi_root, const std::string& driver_name);

// Options::adopt_checkpoint for the GPU driver: the claims of a
// dra-example-driver checkpoint, with the namespace and name that one list of
// the cluster's ResourceClaims through `client` gives them. Each adopted
// claim is logged; a claim whose ResourceClaim is gone is logged as not
// adopted and its CDI spec removed (nothing will unprepare it). The
// reference's node-wide spec is removed too.
using CheckpointAdopter = std::function<absl::StatusOr<std::vector<dra::k8s::ClaimRef>>(const std::string&)>;
CheckpointAdopter AdoptReferenceCheckpoint(std::shared_ptr<dra::k8s::Client> client, std::string driver_name,
                                           std::string cdi_root, dra::Logger logger);

// Makes the Helper share the node with dra-example-driver both ways: adopts
// its checkpoint (AdoptReferenceCheckpoint, through options.kube_client),
// keeps one it reads (ReferenceCheckpoint), and writes each claim's CDI spec
// as it does: kind k8s.<driver>/gpu, YAML, so ReferenceClaimSpecPath.
void ShareNodeWithReference(dra::kubeletplugin::Options& options, const std::string& driver_name,
                            const dra::Logger& logger);

}  // namespace gpu
