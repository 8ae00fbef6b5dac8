#include "dra/resourceclaim/binding_condition_reconciler.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "dra/k8s/field_error.h"
#include "dra/k8s/informer.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/k8s/validation.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "resourceclaim/allocated_device_key.h"

namespace dra::resourceclaim {
namespace {

using internal::AllocatedDeviceKey;
using internal::Describe;
using internal::KeyOf;
using nlohmann::json;

constexpr absl::Duration kMinRetry = absl::Milliseconds(10);
// Node labels matter only for allocations that select by label; they are
// read again when older than this.
constexpr absl::Duration kNodeLabelsMaxAge = absl::Seconds(60);

// Whether the raw object has an allocation result of `driver` with binding
// conditions: most claims of the cluster are dismissed here, undecoded.
bool MayConcern(const json& object, const std::string& driver) {
  static const json::json_pointer kResults("/status/allocation/devices/results");
  if (!object.contains(kResults) || !object.at(kResults).is_array()) return false;
  for (const json& result : object.at(kResults)) {
    if (!result.is_object() || result.value("driver", "") != driver) continue;
    auto conditions = result.find("bindingConditions");
    if (conditions != result.end() && conditions->is_array() && !conditions->empty()) return true;
  }
  return false;
}

const k8s::AllocatedDeviceStatus* EntryOf(const k8s::ResourceClaim& claim, const AllocatedDeviceKey& key) {
  for (const k8s::AllocatedDeviceStatus& entry : claim.status.devices) {
    if (KeyOf(entry) == key) return &entry;
  }
  return nullptr;
}

bool ConditionTrue(const k8s::AllocatedDeviceStatus* entry, const std::string& type) {
  if (entry == nullptr) return false;
  for (const k8s::Condition& condition : entry->conditions) {
    if (condition.type == type) return condition.status == "True";
  }
  return false;
}

// The scheduler's view: all binding conditions True (ready) or one failure
// condition True (failed) ends the device's binding.
bool Finished(const k8s::ResourceClaim& claim, const k8s::DeviceRequestAllocationResult& result) {
  const k8s::AllocatedDeviceStatus* entry = EntryOf(claim, KeyOf(result));
  for (const std::string& type : result.binding_failure_conditions) {
    if (ConditionTrue(entry, type)) return true;
  }
  return std::all_of(result.binding_conditions.begin(), result.binding_conditions.end(),
                     [&](const std::string& type) { return ConditionTrue(entry, type); });
}

bool SelectsByLabel(const k8s::NodeSelector& selector) {
  return std::any_of(selector.node_selector_terms.begin(), selector.node_selector_terms.end(),
                     [](const k8s::NodeSelectorTerm& term) { return !term.match_expressions.empty(); });
}

std::string ClaimName(const k8s::ResourceClaim& claim) {
  return absl::StrCat(claim.metadata.namespace_, "/", claim.metadata.name);
}

}  // namespace

BindingResult BindingResult::Ready(std::string reason, std::string message) {
  return BindingResult(Outcome::kReady, std::move(reason), std::move(message), absl::ZeroDuration());
}

BindingResult BindingResult::Failed(std::string reason, std::string message) {
  return BindingResult(Outcome::kFailed, std::move(reason), std::move(message), absl::ZeroDuration());
}

BindingResult BindingResult::Pending(absl::Duration retry_after) {
  return BindingResult(Outcome::kPending, "", "", std::max(retry_after, kMinRetry));
}

class BindingConditionReconciler::Impl final : public k8s::InformerHandler {
 public:
  Impl(std::shared_ptr<k8s::Client> client, BindingConditionReconcilerOptions options, BindingHandler& handler,
       std::unique_ptr<ClaimStatusWriter> writer)
      : client_(std::move(client)), options_(std::move(options)), handler_(handler), writer_(std::move(writer)) {}

  absl::Status StartThreads() {
    k8s::InformerOptions informer_options;
    informer_options.resource = k8s::kResourceClaims;
    informer_options.backoff_initial = options_.backoff_initial;
    informer_options.backoff_max = options_.backoff_max;
    // Most claims of the cluster are not this reconciler's: their metadata
    // is all it keeps of them.
    informer_options.transform = [driver = options_.driver_name](json& object) {
      if (!MayConcern(object, driver)) object = json{{"metadata", std::move(object["metadata"])}};
    };
    absl::StatusOr<std::unique_ptr<k8s::Informer>> informer = k8s::Informer::Start(client_, informer_options, *this);
    if (!informer.ok()) return informer.status();
    informer_ = *std::move(informer);
    for (int i = 0; i < options_.workers; ++i) {
      base::NameThread(workers_.emplace_back([this] { RunWorker(); }), "dra-bind");
    }
    return absl::OkStatus();
  }

  void Stop() {
    {
      dra::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
      for (auto& [uid, tracked] : tracked_) CancelLocked(tracked, absl::UnavailableError("the reconciler is stopping"));
      cv_.SignalAll();
    }
    if (informer_ != nullptr) informer_->Stop();  // outside mu_, which its handler takes
    for (std::thread& worker : workers_) worker.join();
  }

  bool Synced() const {
    dra::MutexLock lock(&mu_);
    return synced_;
  }

  bool Idle() const {
    dra::MutexLock lock(&mu_);
    if (!synced_ || !in_progress_.empty()) return false;
    const absl::Time now = absl::Now();
    return std::none_of(queue_.begin(), queue_.end(), [&](const auto& entry) { return entry.second <= now; });
  }

  BindingConditionReconcilerStats Stats() const {
    const int64_t lists = informer_->Stats().lists;
    dra::MutexLock lock(&mu_);
    BindingConditionReconcilerStats stats = stats_;
    stats.lists = lists;
    return stats;
  }

 private:
  // A claim with allocation results this reconciler handles.
  struct Tracked {
    k8s::ResourceClaim claim;
    std::vector<size_t> devices;  // indexes into the allocation results
    absl::Time deadline;          // of the binding: allocationTimestamp + binding_timeout
    // The handler's final answers for this allocation, until written and
    // after (the watch may show the claim from before the write).
    std::map<AllocatedDeviceKey, BindingResult> answers;
    std::set<AllocatedDeviceKey> timed_out;
    std::shared_ptr<const CallCanceller> call;  // the handler call or write in flight
  };

  void Report(const absl::Status& status, const std::string& context) {
    options_.logger.Error("Binding condition reconciler failed", {{"context", context}, {"err", status.ToString()}});
  }

  void OnEvent(const k8s::InformerEvent& event) override {
    std::optional<k8s::ResourceClaim> claim;
    if (event.type != k8s::InformerEvent::Type::kDeleted) claim = Decode(event.object);
    dra::MutexLock lock(&mu_);
    if (claim.has_value()) {
      UpsertLocked(*std::move(claim));
    } else {
      RemoveLocked(event.object.value(json::json_pointer("/metadata/uid"), ""));
    }
  }

  void OnSynced() override {
    dra::MutexLock lock(&mu_);
    synced_ = true;
    cv_.SignalAll();
  }

  void OnError(const absl::Status& status, std::string_view context) override { Report(status, std::string(context)); }

  // The claim, if it has allocation results for this reconciler: this
  // driver's, with binding conditions, on this node, not being deleted.
  std::optional<k8s::ResourceClaim> Decode(const json& object) {
    if (!MayConcern(object, options_.driver_name)) return std::nullopt;
    absl::StatusOr<k8s::ResourceClaim> claim = k8s::ResourceClaimFromJson(object);
    if (!claim.ok()) {
      options_.logger.Warning("Ignoring a ResourceClaim that cannot be decoded",
                              {{"claim", absl::StrCat(object.value(json::json_pointer("/metadata/namespace"), ""), "/",
                                                      object.value(json::json_pointer("/metadata/name"), ""))},
                               {"err", claim.status().ToString()}});
      return std::nullopt;
    }
    if (claim->metadata.deletion_timestamp.has_value() || !claim->status.allocation.has_value()) return std::nullopt;
    if (options_.scope == BindingScope::kAllNodes) return *std::move(claim);
    const std::optional<k8s::NodeSelector>& selector = claim->status.allocation->node_selector;
    if (!selector.has_value()) return std::nullopt;
    if (!k8s::NodeSelectorMatches(*selector, options_.node_name,
                                  SelectsByLabel(*selector) ? NodeLabels() : std::map<std::string, std::string>())) {
      return std::nullopt;
    }
    return *std::move(claim);
  }

  // This node's labels, read when older than kNodeLabelsMaxAge; empty when
  // they cannot be read (logged), so that only selection by name works.
  std::map<std::string, std::string> NodeLabels() {
    const absl::Time now = absl::Now();
    if (now - labels_read_at_ < kNodeLabelsMaxAge) return node_labels_;
    labels_read_at_ = now;
    absl::StatusOr<json> node = client_->Get(k8s::kNodes, "", options_.node_name);
    if (!node.ok()) {
      Report(node.status(), absl::StrCat("read the labels of node ", options_.node_name));
      node_labels_.clear();
      return node_labels_;
    }
    node_labels_.clear();
    const json labels = node->value(json::json_pointer("/metadata/labels"), json::object());
    for (const auto& [key, value] : labels.items()) {
      if (value.is_string()) node_labels_[key] = value.get<std::string>();
    }
    return node_labels_;
  }

  absl::Time BindingDeadline(const k8s::ResourceClaim& claim) const {
    absl::Time allocated = absl::Now();
    const std::optional<std::string>& timestamp = claim.status.allocation->allocation_timestamp;
    std::string error;
    if (timestamp.has_value()) absl::ParseTime(absl::RFC3339_full, *timestamp, &allocated, &error);
    return allocated + options_.binding_timeout;
  }

  void CancelLocked(Tracked& tracked, const absl::Status& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (tracked.call != nullptr) tracked.call->Cancel(reason);
    tracked.call.reset();
  }

  void UpsertLocked(k8s::ResourceClaim claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::string uid = claim.metadata.uid;
    auto [it, inserted] = tracked_.try_emplace(uid);
    Tracked& tracked = it->second;
    if (inserted || tracked.claim.status.allocation != claim.status.allocation) {
      if (!inserted) {
        CancelLocked(tracked, absl::CancelledError("the claim got another allocation"));
        tracked.answers.clear();
        tracked.timed_out.clear();
      }
      tracked.devices.clear();
      const std::vector<k8s::DeviceRequestAllocationResult>& results = claim.status.allocation->devices.results;
      for (size_t i = 0; i < results.size(); ++i) {
        if (results[i].driver == options_.driver_name && !results[i].binding_conditions.empty()) {
          tracked.devices.push_back(i);
        }
      }
      tracked.deadline = BindingDeadline(claim);
    }
    tracked.claim = std::move(claim);
    EnqueueLocked(uid, absl::Now());
  }

  void RemoveLocked(const std::string& uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = tracked_.find(uid);
    if (it == tracked_.end()) return;
    CancelLocked(it->second, absl::CancelledError("the claim was deallocated, deleted or moved to another node"));
    tracked_.erase(it);
    queue_.erase(uid);
  }

  void EnqueueLocked(const std::string& uid, absl::Time when) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto [it, inserted] = queue_.emplace(uid, when);
    if (!inserted) it->second = std::min(it->second, when);
    cv_.SignalAll();
  }

  void RunWorker() {
    dra::MutexLock lock(&mu_);
    while (!stopping_) {
      const absl::Time now = absl::Now();
      absl::Time wake = absl::InfiniteFuture();
      std::optional<std::string> next;
      for (const auto& [uid, when] : queue_) {
        if (in_progress_.contains(uid)) continue;
        if (when <= now) {
          next = uid;
          break;
        }
        wake = std::min(wake, when);
      }
      if (next.has_value()) {
        queue_.erase(*next);
        in_progress_.insert(*next);
        mu_.Unlock();
        Process(*next);
        mu_.Lock();
        in_progress_.erase(*next);
        cv_.SignalAll();  // another worker may wait for this claim
        continue;
      }
      cv_.WaitWithDeadline(&mu_, wake);
    }
  }

  // A handler call or status write, and what cancels it.
  struct Call {
    CallContext context;
    std::shared_ptr<const CallCanceller> canceller;
  };

  // Starts a cancellable call for the claim, unless it is no longer tracked
  // with the allocation `claim` has.
  std::optional<Call> BeginCall(const k8s::ResourceClaim& claim, const std::string& what, absl::Time deadline,
                                Logger logger) {
    dra::MutexLock lock(&mu_);
    auto it = tracked_.find(claim.metadata.uid);
    if (stopping_ || it == tracked_.end() || it->second.claim.status.allocation != claim.status.allocation) {
      return std::nullopt;
    }
    auto [context, canceller] = CallContext::WithCancel(deadline, std::move(logger), what);
    it->second.call = std::make_shared<const CallCanceller>(std::move(canceller));
    return Call{std::move(context), it->second.call};
  }

  // Ends the call; whether its result is still wanted.
  bool EndCall(const std::string& uid, const Call& call) {
    bool wanted = false;
    {
      dra::MutexLock lock(&mu_);
      auto it = tracked_.find(uid);
      if (it != tracked_.end() && it->second.call == call.canceller) {
        wanted = call.canceller->status().ok();
        it->second.call.reset();
      }
    }
    call.canceller->Cancel(absl::CancelledError("the call has returned"));
    return wanted;
  }

  void Process(const std::string& uid) {
    Tracked snapshot;
    {
      dra::MutexLock lock(&mu_);
      auto it = tracked_.find(uid);
      if (it == tracked_.end()) return;
      snapshot.claim = it->second.claim;
      snapshot.devices = it->second.devices;
      snapshot.deadline = it->second.deadline;
      snapshot.answers = it->second.answers;
    }
    const k8s::ResourceClaim& claim = snapshot.claim;
    const std::vector<k8s::DeviceRequestAllocationResult>& results = claim.status.allocation->devices.results;
    std::optional<absl::Time> retry;
    for (size_t index : snapshot.devices) {
      const k8s::DeviceRequestAllocationResult& result = results[index];
      const AllocatedDeviceKey key = KeyOf(result);
      if (Finished(claim, result) || snapshot.answers.contains(key)) continue;
      const Logger logger =
          options_.logger.WithValues({{"claim", ClaimName(claim)}, {"uid", uid}, {"device", Describe(key)}});
      if (absl::Now() >= snapshot.deadline) {
        dra::MutexLock lock(&mu_);
        auto it = tracked_.find(uid);
        if (it != tracked_.end() && it->second.timed_out.insert(key).second) {
          ++stats_.timed_out;
          logger.Warning("Binding timeout passed: the scheduler gives up on this allocation",
                         {{"timeout", absl::FormatDuration(options_.binding_timeout)}});
        }
        continue;
      }
      std::optional<Call> call = BeginCall(
          claim, absl::StrCat("PrepareForBinding ", ClaimName(claim), " ", Describe(key)), snapshot.deadline, logger);
      if (!call.has_value()) return;
      BindingResult answer = handler_.PrepareForBinding(call->context, claim, result);
      const bool wanted = EndCall(uid, *call);
      dra::MutexLock lock(&mu_);
      ++stats_.handler_calls;
      if (!wanted) return;
      switch (answer.outcome()) {
        case BindingResult::Outcome::kPending:
          ++stats_.pending;
          retry = std::min(retry.value_or(absl::InfiniteFuture()), absl::Now() + answer.retry_after());
          logger.InfoV(4, "Device not ready for binding yet",
                       {{"retryAfter", absl::FormatDuration(answer.retry_after())}});
          continue;
        case BindingResult::Outcome::kReady:
          ++stats_.ready;
          logger.Info("Device ready for binding", {{"reason", answer.reason()}});
          break;
        case BindingResult::Outcome::kFailed:
          ++stats_.failed;
          logger.Warning("Device failed to prepare for binding",
                         {{"reason", answer.reason()}, {"message", answer.message()}});
          if (result.binding_failure_conditions.empty()) {
            logger.Warning(
                "The device has no bindingFailureConditions to report the failure with; "
                "the scheduler waits for its binding timeout");
          }
          break;
      }
      snapshot.answers.emplace(key, answer);
      auto it = tracked_.find(uid);
      if (it != tracked_.end()) it->second.answers.emplace(key, std::move(answer));
    }
    if (NeedsWrite(snapshot)) Write(snapshot, retry);
    if (retry.has_value()) {
      dra::MutexLock lock(&mu_);
      if (tracked_.contains(uid)) EnqueueLocked(uid, *retry);
    }
  }

  // Whether an answer that sets conditions is not in the claim yet.
  static bool NeedsWrite(const Tracked& tracked) {
    const std::vector<k8s::DeviceRequestAllocationResult>& results = tracked.claim.status.allocation->devices.results;
    return std::any_of(tracked.devices.begin(), tracked.devices.end(), [&](size_t index) {
      const k8s::DeviceRequestAllocationResult& result = results[index];
      auto answer = tracked.answers.find(KeyOf(result));
      if (answer == tracked.answers.end() || Finished(tracked.claim, result)) return false;
      return answer->second.outcome() == BindingResult::Outcome::kReady || !result.binding_failure_conditions.empty();
    });
  }

  // This manager's entries: the answered devices, and the finished ones as
  // the claim shows them (an apply leaving them out would remove them).
  std::vector<k8s::AllocatedDeviceStatus> Entries(const Tracked& tracked) const {
    const k8s::ResourceClaim& claim = tracked.claim;
    std::vector<k8s::AllocatedDeviceStatus> entries;
    for (size_t index : tracked.devices) {
      const k8s::DeviceRequestAllocationResult& result = claim.status.allocation->devices.results[index];
      const AllocatedDeviceKey key = KeyOf(result);
      k8s::AllocatedDeviceStatus entry;
      entry.driver = result.driver;
      entry.pool = result.pool;
      entry.device = result.device;
      entry.share_id = result.share_id;
      auto answer = tracked.answers.find(key);
      if (answer != tracked.answers.end()) {
        const bool ready = answer->second.outcome() == BindingResult::Outcome::kReady;
        for (const std::string& type : ready ? result.binding_conditions : result.binding_failure_conditions) {
          k8s::Condition& condition = entry.conditions.emplace_back();
          condition.type = type;
          condition.status = "True";
          if (claim.metadata.generation > 0) condition.observed_generation = claim.metadata.generation;
          condition.reason = answer->second.reason();
          condition.message = answer->second.message();
        }
      } else if (const k8s::AllocatedDeviceStatus* live = EntryOf(claim, key); live != nullptr) {
        for (const k8s::Condition& condition : live->conditions) {
          const bool managed =
              std::find(result.binding_conditions.begin(), result.binding_conditions.end(), condition.type) !=
                  result.binding_conditions.end() ||
              std::find(result.binding_failure_conditions.begin(), result.binding_failure_conditions.end(),
                        condition.type) != result.binding_failure_conditions.end();
          if (managed && condition.status == "True") entry.conditions.push_back(condition);
        }
      }
      if (!entry.conditions.empty()) entries.push_back(std::move(entry));
    }
    return entries;
  }

  void Write(const Tracked& tracked, std::optional<absl::Time>& retry) {
    const k8s::ResourceClaim& claim = tracked.claim;
    std::optional<Call> call = BeginCall(claim, absl::StrCat("write binding conditions of ", ClaimName(claim)),
                                         tracked.deadline, options_.logger);
    if (!call.has_value()) return;
    const k8s::ClaimRef ref = k8s::ClaimRefOf(claim);
    const absl::Status written = writer_->Apply(call->context, ref, Entries(tracked));
    const bool wanted = EndCall(claim.metadata.uid, *call);
    dra::MutexLock lock(&mu_);
    if (written.ok()) {
      ++stats_.writes;
      return;
    }
    ++stats_.write_errors;
    options_.logger.Error("Writing binding conditions failed",
                          {{"claim", ClaimName(claim)}, {"uid", claim.metadata.uid}, {"err", written.ToString()}});
    // A claim that changed comes back through the watch; a rule broken by
    // the handler's answer (InvalidArgument) does not heal by retrying.
    if (wanted && !absl::IsInvalidArgument(written) && !absl::IsNotFound(written) &&
        !absl::IsFailedPrecondition(written)) {
      retry = std::min(retry.value_or(absl::InfiniteFuture()), absl::Now() + options_.backoff_max);
    }
  }

  const std::shared_ptr<k8s::Client> client_;
  const BindingConditionReconcilerOptions options_;
  BindingHandler& handler_;
  const std::unique_ptr<ClaimStatusWriter> writer_;

  mutable dra::Mutex mu_;
  dra::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Tracked> tracked_ ABSL_GUARDED_BY(mu_);   // by claim UID
  std::map<std::string, absl::Time> queue_ ABSL_GUARDED_BY(mu_);  // claim UID -> when to process it
  std::set<std::string> in_progress_ ABSL_GUARDED_BY(mu_);
  BindingConditionReconcilerStats stats_ ABSL_GUARDED_BY(mu_);

  // Informer thread only.
  std::map<std::string, std::string> node_labels_;
  absl::Time labels_read_at_ = absl::InfinitePast();

  std::unique_ptr<k8s::Informer> informer_;
  std::vector<std::thread> workers_;
};

absl::StatusOr<std::unique_ptr<BindingConditionReconciler>> BindingConditionReconciler::Start(
    std::shared_ptr<k8s::Client> client, BindingConditionReconcilerOptions options, BindingHandler& handler) {
  const auto invalid = [](const std::string& message) {
    return absl::InvalidArgumentError(absl::StrCat("BindingConditionReconcilerOptions: ", message));
  };
  if (client == nullptr) return invalid("client: Required value");
  if (k8s::FieldErrors errors = k8s::ValidateDriverName(options.driver_name, "driver_name"); !errors.empty()) {
    return invalid(errors.front().ToString());
  }
  if (options.scope == BindingScope::kThisNode && options.node_name.empty()) {
    return invalid("node_name: Required value");
  }
  if (options.scope == BindingScope::kAllNodes && !options.node_name.empty()) {
    return invalid(
        absl::StrCat("node_name: Invalid value: \"", options.node_name, "\": must be empty with scope kAllNodes"));
  }
  if (options.binding_timeout <= absl::ZeroDuration())
    return invalid("binding_timeout: Invalid value: must be positive");
  if (options.workers < 1)
    return invalid(absl::StrCat("workers: Invalid value: ", options.workers, ": must be at least 1"));
  if (options.field_manager.empty()) options.field_manager = options.driver_name + "/binding";

  ClaimStatusWriterOptions writer_options;
  writer_options.driver_name = options.driver_name;
  writer_options.field_manager = options.field_manager;
  writer_options.backoff_initial = options.backoff_initial;
  writer_options.backoff_max = options.backoff_max;
  absl::StatusOr<std::unique_ptr<ClaimStatusWriter>> writer = ClaimStatusWriter::Create(client, writer_options);
  if (!writer.ok()) {
    return invalid(std::string(absl::StripPrefix(writer.status().message(), "ClaimStatusWriterOptions: ")));
  }
  options.logger = options.logger.WithValues({{"component", "BindingConditionReconciler"}});
  auto impl = std::make_shared<Impl>(std::move(client), std::move(options), handler, *std::move(writer));
  if (absl::Status started = impl->StartThreads(); !started.ok()) return started;
  return std::unique_ptr<BindingConditionReconciler>(new BindingConditionReconciler(std::move(impl)));
}

BindingConditionReconciler::~BindingConditionReconciler() { Stop(); }
void BindingConditionReconciler::Stop() { impl_->Stop(); }
bool BindingConditionReconciler::Synced() const { return impl_->Synced(); }
bool BindingConditionReconciler::Idle() const { return impl_->Idle(); }
BindingConditionReconcilerStats BindingConditionReconciler::Stats() const { return impl_->Stats(); }

}  // namespace dra::resourceclaim
