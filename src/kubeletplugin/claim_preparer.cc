#include "kubeletplugin/claim_preparer.h"

#include <cctype>
#include <latch>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/annotate.h"
#include "base/mutex.h"
#include "crashpoint/crash_point.h"
#include "dra/k8s/names.h"
#include "fileutil/atomic_file.h"
#include "kubeletplugin/claim_uid.h"
#include "kubeletplugin/device_exclusivity.h"

namespace dra::kubeletplugin::internal {
namespace {

using base::Annotate;

// The kubelet may name a claim twice in one call; it gets one answer per UID.
std::vector<k8s::ClaimRef> DistinctByUid(std::span<const k8s::ClaimRef> claims) {
  std::vector<k8s::ClaimRef> distinct;
  std::set<std::string> seen;
  for (const k8s::ClaimRef& ref : claims) {
    if (seen.insert(ref.uid).second) distinct.push_back(ref);
  }
  return distinct;
}

// What the kubelet names a claim by ends up in file names (the CDI spec,
// the metadata dir): a reference that is not a Kubernetes namespace, name
// and UID is refused before anything is touched.
std::string RefProblem(const k8s::ClaimRef& ref) {
  auto printable = [](const std::string& value) {
    std::string out;
    for (char c : value.substr(0, 64)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
    return value.size() > 64 ? out + "..." : out;
  };
  std::vector<std::string> problems;
  for (const std::string& problem : k8s::IsDns1123Label(ref.namespace_)) {
    problems.push_back(absl::StrCat("namespace \"", printable(ref.namespace_), "\": ", problem));
  }
  for (const std::string& problem : k8s::IsDns1123Subdomain(ref.name)) {
    problems.push_back(absl::StrCat("name \"", printable(ref.name), "\": ", problem));
  }
  for (const std::string& problem : ClaimUidProblems(ref.uid)) {
    problems.push_back(absl::StrCat("uid \"", printable(ref.uid), "\": ", problem));
  }
  if (problems.empty()) return "";
  return absl::StrCat("invalid claim reference: ", absl::StrJoin(problems, "; "));
}

// The distinct, valid references of a call; the others get their error in
// `outcomes`.
std::vector<k8s::ClaimRef> UsableRefs(std::span<const k8s::ClaimRef> requested, ClaimOutcomes& outcomes) {
  std::vector<k8s::ClaimRef> usable;
  for (k8s::ClaimRef& ref : DistinctByUid(requested)) {
    if (std::string problem = RefProblem(ref); !problem.empty()) {
      outcomes[ref.uid].error = std::move(problem);
    } else {
      usable.push_back(std::move(ref));
    }
  }
  return usable;
}

}  // namespace

ClaimPreparer::ClaimPreparer(Driver& driver, std::string driver_name, ClaimSource& claims, Checkpoint& checkpoint,
                             bool checkpoint_shared, const ClaimFiles& files, CallSerializer& serializer,
                             CallTracker& calls, HelperMetrics& metrics, WorkPool& work_pool,
                             DeviceExclusivityOptions exclusivity)
    : driver_(driver),
      driver_name_(std::move(driver_name)),
      claims_(claims),
      checkpoint_(checkpoint),
      checkpoint_shared_(checkpoint_shared),
      files_(files),
      serializer_(serializer),
      calls_(calls),
      metrics_(metrics),
      work_pool_(work_pool),
      exclusivity_(std::move(exclusivity)) {
  // HeldElsewhere looks only at the entries that share a key with the claim
  // being prepared, not at every claim on the node under in_flight_mu_.
  if (exclusivity_.enabled && checkpoint_.records()) {
    checkpoint_.Index([units = exclusivity_.units](const CheckpointEntry& entry) {
      if (!entry.held.empty()) return HoldKeys(entry.held);
      if (entry.state != ClaimState::kPrepared) return std::vector<std::string>();
      return HoldKeys(HeldDevicesOf(entry.devices, units));  // as HeldElsewhere reads it
    });
  }
}

absl::Status ClaimPreparer::Commit(std::vector<CheckpointChange> changes) {
  if (changes.empty()) return absl::OkStatus();
  return checkpoint_.Commit(std::move(changes));
}

absl::Status ClaimPreparer::EnterSerialized(const CallContext& ctx, const absl::Status& locked) {
  if (!locked.ok()) return Annotate(locked, "serialize gRPC");
  if (absl::Status cancelled = ctx.status(); !cancelled.ok()) {
    return Annotate(cancelled, "cancelled while waiting for the previous call");
  }
  if (checkpoint_shared_) return checkpoint_.Reload();
  return absl::OkStatus();
}

absl::StatusOr<k8s::ResourceClaim> ClaimPreparer::FetchForPrepare(const k8s::ClaimRef& ref, const CallContext& ctx) {
  absl::StatusOr<k8s::ResourceClaim> claim = claims_.GetClaim(ref, ctx);
  if (!claim.ok()) return Annotate(claim.status(), absl::StrCat("retrieve claim ", ref.ToString()));
  if (claim->metadata.uid != ref.uid) {
    return absl::FailedPreconditionError(absl::StrCat("claim ", ref.ToString(), " got replaced"));
  }
  if (!claim->status.allocation.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("claim ", ref.ToString(), " not allocated"));
  }
  auto& allocation = claim->status.allocation->devices;
  std::erase_if(allocation.results, [&](const auto& result) { return result.driver != driver_name_; });
  std::erase_if(allocation.config, [&](const auto& config) {
    return !config.opaque.has_value() || config.opaque->driver != driver_name_;
  });
  return claim;
}

CallTracker::Call ClaimPreparer::BeginCall(const std::string& method, absl::Time deadline) {
  return calls_.Begin(method, deadline);
}

void ClaimPreparer::Complete(PendingCall call, absl::Status status) {
  absl::StatusOr<ClaimOutcomes> outcomes = std::move(call.outcomes);
  if (!status.ok()) outcomes = std::move(status);
  Report(call, outcomes);
  std::move(call.done)(std::move(outcomes));
}  // the call ends here, after its answer

absl::StatusOr<ClaimOutcomes> ClaimPreparer::Prepare(std::span<const k8s::ClaimRef> claims, absl::Time deadline) {
  return Wait([&](Done done) {
    Prepare({claims.begin(), claims.end()}, BeginCall("NodePrepareResources", deadline), std::move(done));
  });
}

absl::StatusOr<ClaimOutcomes> ClaimPreparer::Unprepare(std::span<const k8s::ClaimRef> claims, absl::Time deadline) {
  return Wait([&](Done done) {
    Unprepare({claims.begin(), claims.end()}, BeginCall("NodeUnprepareResources", deadline), std::move(done));
  });
}

absl::StatusOr<ClaimOutcomes> ClaimPreparer::Wait(absl::FunctionRef<void(Done)> start) {
  absl::StatusOr<ClaimOutcomes> result;
  std::latch done(1);
  start([&](absl::StatusOr<ClaimOutcomes> outcomes) {
    result = std::move(outcomes);
    done.count_down();
  });
  done.wait();
  return result;
}

void ClaimPreparer::Report(const PendingCall& call, const absl::StatusOr<ClaimOutcomes>& outcomes) const {
  const absl::Duration duration = absl::Now() - call.call.start();
  const HelperMetrics::Method method = call.method;
  const std::vector<k8s::ClaimRef>& claims = call.requested;
  const Logger& logger = call.call.context().logger();  // carries the method and request ID
  if (method == HelperMetrics::Method::kPrepare && logger.V(4)) {
    const PrepareTimes& t = call.times;
    logger.InfoV(4, "Call timing",
                 {{"total", absl::FormatDuration(duration)},
                  {"fetch", absl::FormatDuration(t.fetch)},
                  {"wait", absl::FormatDuration(t.wait)},
                  {"checkpoint", absl::FormatDuration(t.checkpoint)},
                  {"driver", absl::FormatDuration(t.driver)}});
  }
  if (!outcomes.ok()) {
    metrics_.ObserveCall(method, /*call_failed=*/true, 0, 0, duration);
    logger.Error("Call failed", {{"err", outcomes.status().ToString()}});
    return;
  }
  int failed = 0;
  for (const auto& [uid, outcome] : *outcomes) {
    if (!outcome.error.empty()) ++failed;
  }
  if (failed > 0 || logger.V(2)) {
    for (const k8s::ClaimRef& ref : DistinctByUid(claims)) {
      const ClaimOutcome& outcome = outcomes->at(ref.uid);
      if (!outcome.error.empty()) {
        logger.Error("Claim failed", {{"claim", ref.ToString()}, {"uid", ref.uid}, {"err", outcome.error}});
      } else {
        logger.InfoV(
            2, "Claim done",
            {{"claim", ref.ToString()}, {"uid", ref.uid}, {"devices", std::to_string(outcome.devices.size())}});
      }
    }
  }
  metrics_.ObserveCall(method, /*call_failed=*/false, static_cast<int>(outcomes->size()), failed, duration);
}

bool ClaimPreparer::AnswerFromCheckpoint(const k8s::ClaimRef& ref, ClaimOutcomes& outcomes,
                                         std::vector<k8s::ClaimRef>* restore) const {
  const bool serialized = restore == nullptr;
  // A shared checkpoint is only current once reloaded under the lock.
  if (checkpoint_shared_ && !serialized) return false;
  std::optional<CheckpointEntry> entry = checkpoint_.Get(ref.uid);
  if (!entry.has_value() || entry->state != ClaimState::kPrepared) return false;
  // After a reboot the checkpoint is there but the tmpfs spec files are
  // not: without them the runtime fails to create the container. They are
  // written only while serialized: a concurrent unprepare of the claim
  // could otherwise remove them first and leave the new files behind.
  if (files_.Lost(*entry)) {
    if (!serialized) {
      restore->push_back(ref);
      return true;
    }
    if (absl::Status status = files_.Restore(*entry); !status.ok()) {
      outcomes[ref.uid].error = absl::StrCat("re-create CDI spec of claim ", ref.ToString(), ": ", status.message());
      return true;
    }
  }
  outcomes[ref.uid] = ClaimOutcome{"", std::move(entry->devices)};
  return true;
}

void ClaimPreparer::Prepare(std::vector<k8s::ClaimRef> requested, CallTracker::Call call, Done done) {
  PendingCall pending_call{
      HelperMetrics::Method::kPrepare, std::move(call), std::move(requested), std::move(done), {}, {}};
  ClaimOutcomes& outcomes = pending_call.outcomes;
  PrepareWork work;
  // Every answer may name the node-wide specs: a container cannot start
  // without them.
  if (absl::Status status = files_.WriteNodeSpecs(/*only_missing=*/true); !status.ok()) {
    for (const k8s::ClaimRef& ref : UsableRefs(pending_call.requested, outcomes)) {
      outcomes[ref.uid].error = std::string(status.message());
    }
    Complete(std::move(pending_call), absl::OkStatus());
    return;
  }
  // Slow fetches happen before serializing, as in the Go helper, and
  // concurrently: the call costs about one round trip, not one per claim.
  std::vector<k8s::ClaimRef> to_fetch;
  for (const k8s::ClaimRef& ref : UsableRefs(pending_call.requested, outcomes)) {
    if (!AnswerFromCheckpoint(ref, outcomes, &work.restore)) to_fetch.push_back(ref);
  }
  // One slot per claim, written by exactly one worker.
  std::vector<absl::StatusOr<k8s::ResourceClaim>> fetched(to_fetch.size(), absl::UnknownError(""));
  const CallContext& ctx = pending_call.call.context();
  const absl::Time fetch_start = absl::Now();
  work_pool_.ParallelFor(to_fetch.size(), kMaxConcurrentFetches,
                         [&](size_t i) { fetched[i] = FetchForPrepare(to_fetch[i], ctx); });
  pending_call.times.fetch = absl::Now() - fetch_start;
  for (size_t i = 0; i < to_fetch.size(); ++i) {
    if (!fetched[i].ok()) {
      outcomes[to_fetch[i].uid].error = std::string(fetched[i].status().message());
      continue;
    }
    work.pending.push_back(*std::move(fetched[i]));
  }
  if (work.pending.empty() && work.restore.empty()) {
    Complete(std::move(pending_call), absl::OkStatus());
    return;
  }
  serializer_.Run([this, pending_call = std::move(pending_call), work = std::move(work),
                   queued = absl::Now()](absl::Status locked) mutable {
    const CallContext& ctx = pending_call.call.context();
    pending_call.times.wait = absl::Now() - queued;
    absl::Status status = EnterSerialized(ctx, locked);
    if (status.ok()) status = PrepareSerialized(ctx, std::move(work), pending_call.outcomes, pending_call.times);
    Complete(std::move(pending_call), std::move(status));
  });
}

absl::Status ClaimPreparer::PrepareSerialized(const CallContext& ctx, PrepareWork work, ClaimOutcomes& outcomes,
                                              PrepareTimes& times) {
  for (const k8s::ClaimRef& ref : work.restore) {
    if (!AnswerFromCheckpoint(ref, outcomes, nullptr)) {
      outcomes[ref.uid].error = absl::StrCat("claim ", ref.ToString(),
                                             " was unprepared while its CDI spec waited to be re-created; try again");
    }
  }

  std::vector<k8s::ResourceClaim>& pending = work.pending;
  // Another call may have prepared some of them while this one waited.
  std::erase_if(pending, [&](const k8s::ResourceClaim& claim) {
    return AnswerFromCheckpoint(k8s::ClaimRefOf(claim), outcomes, nullptr);
  });
  const HeldByClaim held = HeldDevicesOfPending(pending);
  MarkPreparing(pending, held, outcomes);
  if (pending.empty()) return absl::OkStatus();
  struct Unmark {
    ClaimPreparer& preparer;
    const std::vector<k8s::ResourceClaim>& pending;
    ~Unmark() { preparer.UnmarkPreparing(pending); }
  } unmark{*this, pending};

  std::vector<CheckpointChange> started;
  for (const k8s::ResourceClaim& claim : pending) {
    const std::string& uid = claim.metadata.uid;
    // Only started entries are left here: a prepared one was answered.
    std::optional<CheckpointEntry> entry = checkpoint_.Get(uid);
    if (entry.has_value() && entry->held == held.at(uid)) continue;
    started.push_back({uid, CheckpointEntry{k8s::ClaimRefOf(claim), ClaimState::kPrepareStarted, {}}});
    started.back().entry->held = held.at(uid);
  }
  absl::Time mark = absl::Now();
  absl::Status status = Commit(std::move(started));
  times.checkpoint = absl::Now() - mark;
  if (!status.ok()) {
    const std::string error = absl::StrCat("record preparation start in checkpoint: ", status.message());
    driver_.HandleError(status, ErrorSeverity::kRecoverable, "checkpoint");
    for (const k8s::ResourceClaim& claim : pending) outcomes[claim.metadata.uid].error = error;
    return absl::OkStatus();
  }

  DRA_CRASH_POINT("prepare.before_driver");
  mark = absl::Now();
  absl::StatusOr<PrepareResults> results = driver_.PrepareResourceClaims(ctx, pending);
  times.driver = absl::Now() - mark;
  if (!results.ok()) return Annotate(results.status(), "prepare resource claims");
  DRA_CRASH_POINT("prepare.after_driver");

  std::vector<CheckpointChange> prepared = TakeResults(pending, *results, held, outcomes);
  mark = absl::Now();
  status = Commit(prepared);
  times.checkpoint += absl::Now() - mark;
  if (!status.ok()) {
    // The kubelet must not use a preparation the checkpoint may have lost;
    // its retry is answered from the in-memory entry or prepares again.
    driver_.HandleError(status, ErrorSeverity::kRecoverable, "checkpoint");
    for (const CheckpointChange& change : prepared) {
      outcomes[change.uid] = ClaimOutcome{absl::StrCat("record prepared claim in checkpoint: ", status.message()), {}};
    }
  } else if (!prepared.empty()) {
    DRA_CRASH_POINT("prepare.after_checkpoint");
  }
  return absl::OkStatus();
}

std::vector<CheckpointChange> ClaimPreparer::TakeResults(const std::vector<k8s::ResourceClaim>& pending,
                                                         PrepareResults& results, const HeldByClaim& held,
                                                         ClaimOutcomes& outcomes) {
  std::vector<CheckpointChange> prepared;
  for (const k8s::ResourceClaim& claim : pending) {
    const std::string& uid = claim.metadata.uid;
    ClaimOutcome& outcome = outcomes[uid];
    auto it = results.find(uid);
    if (it == results.end()) {
      outcome.error = absl::StrCat("driver returned no result for claim ", k8s::ClaimRefOf(claim).ToString());
    } else if (!it->second.status.ok()) {
      outcome.error = std::string(it->second.status.message());
    } else {
      std::vector<Device> devices = std::move(it->second.devices);
      // Written before the checkpoint records the claim as prepared, so a
      // prepared claim always has its files (or the means to re-create
      // them).
      absl::StatusOr<ClaimFiles::Written> written = files_.Write(claim, devices);
      if (!written.ok()) {
        outcome.error = std::string(written.status().message());
        continue;
      }
      outcome.devices = std::move(devices);
      if (!checkpoint_.records()) continue;  // nothing to copy the devices into
      CheckpointEntry entry{k8s::ClaimRefOf(claim), ClaimState::kPrepared, outcome.devices};
      entry.cdi_spec = std::move(written->cdi_spec);
      entry.metadata_files = std::move(written->metadata_files);
      entry.driver_data = std::move(it->second.driver_data);
      entry.held = held.at(uid);
      prepared.push_back({uid, std::move(entry)});
    }
  }
  return prepared;
}

absl::Status ClaimPreparer::RemoveClaimFiles(const k8s::ClaimRef& ref) {
  if (!checkpoint_.records()) return files_.Remove(ref, nullptr);
  // Files are written before the claim is recorded as prepared: a claim
  // the checkpoint does not know has none.
  std::optional<CheckpointEntry> entry = checkpoint_.Get(ref.uid);
  if (!entry.has_value()) return absl::OkStatus();
  return files_.Remove(ref, entry->state == ClaimState::kPrepared ? &*entry : nullptr);
}

absl::Status ClaimPreparer::UpdateRequestMetadata(const k8s::ClaimRef& ref, const std::string& request,
                                                  const std::vector<Device>& devices) {
  const CallTracker::Call call = calls_.Begin("UpdateRequestMetadata", absl::InfiniteFuture());
  absl::Status result;
  serializer_.RunAndWait([&](absl::Status locked) {
    result = EnterSerialized(call.context(), locked);
    if (result.ok()) result = UpdateRequestMetadataSerialized(ref, request, devices);
  });
  return result;
}

absl::Status ClaimPreparer::UpdateRequestMetadataSerialized(const k8s::ClaimRef& ref, const std::string& request,
                                                            const std::vector<Device>& devices) {
  std::optional<CheckpointEntry> entry = checkpoint_.Get(ref.uid);
  if (checkpoint_.records() && (!entry.has_value() || entry->state != ClaimState::kPrepared ||
                                entry->claim.namespace_ != ref.namespace_ || entry->claim.name != ref.name)) {
    return absl::NotFoundError(absl::StrCat("update device metadata: claim ", ref.ToString(), " is not prepared"));
  }
  absl::StatusOr<MetadataFiles> next =
      files_.NextMetadataGeneration(ref, request, devices, entry.has_value() ? entry->metadata_files : MetadataFiles());
  if (!next.ok()) return next.status();
  if (entry.has_value()) {
    for (const auto& [path, content] : *next) entry->metadata_files[path] = content;
    if (absl::Status status = Commit({{ref.uid, *std::move(entry)}}); !status.ok()) {
      return Annotate(status, "record device metadata update in checkpoint");
    }
  }
  if (absl::Status status = files_.WriteMetadata(*next); !status.ok()) {
    return Annotate(status, absl::StrCat("write device metadata of claim ", ref.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClaimFiles::Repaired> ClaimPreparer::RepairClaimFiles() {
  if (!checkpoint_.records()) return ClaimFiles::Repaired();
  absl::StatusOr<ClaimFiles::Repaired> result;
  serializer_.RunAndWait([&](absl::Status locked) {
    absl::Status entered = EnterSerialized(CallContext::Background(), locked);
    result = entered.ok() ? RepairClaimFilesSerialized() : std::move(entered);
  });
  return result;
}

absl::StatusOr<ClaimFiles::Repaired> ClaimPreparer::RepairClaimFilesSerialized() {
  // Serialized, no other instance is replacing the files.
  std::vector<std::string> temps;
  for (const std::string& path : {checkpoint_.path(), checkpoint_.foreign_path()}) {
    if (path.empty()) continue;
    absl::StatusOr<std::vector<std::string>> left = dra::internal::RemoveAtomicTempFiles(path);
    if (!left.ok()) return left.status();
    temps.insert(temps.end(), left->begin(), left->end());
  }
  const Checkpoint::Salvage& salvage = checkpoint_.salvage();
  const bool unaccounted = salvage.unreadable_lines > 0 || salvage.unverified_lines > 0;
  absl::StatusOr<ClaimFiles::Repaired> repaired = files_.Repair(checkpoint_.Entries(), unaccounted);
  if (!repaired.ok()) return repaired.status();
  repaired->removed.insert(repaired->removed.begin(), temps.begin(), temps.end());
  // A claim whose files cannot be restored is quarantined: the kubelet's
  // next prepare of it calls the driver again, and it holds its devices
  // until then or until its unprepare.
  std::vector<CheckpointChange> changes;
  for (const auto& [uid, why] : repaired->failed) {
    std::optional<CheckpointEntry> entry = checkpoint_.Get(uid);
    if (!entry.has_value()) continue;
    if (entry->held.empty()) {
      for (const Device& device : entry->devices) {
        entry->held.push_back({device.pool_name, device.device_name, device.share_id});
      }
    }
    entry->state = ClaimState::kPrepareStarted;
    entry->devices.clear();
    entry->quarantined = std::string(why.message());
    changes.push_back({uid, *std::move(entry)});
  }
  // A claim whose record was lost but whose CDI spec is there holds the
  // devices it names, in whichever pool: only the kubelet can say more.
  for (const auto& [uid, devices] : repaired->unknown) {
    CheckpointEntry entry{{"", "", uid}, ClaimState::kPrepareStarted, {}};
    for (const std::string& device : devices) entry.held.push_back({"", device});
    entry.quarantined = "its CDI spec is on the node, the checkpoint records that named it could not be read";
    changes.push_back({uid, std::move(entry)});
  }
  // A claim whose held devices may be short (quarantined, adopted, or
  // recorded by 0.1.0) also holds those its CDI spec names, as above.
  for (const auto& [uid, devices] : repaired->spec_devices) {
    std::optional<CheckpointEntry> entry = checkpoint_.Get(uid);
    if (!exclusivity_.enabled || !entry.has_value()) continue;
    bool added = false;
    for (const std::string& device : devices) {
      if (std::any_of(entry->held.begin(), entry->held.end(),
                      [&](const HeldDevice& held) { return held.device == device; })) {
        continue;
      }
      entry->held.push_back({"", device});
      added = true;
    }
    if (added) changes.push_back({uid, *std::move(entry)});
  }
  if (absl::Status status = Commit(std::move(changes)); !status.ok()) return status;
  // Only now, with the claims it could not account for held again, may a
  // salvaged checkpoint replace the damaged one.
  if (absl::Status status = checkpoint_.WriteSalvaged(); !status.ok()) return status;
  return repaired;
}

ClaimPreparer::HeldByClaim ClaimPreparer::HeldDevicesOfPending(const std::vector<k8s::ResourceClaim>& pending) const {
  HeldByClaim held;
  for (const k8s::ResourceClaim& claim : pending) {
    std::vector<HeldDevice>& devices = held[claim.metadata.uid];
    if (exclusivity_.enabled && checkpoint_.records()) devices = HeldDevicesOf(claim, exclusivity_.units);
  }
  return held;
}

std::optional<std::string> ClaimPreparer::HeldElsewhere(const std::string& uid,
                                                        const std::vector<HeldDevice>& wanted) const {
  if (wanted.empty()) return std::nullopt;
  std::optional<std::string> collision;
  const std::vector<std::string> keys = WantedKeys(wanted);
  checkpoint_.ForEachWithKey(keys, [&](const CheckpointEntry& entry) {
    if (collision.has_value() || entry.claim.uid == uid) return;
    const bool prepared = entry.state == ClaimState::kPrepared;
    // An entry written before entries recorded their holds (0.1.0), or
    // with exclusivity off: the devices it was prepared with.
    const std::vector<HeldDevice> devices =
        entry.held.empty() && prepared ? HeldDevicesOf(entry.devices, exclusivity_.units) : std::vector<HeldDevice>();
    collision = Collision(wanted, Holder{entry.claim, prepared, entry.held.empty() ? devices : entry.held});
  });
  if (collision.has_value()) return collision;
  for (const auto& [other, preparing] : preparing_) {
    if (other == uid) continue;
    collision = Collision(wanted, Holder{preparing.claim, /*prepared=*/false, preparing.held});
    if (collision.has_value()) return collision;
  }
  return std::nullopt;
}

void ClaimPreparer::MarkPreparing(std::vector<k8s::ResourceClaim>& pending, const HeldByClaim& held,
                                  ClaimOutcomes& outcomes) {
  if (!checkpoint_.records()) return;  // no records: no orphans to reap, no holds to check
  dra::MutexLock lock(&in_flight_mu_);
  std::erase_if(pending, [&](const k8s::ResourceClaim& claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(in_flight_mu_) {
    const std::string& uid = claim.metadata.uid;
    if (reaping_.count(uid) > 0) {
      outcomes[uid].error = absl::StrCat("claim ", claim.metadata.namespace_, "/", claim.metadata.name,
                                         " is being unprepared as an orphan; try again");
      return true;
    }
    const std::vector<HeldDevice>& devices = held.at(uid);
    if (std::optional<std::string> collision = HeldElsewhere(uid, devices); collision.has_value()) {
      outcomes[uid].error = *std::move(collision);
      metrics_.ObserveExclusivityRefusal();
      return true;
    }
    Preparing& preparing = preparing_[uid];
    ++preparing.calls;
    preparing.claim = k8s::ClaimRefOf(claim);
    preparing.held = devices;
    return false;
  });
}

void ClaimPreparer::UnmarkPreparing(const std::vector<k8s::ResourceClaim>& pending) {
  if (!checkpoint_.records()) return;
  dra::MutexLock lock(&in_flight_mu_);
  for (const k8s::ResourceClaim& claim : pending) {
    auto it = preparing_.find(claim.metadata.uid);
    if (it != preparing_.end() && --it->second.calls == 0) preparing_.erase(it);
  }
}

absl::StatusOr<bool> ClaimPreparer::UnprepareOrphan(const k8s::ClaimRef& ref) {
  if (!checkpoint_.records()) return false;
  const CallTracker::Call call = calls_.Begin("UnprepareOrphan", absl::InfiniteFuture());
  absl::StatusOr<bool> result;
  serializer_.RunAndWait([&](absl::Status locked) {
    absl::Status entered = EnterSerialized(call.context(), locked);
    result = entered.ok() ? UnprepareOrphanSerialized(call.context(), ref) : std::move(entered);
  });
  return result;
}

absl::StatusOr<bool> ClaimPreparer::UnprepareOrphanSerialized(const CallContext& ctx, const k8s::ClaimRef& ref) {
  // Checked again under the lock: a kubelet call may have finished it.
  std::optional<CheckpointEntry> entry = checkpoint_.Get(ref.uid);
  if (!entry.has_value() || entry->state != ClaimState::kPrepareStarted) return false;
  {
    dra::MutexLock lock(&in_flight_mu_);
    if (preparing_.count(ref.uid) > 0) return false;
    reaping_.insert(ref.uid);
  }
  struct Unmark {
    ClaimPreparer& preparer;
    const std::string& uid;
    ~Unmark() {
      dra::MutexLock lock(&preparer.in_flight_mu_);
      preparer.reaping_.erase(uid);
    }
  } unmark{*this, ref.uid};

  const std::vector<k8s::ClaimRef> claims{entry->claim};
  absl::StatusOr<UnprepareResults> results = driver_.UnprepareResourceClaims(ctx, claims);
  if (!results.ok()) return Annotate(results.status(), "unprepare resource claims");
  auto it = results->find(ref.uid);
  if (it == results->end()) {
    return absl::InternalError(absl::StrCat("driver returned no result for claim ", entry->claim.ToString()));
  }
  if (!it->second.ok()) return it->second;
  // The files may have been written before the crash that orphaned the claim.
  if (absl::Status status = RemoveClaimFiles(entry->claim); !status.ok()) return status;
  if (absl::Status status = Commit({{ref.uid, std::nullopt}}); !status.ok()) {
    return Annotate(status, "remove claim from checkpoint");
  }
  return true;
}

void ClaimPreparer::Unprepare(std::vector<k8s::ClaimRef> requested, CallTracker::Call call, Done done) {
  PendingCall pending_call{
      HelperMetrics::Method::kUnprepare, std::move(call), std::move(requested), std::move(done), {}, {}};
  std::vector<k8s::ClaimRef> claims = UsableRefs(pending_call.requested, pending_call.outcomes);
  if (claims.empty()) {
    Complete(std::move(pending_call), absl::OkStatus());
    return;
  }
  serializer_.Run(
      [this, pending_call = std::move(pending_call), claims = std::move(claims)](absl::Status locked) mutable {
        const CallContext& ctx = pending_call.call.context();
        absl::Status status = EnterSerialized(ctx, locked);
        if (status.ok()) status = UnprepareSerialized(ctx, claims, pending_call.outcomes);
        Complete(std::move(pending_call), std::move(status));
      });
}

absl::Status ClaimPreparer::UnprepareSerialized(const CallContext& ctx, std::span<const k8s::ClaimRef> claims,
                                                ClaimOutcomes& outcomes) {
  DRA_CRASH_POINT("unprepare.before_driver");
  absl::StatusOr<UnprepareResults> results = driver_.UnprepareResourceClaims(ctx, claims);
  if (!results.ok()) return Annotate(results.status(), "unprepare resource claims");
  DRA_CRASH_POINT("unprepare.after_driver");

  std::vector<CheckpointChange> dropped;
  for (const k8s::ClaimRef& ref : claims) {
    ClaimOutcome& outcome = outcomes[ref.uid];
    auto it = results->find(ref.uid);
    if (it == results->end()) {
      outcome.error = absl::StrCat("driver returned no result for claim ", ref.ToString());
    } else if (!it->second.ok()) {
      outcome.error = std::string(it->second.message());
    } else if (absl::Status status = RemoveClaimFiles(ref); !status.ok()) {
      // Kept in the checkpoint: the kubelet retries and the removal with it.
      outcome.error = std::string(status.message());
    } else if (checkpoint_.Get(ref.uid).has_value()) {
      dropped.push_back({ref.uid, std::nullopt});
    }
  }
  if (!dropped.empty()) DRA_CRASH_POINT("unprepare.after_files_removed");
  if (absl::Status status = Commit(dropped); !status.ok()) {
    driver_.HandleError(status, ErrorSeverity::kRecoverable, "checkpoint");
    for (const CheckpointChange& change : dropped) {
      outcomes[change.uid].error = absl::StrCat("remove claim from checkpoint: ", status.message());
    }
  } else if (!dropped.empty()) {
    DRA_CRASH_POINT("unprepare.after_checkpoint");
  }
  return absl::OkStatus();
}

}  // namespace dra::kubeletplugin::internal
