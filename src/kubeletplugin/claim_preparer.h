// The version-independent core of NodePrepareResources and
// NodeUnprepareResources: fetch and check claims, consult and update the
// checkpoint, serialize, call the driver, and produce one outcome per claim.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/k8s/claim_ref.h"
#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/log.h"
#include "kubeletplugin/call_serializer.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/metrics.h"

namespace dra::kubeletplugin::internal {

struct ClaimOutcome {
  std::string error;            // empty on success
  std::vector<Device> devices;  // request names without subrequest suffix
};

// Keyed by claim UID, one entry per distinct UID requested.
using ClaimOutcomes = std::map<std::string, ClaimOutcome>;

class ClaimPreparer {
 public:
  // `checkpoint` may be null (checkpointing off). `checkpoint_shared` means
  // another instance (rolling update) writes the same file under the
  // serializer's file lock, so it is reloaded after taking the lock and not
  // trusted before. Everything must outlive this.
  ClaimPreparer(Driver& driver, std::string driver_name, ClaimSource& claims, Checkpoint* checkpoint,
                bool checkpoint_shared, CallSerializer& serializer, const Logger& logger, HelperMetrics& metrics);

  // An error status fails the whole call (the kubelet retries all claims).
  absl::StatusOr<ClaimOutcomes> Prepare(std::span<const k8s::ClaimRef> claims);
  absl::StatusOr<ClaimOutcomes> Unprepare(std::span<const k8s::ClaimRef> claims);

 private:
  // Fetches a claim and checks it is the allocated claim the kubelet means;
  // keeps only this driver's results and configs.
  absl::StatusOr<k8s::ResourceClaim> FetchForPrepare(const k8s::ClaimRef& ref);
  absl::StatusOr<ClaimOutcomes> PrepareClaims(std::span<const k8s::ClaimRef> claims);
  absl::StatusOr<ClaimOutcomes> UnprepareClaims(std::span<const k8s::ClaimRef> claims);
  // Logs failures at level 0 and successes at -v 2, and counts them.
  void Report(HelperMetrics::Method method, std::span<const k8s::ClaimRef> claims,
              const absl::StatusOr<ClaimOutcomes>& outcomes, absl::Duration duration) const;
  absl::Status Commit(std::vector<CheckpointChange> changes);
  // Takes the serialization lock and, for a shared checkpoint, reloads it.
  absl::StatusOr<CallSerializer::Guard> Serialize();

  Driver& driver_;
  const std::string driver_name_;
  ClaimSource& claims_;
  Checkpoint* const checkpoint_;
  const bool checkpoint_shared_;
  CallSerializer& serializer_;
  const Logger& logger_;
  HelperMetrics& metrics_;
};

// "gpu/large" -> "gpu": the kubelet matches devices to requests by name.
std::string BaseRequestName(const std::string& request);

}  // namespace dra::kubeletplugin::internal
