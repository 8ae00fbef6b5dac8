// Claims whose preparation started (checkpoint state kPrepareStarted) but
// that the kubelet never asks about again (the pod went away while the driver
// crashed, or the driver failed the claim and the claim was deleted) are
// handed to Driver::UnprepareResourceClaims once the ClaimSource says the
// claim is gone.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/call_context.h"
#include "dra/k8s/claim_ref.h"
#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/log.h"
#include "kubeletplugin/checkpoint.h"

namespace dra::kubeletplugin::internal {

// Each check:
//  1. Reads the checkpoint. A kPrepareStarted entry seen for the first time
//     is only noted, with the time; entries no longer started are forgotten.
//  2. For each started entry first seen at least one interval ago, asks the
//     ClaimSource for the claim. NotFound, or a claim with another UID (it was
//     replaced), makes it an orphan; a claim with the same UID is left alone,
//     and so is a 404 that the API server did not answer as a missing object
//     (a path it does not serve proves nothing).
//  3. Hands each orphan to `unprepare` (ClaimPreparer::UnprepareOrphan: under
//     the call serializer, checks the entry again, calls the driver, drops the
//     entry).
// An entry's failures (ClaimSource errors other than NotFound, driver or
// checkpoint errors) keep the entry and reach Driver::HandleError once, until
// a check of that entry goes through again.
//
// Why "first seen one interval ago": an entry is started for as long as a
// Prepare call is inside the driver. Together with the recheck under the
// serializer (and ClaimPreparer's in-flight marks when serialize is off) it
// means a claim in the middle of being prepared is never unprepared.
class OrphanReaper {
 public:
  using Clock = std::chrono::steady_clock;
  // Returns true when it unprepared the claim and dropped its entry, false
  // when the claim turned out not to be an orphan candidate any more.
  using UnprepareFn = std::function<absl::StatusOr<bool>(const k8s::ClaimRef&)>;

  // `interval` must be positive. Everything must outlive this.
  OrphanReaper(const Checkpoint& checkpoint, ClaimSource& claims, Driver& driver, UnprepareFn unprepare,
               absl::Duration interval, const Logger& logger);
  ~OrphanReaper();  // Stop()
  OrphanReaper(const OrphanReaper&) = delete;
  OrphanReaper& operator=(const OrphanReaper&) = delete;

  // Starts the background thread: one check at once, then one every
  // interval after the previous one ended. Call at most once.
  absl::Status Start();
  // Ends the thread: at once while it waits, otherwise after the claim it is
  // checking (the ClaimSource call's context is cancelled, which a source
  // may or may not notice). Idempotent.
  void Stop();

  // One check at `now`; returns the UIDs it unprepared. The thread calls it;
  // tests call it directly instead of Start().
  std::vector<std::string> CheckOnce(Clock::time_point now);

 private:
  void Run();
  bool stopping() const;
  // HandleError and log, once per entry until a check of it goes through.
  void Report(const k8s::ClaimRef& ref, const absl::Status& status);

  const Checkpoint& checkpoint_;
  ClaimSource& claims_;
  Driver& driver_;
  const UnprepareFn unprepare_;
  const Clock::duration interval_;
  const Logger& logger_;
  // The context of every ClaimSource call; Stop() cancels it.
  const std::pair<CallContext, CallCanceller> context_;

  // Touched by CheckOnce only (one caller at a time).
  std::map<std::string, Clock::time_point> first_seen_;  // started entries, by claim UID
  std::set<std::string> reported_;                       // UIDs whose failure HandleError got

  mutable dra::Mutex mu_;
  dra::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace dra::kubeletplugin::internal
