// The version-independent core of NodePrepareResources and
// NodeUnprepareResources: fetch and check claims, consult and update the
// checkpoint, serialize, call the driver, and produce one outcome per claim.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/work_pool.h"
#include "dra/k8s/claim_ref.h"
#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/options.h"
#include "kubeletplugin/call_serializer.h"
#include "kubeletplugin/call_tracker.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/claim_files.h"
#include "kubeletplugin/held_device.h"
#include "kubeletplugin/metrics.h"

namespace dra::kubeletplugin::internal {

// At most this many claims of one NodePrepareResources call are fetched at
// once, by the calling thread and the Helper's WorkPool (which has
// kMaxConcurrentFetches - 1 threads, started on demand). A pod
// rarely has more than a few claims; the bound is for the odd call with
// dozens. 64 because the API client (k8s::Client) multiplexes concurrent
// requests as HTTP/2 streams on one TLS connection, so a 64-claim call costs
// about one round trip and no extra handshakes; and it is within the client's
// default burst (64), so one call's fetches are not paced by the client's own
// rate limiter.
inline constexpr size_t kMaxConcurrentFetches = 64;

struct ClaimOutcome {
  std::string error;            // empty on success
  std::vector<Device> devices;  // request names without subrequest suffix
};

// Keyed by claim UID, one entry per distinct UID requested.
using ClaimOutcomes = std::map<std::string, ClaimOutcome>;

class ClaimPreparer {
 public:
  // `checkpoint` is Checkpoint::Off() when checkpointing is off
  // (Options::checkpoint): then every prepare calls the driver, and there
  // are no orphans. `checkpoint_shared` means another instance (rolling update) writes the
  // same file under the serializer's file lock, so it is reloaded after
  // taking the lock and not trusted before. Everything must outlive this.
  ClaimPreparer(Driver& driver, std::string driver_name, ClaimSource& claims, Checkpoint& checkpoint,
                bool checkpoint_shared, const ClaimFiles& files, CallSerializer& serializer, CallTracker& calls,
                HelperMetrics& metrics, WorkPool& work_pool, DeviceExclusivityOptions exclusivity);

  // An error status fails the whole call (the kubelet retries all claims).
  using Done = absl::AnyInvocable<void(absl::StatusOr<ClaimOutcomes>) &&>;

  // Registers a kubelet call ("NodePrepareResources") with the CallTracker,
  // which gives the driver its CallContext. `deadline`: the caller's, or
  // InfiniteFuture.
  CallTracker::Call BeginCall(const std::string& method, absl::Time deadline);

  // Each runs its call to the end and then `done`, exactly once: the part
  // before serialization (claim references checked, checkpoint answers,
  // claim fetches) on this thread, the serialized part on this thread or,
  // when it has to wait for the call before it, on an Executor thread. No
  // thread waits for the serializer. A call that is cancelled while it
  // waits fails without calling the driver. Prepare fetches the claims it
  // needs concurrently (at most kMaxConcurrentFetches at once);
  // ClaimSource is thread-safe.
  void Prepare(std::vector<k8s::ClaimRef> claims, CallTracker::Call call, Done done);
  void Unprepare(std::vector<k8s::ClaimRef> claims, CallTracker::Call call, Done done);

  // The same, returning when done (for the Helper's own callers, tests and
  // benchmarks; never from inside a serialized section).
  absl::StatusOr<ClaimOutcomes> Prepare(std::span<const k8s::ClaimRef> claims,
                                        absl::Time deadline = absl::InfiniteFuture());
  absl::StatusOr<ClaimOutcomes> Unprepare(std::span<const k8s::ClaimRef> claims,
                                          absl::Time deadline = absl::InfiniteFuture());

  // For the orphan reaper: under the serializer, if the checkpoint still
  // records `ref.uid` as kPrepareStarted and no Prepare call is working on it,
  // calls Driver::UnprepareResourceClaims for it and drops the entry. True
  // when it did; false when the claim was no longer a candidate (prepared or
  // dropped meanwhile, being prepared right now, no checkpoint). An error
  // (driver or checkpoint) leaves the entry. While it runs, a Prepare call
  // that names the claim fails that claim (only possible with serialize off).
  absl::StatusOr<bool> UnprepareOrphan(const k8s::ClaimRef& ref);

  // Helper::UpdateRequestMetadata, under the serializer: a claim the
  // checkpoint records as prepared (with the checkpoint off, any whose file
  // exists) gets the next generation of the request's metadata file, recorded
  // in the checkpoint before the file is written (RepairClaimFiles finishes
  // a write a crash cut short).
  absl::Status UpdateRequestMetadata(const k8s::ClaimRef& ref, const std::string& request,
                                     const std::vector<Device>& devices);

  // Under the serializer: removes the temp files of checkpoint replacements
  // that a crash cut short, and repairs the claims' files against the
  // checkpoint (ClaimFiles::Repair). Nothing with Checkpoint::Off().
  absl::StatusOr<ClaimFiles::Repaired> RepairClaimFiles();

 private:
  // Runs `start` with a Done and waits until that was called.
  static absl::StatusOr<ClaimOutcomes> Wait(absl::FunctionRef<void(Done)> start);

  // Where a NodePrepareResources call's time went, logged at -v 4 (the
  // rest of its time is the hand-off from gRPC's thread to the executor).
  struct PrepareTimes {
    absl::Duration fetch;       // the claims' GETs
    absl::Duration wait;        // for the serializer (an earlier call)
    absl::Duration checkpoint;  // both commits, fdatasync included
    absl::Duration driver;      // PrepareResourceClaims
  };
  // A kubelet call between its stages.
  struct PendingCall {
    HelperMetrics::Method method;
    CallTracker::Call call;
    std::vector<k8s::ClaimRef> requested;
    Done done;
    ClaimOutcomes outcomes;  // claims answered so far
    PrepareTimes times;      // a prepare's
  };
  // What Prepare takes into its serialized part.
  struct PrepareWork {
    std::vector<k8s::ResourceClaim> pending;  // fetched, to prepare
    std::vector<k8s::ClaimRef> restore;       // prepared claims whose files are gone
  };

  // Fetches a claim and checks it is the allocated claim the kubelet means;
  // keeps only this driver's results and configs.
  absl::StatusOr<k8s::ResourceClaim> FetchForPrepare(const k8s::ClaimRef& ref, const CallContext& ctx);
  // Answers `ref` into `outcomes` if the checkpoint records it as prepared.
  // Before serialization (`restore` set) a claim whose files are gone is
  // only noted there; once serialized they are written again.
  bool AnswerFromCheckpoint(const k8s::ClaimRef& ref, ClaimOutcomes& outcomes,
                            std::vector<k8s::ClaimRef>* restore) const;
  absl::Status PrepareSerialized(const CallContext& ctx, PrepareWork work, ClaimOutcomes& outcomes,
                                 PrepareTimes& times);
  absl::StatusOr<bool> UnprepareOrphanSerialized(const CallContext& ctx, const k8s::ClaimRef& ref);
  absl::StatusOr<ClaimFiles::Repaired> RepairClaimFilesSerialized();
  absl::Status UpdateRequestMetadataSerialized(const k8s::ClaimRef& ref, const std::string& request,
                                               const std::vector<Device>& devices);
  absl::Status UnprepareSerialized(const CallContext& ctx, std::span<const k8s::ClaimRef> claims,
                                   ClaimOutcomes& outcomes);
  // Reports the call, answers it and ends it.
  void Complete(PendingCall call, absl::Status status);
  // Logs failures at level 0, successes at -v 2 and a prepare's times at
  // -v 4, and counts them.
  void Report(const PendingCall& call, const absl::StatusOr<ClaimOutcomes>& outcomes) const;
  absl::Status Commit(std::vector<CheckpointChange> changes);
  // The start of every serialized section: fails with the file lock's
  // error, or with the context's status if the call was cancelled while it
  // waited; reloads a shared checkpoint.
  absl::Status EnterSerialized(const CallContext& ctx, const absl::Status& locked);
  // Claim UID -> the devices it is to hold (device exclusivity; empty when
  // that is off).
  using HeldByClaim = std::map<std::string, std::vector<HeldDevice>>;
  HeldByClaim HeldDevicesOfPending(const std::vector<k8s::ResourceClaim>& pending) const;
  // Marks claims as being prepared by this call from the "started" record to
  // the "prepared" one, so that the orphan reaper leaves them alone and no
  // other claim takes their devices; drops (and fails in `outcomes`) those the
  // reaper is unpreparing right now and those with a device another claim
  // holds (in the checkpoint, or being prepared by this or another call).
  void MarkPreparing(std::vector<k8s::ResourceClaim>& pending, const HeldByClaim& held, ClaimOutcomes& outcomes);
  // Why the claim `uid` may not take `wanted`, or nullopt.
  std::optional<std::string> HeldElsewhere(const std::string& uid, const std::vector<HeldDevice>& wanted) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(in_flight_mu_);
  void UnmarkPreparing(const std::vector<k8s::ResourceClaim>& pending);
  // Takes the driver's `results` for `pending` into `outcomes`, the claims'
  // files written first; returns the "prepared" checkpoint records.
  std::vector<CheckpointChange> TakeResults(const std::vector<k8s::ResourceClaim>& pending, PrepareResults& results,
                                            const HeldByClaim& held, ClaimOutcomes& outcomes);
  // Removes a claim's files after the driver unprepared it.
  absl::Status RemoveClaimFiles(const k8s::ClaimRef& ref);

  Driver& driver_;
  const std::string driver_name_;
  ClaimSource& claims_;
  Checkpoint& checkpoint_;
  const bool checkpoint_shared_;
  const ClaimFiles& files_;
  CallSerializer& serializer_;
  CallTracker& calls_;
  HelperMetrics& metrics_;
  WorkPool& work_pool_;  // Prepare's concurrent fetches
  const DeviceExclusivityOptions exclusivity_;

  // A claim Prepare calls are working on.
  struct Preparing {
    int calls = 0;
    k8s::ClaimRef claim;
    std::vector<HeldDevice> held;
  };
  // Matter with serialize off, where a Prepare call, another one and the
  // reaper may run at the same time.
  mutable dra::Mutex in_flight_mu_;
  // Claim UID -> the Prepare calls working on it.
  std::map<std::string, Preparing> preparing_ ABSL_GUARDED_BY(in_flight_mu_);
  // Claim UIDs UnprepareOrphan is working on.
  std::set<std::string> reaping_ ABSL_GUARDED_BY(in_flight_mu_);
};

}  // namespace dra::kubeletplugin::internal
