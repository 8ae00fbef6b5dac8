#include "kubeletplugin/orphan_reaper.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "dra/k8s/client.h"

namespace dra::kubeletplugin::internal {
namespace {

// Long enough to mean "never", short enough that now + interval cannot
// overflow the clock (absl::InfiniteDuration converts to the maximum).
constexpr std::chrono::hours kLongestInterval{24 * 365 * 100};

OrphanReaper::Clock::duration ToInterval(absl::Duration interval) {
  const std::chrono::nanoseconds ns = absl::ToChronoNanoseconds(interval);
  return std::chrono::duration_cast<OrphanReaper::Clock::duration>(
      std::clamp<std::chrono::nanoseconds>(ns, std::chrono::nanoseconds(1), kLongestInterval));
}

// NotFound from the ClaimSource means the claim is gone, unless an API
// server's 404 did not come with a metav1.Status "NotFound": then the path
// itself is unknown (say, resource.k8s.io/v1 not served), which says nothing
// about the claim.
bool ClaimIsGone(const absl::Status& status) {
  if (!absl::IsNotFound(status)) return false;
  return !k8s::HttpStatusCode(status).has_value() || k8s::StatusReason(status) == "NotFound";
}

}  // namespace

OrphanReaper::OrphanReaper(const Checkpoint& checkpoint, ClaimSource& claims, Driver& driver, UnprepareFn unprepare,
                           absl::Duration interval, const Logger& logger)
    : checkpoint_(checkpoint),
      claims_(claims),
      driver_(driver),
      unprepare_(std::move(unprepare)),
      interval_(ToInterval(interval)),
      logger_(logger),
      context_(CallContext::WithCancel(absl::InfiniteFuture(), logger, "orphan check")) {}

OrphanReaper::~OrphanReaper() { Stop(); }

absl::Status OrphanReaper::Start() {
  return base::StartNamedThread(thread_, "dra-orphans", "start the orphan check thread", [this] { Run(); });
}

void OrphanReaper::Stop() {
  {
    dra::MutexLock lock(&mu_);
    stop_ = true;
  }
  context_.second.Cancel(absl::UnavailableError("the Helper is stopping"));
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

bool OrphanReaper::stopping() const {
  dra::MutexLock lock(&mu_);
  return stop_;
}

void OrphanReaper::Run() {
  dra::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.Unlock();
    CheckOnce(Clock::now());
    mu_.Lock();
    const absl::Time next = absl::Now() + absl::FromChrono(interval_);
    while (!stop_ && !cv_.WaitWithDeadline(&mu_, next)) {
    }
  }
}

void OrphanReaper::Report(const k8s::ClaimRef& ref, const absl::Status& status) {
  if (!reported_.insert(ref.uid).second) return;
  logger_.Error("Orphan check failed", {{"claim", ref.ToString()}, {"uid", ref.uid}, {"err", status.ToString()}});
  driver_.HandleError(status, ErrorSeverity::kRecoverable, "orphan check");
}

std::vector<std::string> OrphanReaper::CheckOnce(Clock::time_point now) {
  std::vector<k8s::ClaimRef> due;
  std::set<std::string> started;
  for (const CheckpointEntry& entry : checkpoint_.Entries()) {
    // A quarantined entry may have lost its claim's name: only the
    // kubelet, which names the claim by UID too, can release it then.
    if (entry.state != ClaimState::kPrepareStarted || entry.claim.name.empty()) continue;
    started.insert(entry.claim.uid);
    auto [it, first_time] = first_seen_.try_emplace(entry.claim.uid, now);
    if (!first_time && now - it->second >= interval_) due.push_back(entry.claim);
  }
  std::erase_if(first_seen_, [&](const auto& seen) { return started.count(seen.first) == 0; });
  std::erase_if(reported_, [&](const std::string& uid) { return started.count(uid) == 0; });

  std::vector<std::string> unprepared;
  for (const k8s::ClaimRef& ref : due) {
    if (stopping()) break;
    absl::StatusOr<k8s::ResourceClaim> claim = claims_.GetClaim(ref, context_.first);
    std::string reason;
    if (claim.ok()) {
      if (claim->metadata.uid == ref.uid) {
        reported_.erase(ref.uid);  // still there: the kubelet may yet ask for it
        continue;
      }
      reason = absl::StrCat("replaced by a claim with UID ", claim->metadata.uid);
    } else if (ClaimIsGone(claim.status())) {
      reason = "deleted";
    } else {
      Report(ref,
             absl::Status(claim.status().code(), absl::StrCat("check whether claim ", ref.ToString(), " (UID ", ref.uid,
                                                              ") still exists: ", claim.status().message())));
      continue;
    }

    logger_.Info("Unpreparing orphaned claim", {{"claim", ref.ToString()}, {"uid", ref.uid}, {"reason", reason}});
    absl::StatusOr<bool> done = unprepare_(ref);
    if (!done.ok()) {
      Report(ref, absl::Status(done.status().code(), absl::StrCat("unprepare orphaned claim ", ref.ToString(), " (UID ",
                                                                  ref.uid, "): ", done.status().message())));
      continue;
    }
    reported_.erase(ref.uid);
    if (*done) {
      first_seen_.erase(ref.uid);
      unprepared.push_back(ref.uid);
      logger_.Info("Unprepared orphaned claim", {{"claim", ref.ToString()}, {"uid", ref.uid}});
    }
  }
  return unprepared;
}

}  // namespace dra::kubeletplugin::internal
