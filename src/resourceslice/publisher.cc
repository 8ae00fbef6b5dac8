#include "dra/resourceslice/publisher.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "base/thread_name.h"
#include "crashpoint/crash_point.h"
#include "dra/k8s/field_error.h"
#include "dra/k8s/informer.h"
#include "dra/k8s/names.h"
#include "dra/k8s/resource_slice_json.h"
#include "dra/k8s/validation.h"
#include "dra/mutex.h"
#include "resourceslice/canonical.h"
#include "resourceslice/pool_plan.h"
#include "resourceslice/pool_validation.h"
#include "resourceslice/skew_report.h"
#include "resourceslice/slice_cache.h"
#include "resourceslice/slice_names.h"

namespace dra::resourceslice {
namespace {

using nlohmann::json;

// A burst of changes by someone else defers the repair by at most this many
// drift delays after its first change.
constexpr int kMaxDriftDeferrals = 10;
// Writes of one pool sync in flight at once.
constexpr size_t kParallelWrites = 8;
// Conflicts retried at once before backoff applies.
constexpr int kImmediateConflictRetries = 3;

// The wait after the `failures`-th failure in a row (1-based).
absl::Duration Backoff(const Options& options, int failures) {
  return base::Backoff(failures - 1, options.backoff_initial, options.backoff_max);
}

}  // namespace

class Publisher::Impl {
 public:
  Impl(std::shared_ptr<k8s::Client> client, Options options, ErrorHandler on_error)
      : client_(std::move(client)), options_(std::move(options)), on_error_(std::move(on_error)) {
    if (!options_.reconcile_pool.empty()) {
      // Watched from the start, so that slices an earlier instance left are
      // deleted when the first Update() lacks the pool.
      dra::MutexLock lock(&mu_);
      StartPoolScopeLocked(options_.reconcile_pool);
    } else if (!options_.node_name.empty()) {
      node_scope_ = std::make_unique<Scope>(
          this, absl::StrCat("spec.driver=", options_.driver_name, ",spec.nodeName=", options_.node_name));
      StartInformer(*node_scope_);
    }
    node_uid_ = options_.node_uid;
    worker_ = std::thread([this] { Run(); });
    base::NameThread(worker_, "dra-publisher");
  }

  ~Impl() { Stop(); }

  void Update(DriverResources resources) {
    std::vector<std::string> refused;  // reported outside mu_: the handler may call Update()
    if (!options_.reconcile_pool.empty()) {
      for (auto it = resources.pools.begin(); it != resources.pools.end();) {
        if (it->first == options_.reconcile_pool) {
          ++it;
          continue;
        }
        refused.push_back(it->first);
        it = resources.pools.erase(it);
      }
    }
    UpdateDesired(std::move(resources));
    for (const std::string& name : refused) {
      Report(absl::InvalidArgumentError(absl::StrCat("found pool ", k8s::GoQuote(name),
                                                     ", but reconcile_pool only allows pool ",
                                                     k8s::GoQuote(options_.reconcile_pool))),
             absl::StrCat("validate pool ", k8s::GoQuote(name)));
    }
  }

  void UpdateDesired(DriverResources resources) {
    dra::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    for (const auto& [name, pool] : desired_) ScheduleLocked(name, now);
    std::map<std::string, std::shared_ptr<const Pool>> desired;
    for (auto& [name, pool] : resources.pools) {
      ScheduleLocked(name, now);
      if (pool.nodes != NodeSelection::kThisNode && !pool_scopes_.contains(name)) StartPoolScopeLocked(name);
      // An unchanged pool keeps its object, which tells the worker it needs
      // no new validation.
      auto old = desired_.find(name);
      if (old != desired_.end() && *old->second == pool) {
        desired.emplace(name, old->second);
      } else {
        desired.emplace(name, std::make_shared<const Pool>(std::move(pool)));
      }
    }
    desired_ = std::move(desired);
    have_desired_ = true;
    cv_.SignalAll();
  }

  PublisherStats Stats() const {
    PublisherStats stats;
    stats.creates = creates_.load();
    stats.updates = updates_.load();
    stats.deletes = deletes_.load();
    stats.errors = errors_.load();
    stats.published_devices = published_devices_.load();
    stats.lists = lists_.load();
    stats.watch_events = watch_events_.load();
    return stats;
  }

  bool Idle() const {
    dra::MutexLock lock(&mu_);
    if (!have_desired_ || !due_.empty() || busy_) return false;
    for (const auto& [pool, drift] : drift_) {
      if (!drift.names.empty()) return false;
    }
    if (node_scope_ && !node_scope_->Synced()) return false;
    for (const auto& [name, scope] : pool_scopes_) {
      if (!scope->Synced()) return false;
    }
    return true;
  }

  void Stop() {
    {
      dra::MutexLock lock(&mu_);
      if (stopped_) return;
      stopped_ = true;
      stop_requested_ = true;
      cv_.SignalAll();
    }
    worker_.join();
    std::vector<Scope*> scopes = AllScopes();
    for (Scope* scope : scopes) scope->informer->Stop();  // outside mu_, which its handler takes
    if (options_.remove_on_stop) {
      for (Scope* scope : scopes) RemoveAll(*scope);
    }
  }

 private:
  // The slices one field selector selects, as this publisher knows them:
  // from its informer and from its own writes.
  struct Scope final : k8s::InformerHandler {
    Scope(Impl* impl, std::string selector) : owner(impl), field_selector(std::move(selector)) {}

    void OnEvent(const k8s::InformerEvent& event) override { owner->OnScopeEvent(*this, event); }
    void OnSynced() override {
      owner->lists_.fetch_add(1);
      owner->Wake();
    }
    void OnError(const absl::Status& status, std::string_view context) override { owner->Report(status, context); }
    // Listed, and no relist due: the slices reflect the server.
    bool Synced() const { return informer != nullptr && informer->Synced(); }

    Impl* const owner;
    const std::string field_selector;
    // For a server that does not know a field of field_selector; set
    // before the informer starts.
    std::optional<k8s::InformerOptions::FieldSelectorFallback> fallback;
    // Reached only through Impl::CacheOf(), which requires Impl::mu_.
    SliceCache cache;
    // Set once after construction; last: its thread ends before the rest goes.
    std::unique_ptr<k8s::Informer> informer;
  };

  SliceCache& CacheOf(Scope& scope) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return scope.cache; }

  k8s::InformerOptions InformerOptionsOf(const Scope& scope) const {
    k8s::InformerOptions options;
    options.resource = k8s::kResourceSlices;
    options.field_selector = scope.field_selector;
    options.field_selector_fallback = scope.fallback;
    // Whole objects, listed through a watch-list stream (one request), as
    // the Go controller's informer does. A metadata-only watch would save
    // receiving this publisher's own writes a second time (on the wire the
    // gzipped stream saves most of that), but needs a LIST and a WATCH and a
    // GET for each change by someone else: a request more per node and
    // relist, for kube-apiserver CPU that bench/scale could not tell apart
    // from this within its noise.
    options.backoff_initial = options_.backoff_initial;
    options.backoff_max = options_.backoff_max;
    return options;
  }

  void StartPoolScopeLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto scope =
        std::make_unique<Scope>(this, absl::StrCat("spec.driver=", options_.driver_name, ",spec.pool.name=", name));
    // Before Kubernetes 1.37 spec.pool.name is no field label: the
    // driver's slices, of this pool.
    scope->fallback = k8s::InformerOptions::FieldSelectorFallback{
        absl::StrCat("spec.driver=", options_.driver_name), [pool_name = name](const json& slice) {
          return StringAt(slice, json::json_pointer("/spec/pool/name")) == pool_name;
        }};
    StartInformer(*scope);
    pool_scopes_.emplace(name, std::move(scope));
  }

  void StartInformer(Scope& scope) {
    absl::StatusOr<std::unique_ptr<k8s::Informer>> informer =
        k8s::Informer::Start(client_, InformerOptionsOf(scope), scope);
    if (!informer.ok()) {
      Report(informer.status(), absl::StrCat("watch ResourceSlices ", scope.field_selector));
      return;
    }
    scope.informer = *std::move(informer);
  }

  void Wake() {
    dra::MutexLock lock(&mu_);
    cv_.SignalAll();
  }

  // Per-pool bookkeeping of the worker.
  struct PoolState {
    int64_t generation = 0;  // highest seen or written: generations never go back
    // The desired pool `validation` is about; weak, so that a replaced pool
    // is freed at once (an unchanged one keeps its object, see Update()).
    std::weak_ptr<const Pool> validated;
    absl::Status validation;
    k8s::EncodeOptions encoding;    // of the validated pool
    int64_t published_devices = 0;  // in the server as desired, at the last successful sync
    int failures = 0;
    int conflicts = 0;
  };

  // A slice of the pool being synced, and where it is cached.
  struct Existing {
    Scope* scope;
    std::shared_ptr<const CachedSlice> slice;
  };

  // A change to slice `name` that this publisher did not make (as far as it
  // knows yet): the pool is checked after the drift delay unless the
  // publisher's own write explains the change first.
  void NoteDriftLocked(const std::string& pool, const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const absl::Time now = absl::Now();
    auto [it, inserted] = drift_.try_emplace(pool);
    if (inserted || it->second.names.empty()) it->second.first = now;
    it->second.at = std::min(now + options_.drift_repair_delay,
                             it->second.first + kMaxDriftDeferrals * options_.drift_repair_delay);
    it->second.names.insert(name);
    cv_.SignalAll();
  }

  void ScheduleLocked(const std::string& pool, absl::Time when) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto [it, inserted] = due_.emplace(pool, when);
    if (!inserted) it->second = std::min(it->second, when);
    cv_.SignalAll();
  }

  void Schedule(const std::string& pool, absl::Time when) {
    dra::MutexLock lock(&mu_);
    ScheduleLocked(pool, when);
  }

  void Report(const absl::Status& status, std::string_view context) {
    dra::MutexLock lock(&report_mu_);
    errors_.fetch_add(1);
    options_.logger.Error("ResourceSlice publishing failed",
                          {{"context", std::string(context)}, {"err", std::string(status.message())}});
    if (on_error_) on_error_(status, context);
  }

  std::vector<Scope*> AllScopes() {
    dra::MutexLock lock(&mu_);
    return ScopesLocked();
  }

  // Scopes the slices of `pool` can be in.
  std::vector<Scope*> ScopesOfLocked(const std::string& pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<Scope*> scopes;
    if (node_scope_) scopes.push_back(node_scope_.get());
    auto it = pool_scopes_.find(pool);
    if (it != pool_scopes_.end()) scopes.push_back(it->second.get());
    return scopes;
  }

  void Run() {
    dra::MutexLock lock(&mu_);
    while (!stopped_) {
      const absl::Time now = absl::Now();
      absl::Time wake = absl::InfiniteFuture();

      // Drift checks whose time has come become syncs, unless the
      // publisher's own writes explained every change.
      for (auto it = drift_.begin(); it != drift_.end();) {
        if (it->second.names.empty()) {
          it = drift_.erase(it);
        } else if (it->second.at <= now) {
          ScheduleLocked(it->first, now);
          it = drift_.erase(it);
        } else {
          wake = std::min(wake, it->second.at);
          ++it;
        }
      }
      if (have_desired_) {
        std::optional<std::string> pool = NextDuePoolLocked(now, wake);
        if (pool) {
          due_.erase(*pool);
          busy_ = true;
          mu_.Unlock();
          SyncAndSchedule(*pool);
          mu_.Lock();
          busy_ = false;
          continue;
        }
      }
      cv_.WaitWithDeadline(&mu_, wake);
    }
  }

  std::vector<Scope*> ScopesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<Scope*> scopes;
    if (node_scope_) scopes.push_back(node_scope_.get());
    for (auto& [name, scope] : pool_scopes_) scopes.push_back(scope.get());
    return scopes;
  }

  // A pool whose time has come and whose scopes are listed; else lowers
  // `wake` to the earliest such time.
  std::optional<std::string> NextDuePoolLocked(absl::Time now, absl::Time& wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [pool, when] : due_) {
      bool ready = true;
      for (Scope* scope : ScopesOfLocked(pool)) ready = ready && scope->Synced();
      if (!ready) continue;
      if (when <= now) return pool;
      wake = std::min(wake, when);
    }
    return std::nullopt;
  }

  void OnScopeEvent(Scope& scope, const k8s::InformerEvent& event) {
    const std::string name = StringAt(event.object, json::json_pointer("/metadata/name"));
    dra::MutexLock lock(&mu_);
    if (!event.from_list) watch_events_.fetch_add(1);
    const std::vector<std::string> pools = CacheOf(scope).Apply(name, event);
    // A list (the first, or one after the watch's history was gone) shows
    // the server as it is, whole: the pools it shows changed are synced now,
    // with no drift delay. A change the watch shows was made by someone else
    // (the cache knew this publisher's own): its pools are checked for drift.
    const absl::Time now = absl::Now();
    for (const std::string& pool : pools) {
      if (event.from_list) {
        ScheduleLocked(pool, now);
      } else {
        NoteDriftLocked(pool, name);
      }
    }
  }

  // The publisher's own write of `name` explains a watch event about it that
  // came first.
  void ExplainedLocked(const std::string& pool, const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = drift_.find(pool);
    if (it != drift_.end()) it->second.names.erase(name);
  }

  void Remember(Scope& scope, json object) {
    std::shared_ptr<const CachedSlice> slice = MakeCached(std::move(object));
    const std::string name = StringAt(slice->object, json::json_pointer("/metadata/name"));
    const std::string pool = slice->pool;
    dra::MutexLock lock(&mu_);
    if (CacheOf(scope).StoreUnlessOutdated(name, std::move(slice))) ExplainedLocked(pool, name);
  }

  void Forget(Scope& scope, const std::string& name, const std::string& pool) {
    dra::MutexLock lock(&mu_);
    CacheOf(scope).Erase(name);
    ExplainedLocked(pool, name);
  }

  // After a conflict: read the slice again so that the next attempt starts
  // from what the server has.
  void Reread(Scope& scope, const std::string& name) {
    absl::StatusOr<json> fresh = client_->Get(k8s::kResourceSlices, "", name);
    if (fresh.ok()) {
      std::shared_ptr<const CachedSlice> slice = MakeCached(*std::move(fresh));
      dra::MutexLock lock(&mu_);
      CacheOf(scope).StoreUnlessOutdated(name, std::move(slice));
    } else if (absl::IsNotFound(fresh.status())) {
      dra::MutexLock lock(&mu_);
      CacheOf(scope).Erase(name);
    }
  }

  void SyncAndSchedule(const std::string& pool) {
    absl::Status status = SyncPool(pool);
    PoolState& state = pools_[pool];
    if (stop_requested_) return;
    int64_t published = 0;
    for (const auto& [name, pool_state] : pools_) published += pool_state.published_devices;
    published_devices_.store(published);
    if (status.ok()) {
      state.failures = 0;
      state.conflicts = 0;
      return;
    }
    // Someone deleted a slice while it was being updated (an admin's wipe
    // in progress): not an error, the next sync creates it again.
    if (absl::IsNotFound(status) && state.conflicts++ < kImmediateConflictRetries) {
      options_.logger.InfoV(4, "ResourceSlice deleted under an update; syncing again", {{"pool", pool}});
      Schedule(pool, absl::Now());
      return;
    }
    Report(status, absl::StrCat("sync pool ", k8s::GoQuote(pool)));
    if (k8s::IsConflict(status) && state.conflicts++ < kImmediateConflictRetries) {
      Schedule(pool, absl::Now());
    } else {
      Schedule(pool, absl::Now() + Backoff(options_, ++state.failures));
    }
  }

  // Slice `index` of a desired pool, at `generation`.
  // Without `with_content`, devices and shared counters are left empty.
  k8s::ResourceSlice DesiredSlice(const std::string& pool_name, const Pool& pool, size_t index,
                                  int64_t generation) const {
    k8s::ResourceSlice slice;
    const bool node_local = pool.nodes == NodeSelection::kThisNode;
    slice.metadata.generate_name =
        SliceGenerateName(index, options_.driver_name, node_local ? options_.node_name : pool_name);
    slice.spec = DesiredSpec(publishing_, pool_name, pool, index, generation);
    return slice;
  }

  absl::Status CheckPool(const std::string& name, const Pool& pool) const {
    if (pool.nodes == NodeSelection::kThisNode && options_.node_name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pool ", k8s::GoQuote(name), ": nodes: Invalid value: kThisNode: needs Options::node_name"));
    }
    if (pool.nodes == NodeSelection::kThisNode && !options_.reconcile_pool.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pool ", k8s::GoQuote(name),
                       ": nodes: Invalid value: kThisNode: reconcile_pool is for a pool that other nodes see "
                       "(kNodeSelector, kAllNodes or kPerDevice)"));
    }
    if (pool.slices.size() > kMaxSliceIndex + 1) {
      return absl::InvalidArgumentError(absl::StrCat("pool ", k8s::GoQuote(name),
                                                     ": slices: Too many: ", pool.slices.size(), ": must have at most ",
                                                     kMaxSliceIndex + 1, " items"));
    }
    std::string warning;
    absl::Status status = ValidatePool(
        name, pool, options_.driver_domain_names, [&](size_t index) { return DesiredSlice(name, pool, index, 1); },
        warning);
    if (!warning.empty()) {
      options_.logger.Warning("Names qualified with the driver's own domain; the Go helper refuses them from 0.38",
                              {{"pool", name}, {"names", warning}});
    }
    return status;
  }

  // What a pool sync starts from: the desired pool (null when it is no
  // longer desired) and its slices as cached.
  struct Observed {
    std::shared_ptr<const Pool> desired;
    std::vector<Existing> existing;
  };

  // One pool sync's writes: slices of the desired `pool`, at `generation`.
  struct PoolWrites {
    const std::string& pool;
    const Pool& desired;
    const PoolState& state;
    int64_t generation;
  };

  absl::Status SyncPool(const std::string& name) {
    const Observed observed = Observe(name);
    PoolState& state = pools_[name];
    state.published_devices = 0;
    if (!observed.desired) return RemovePool(name, observed.existing);
    if (absl::Status status = ValidateIfChanged(name, observed.desired, state); !status.ok()) return status;
    if (!state.validation.ok()) return absl::OkStatus();  // not retried until the pool changes

    const Pool& desired = *observed.desired;
    const bool node_local = desired.nodes == NodeSelection::kThisNode;
    // A reconciled pool goes with the node that publishes it, as in Go.
    const bool owned_by_node = node_local || (!options_.reconcile_pool.empty() && !options_.node_name.empty());
    if (owned_by_node) {
      if (absl::Status status = LookUpNodeUid(); !status.ok()) return status;
    }
    const PoolPlan plan = PlanPool(publishing_, name, desired, AsPlanned(observed.existing, node_local),
                                   state.generation, skew_report_.SkewsOf(name));

    // Deletes first: devices the driver no longer has go even if the new
    // slices cannot be written.
    std::vector<Existing> obsolete;
    for (size_t k : plan.deletes) obsolete.push_back(observed.existing[k]);
    absl::Status status = DeleteAll(obsolete);
    if (!status.ok()) return status;
    const PoolWrites writes{name, desired, state, plan.generation};
    status = WriteEach(plan.updates.size(), [&](size_t k) {
      const auto [index, match] = plan.updates[k];
      return UpdateSlice(writes, index, observed.existing[match]);
    });
    if (!status.ok()) return status;
    Scope* home = node_local ? node_scope_.get() : PoolScope(name);
    status = WriteEach(plan.creates.size(),
                       [&](size_t k) { return CreateSlice(writes, plan.creates[k], *home, owned_by_node); });
    if (!status.ok()) return status;
    if (stop_requested_) return absl::CancelledError("stopping");
    state.generation = std::max(state.generation, plan.generation);
    for (const auto& slice : desired.slices) state.published_devices += static_cast<int64_t>(slice.devices.size());
    return absl::OkStatus();
  }

  Observed Observe(const std::string& name) {
    Observed observed;
    dra::MutexLock lock(&mu_);
    drift_.erase(name);  // this sync sees every change cached so far
    auto it = desired_.find(name);
    if (it != desired_.end()) observed.desired = it->second;
    for (Scope* scope : ScopesOfLocked(name)) {
      const bool pool_scope = scope != node_scope_.get();
      for (const auto& [slice_name, slice] : CacheOf(*scope).slices()) {
        // The pool scope also sees other nodes' slices of a pool by that name.
        if (slice->pool == name && (!pool_scope || !slice->node_local)) observed.existing.push_back({scope, slice});
      }
    }
    return observed;
  }

  // A pool no longer desired: its slices go, then its watch.
  absl::Status RemovePool(const std::string& name, const std::vector<Existing>& existing) {
    absl::Status status = DeleteAll(existing);
    if (status.ok()) DropPoolScopeIfUnused(name);
    return status;
  }

  // Validates the desired pool unless it is the one validated last; an error
  // is a validation that could not be made (it is retried).
  absl::Status ValidateIfChanged(const std::string& name, const std::shared_ptr<const Pool>& desired,
                                 PoolState& state) {
    if (state.validated.lock() == desired) return absl::OkStatus();
    absl::StatusOr<k8s::EncodeOptions> encoding = EncodingFor(*desired);
    if (!encoding.ok()) return encoding.status();
    state.encoding = *encoding;
    state.validation = CheckPool(name, *desired);
    if (state.validation.ok()) state.validation = CheckEncodable(name, *desired, state.encoding);
    state.validated = desired;
    skew_report_.Forget(name);
    if (!state.validation.ok()) Report(state.validation, absl::StrCat("validate pool ", k8s::GoQuote(name)));
    return absl::OkStatus();
  }

  // The Node's UID, for the owner reference of the slices it owns.
  absl::Status LookUpNodeUid() {
    if (!node_uid_.empty()) return absl::OkStatus();
    absl::StatusOr<json> node = client_->Get(k8s::kNodes, "", options_.node_name);
    if (!node.ok()) {
      return absl::Status(node.status().code(), absl::StrCat("look up the Node's UID: ", node.status().message()));
    }
    node_uid_ = StringAt(*node, json::json_pointer("/metadata/uid"));
    return absl::OkStatus();
  }

  // The cached slices as the plan sees them.
  std::vector<ExistingSlice> AsPlanned(const std::vector<Existing>& existing, bool node_local) const {
    std::vector<ExistingSlice> planned;
    for (const Existing& e : existing) {
      planned.push_back({StringAt(e.slice->object, json::json_pointer("/metadata/name")),
                         e.slice->typed ? &e.slice->typed->spec : nullptr, e.slice->resource_version,
                         (e.scope == node_scope_.get()) == node_local});
    }
    return planned;
  }

  // Writes the desired slice `index` over `match`, the cached slice it
  // replaces.
  absl::Status UpdateSlice(const PoolWrites& writes, size_t index, const Existing& match) {
    k8s::ResourceSlice want = DesiredSlice(writes.pool, writes.desired, index, writes.generation);
    const k8s::ResourceSlice& stored = *match.slice->typed;
    KeepTaintTimes(want.spec.devices, stored.spec.devices);
    json object = match.slice->object;
    object["apiVersion"] = "resource.k8s.io/v1";
    object["kind"] = "ResourceSlice";
    absl::StatusOr<json> encoded = k8s::ToJson(want, writes.state.encoding);
    if (!encoded.ok()) return encoded.status();
    object["spec"] = std::move((*encoded)["spec"]);
    DRA_CRASH_POINT("publisher.before_write");
    absl::StatusOr<json> updated = client_->Update(k8s::kResourceSlices, "", object);
    DRA_CRASH_POINT("publisher.after_write");
    if (!updated.ok()) {
      if (k8s::IsConflict(updated.status()) || absl::IsNotFound(updated.status())) {
        Reread(*match.scope, stored.metadata.name);
      }
      return updated.status();
    }
    updates_.fetch_add(1);
    options_.logger.InfoV(4, "Updated ResourceSlice", {{"name", stored.metadata.name}, {"pool", writes.pool}});
    Stored(writes.pool, index, want.spec, *match.scope, *std::move(updated));
    return absl::OkStatus();
  }

  // Creates the desired slice `index`, cached in `home`.
  absl::Status CreateSlice(const PoolWrites& writes, size_t index, Scope& home, bool owned_by_node) {
    k8s::ResourceSlice want = DesiredSlice(writes.pool, writes.desired, index, writes.generation);
    if (owned_by_node) {
      k8s::OwnerReference owner;
      owner.api_version = "v1";
      owner.kind = "Node";
      owner.name = options_.node_name;
      owner.uid = node_uid_;
      owner.controller = true;
      want.metadata.owner_references.push_back(std::move(owner));
    }
    DRA_CRASH_POINT("publisher.before_write");
    absl::StatusOr<json> encoded = k8s::ToJson(want, writes.state.encoding);
    if (!encoded.ok()) return encoded.status();
    absl::StatusOr<json> created = client_->Create(k8s::kResourceSlices, "", *encoded);
    DRA_CRASH_POINT("publisher.after_write");
    if (!created.ok()) return created.status();
    creates_.fetch_add(1);
    options_.logger.InfoV(4, "Created ResourceSlice",
                          {{"name", StringAt(*created, json::json_pointer("/metadata/name"))}, {"pool", writes.pool}});
    Stored(writes.pool, index, want.spec, home, *std::move(created));
    return absl::OkStatus();
  }

  Scope* PoolScope(const std::string& pool) {
    dra::MutexLock lock(&mu_);
    return pool_scopes_.at(pool).get();
  }

  // Runs write(k) for every k below `count`, up to kParallelWrites at once on
  // the work pool (streams on the client's one HTTP/2 connection: a wiped pool
  // of 79 slices comes back in the time of a few round trips, not 79). Writes
  // not started when one fails or Stop() is called are skipped; returns the
  // first error.
  absl::Status WriteEach(size_t count, const std::function<absl::Status(size_t)>& write) {
    std::atomic<bool> failed{false};
    dra::Mutex mu;
    absl::Status first_error;
    work_pool_->ParallelFor(count, kParallelWrites, [&](size_t k) {
      if (failed || stop_requested_) return;
      absl::Status status = write(k);
      if (status.ok()) return;
      failed = true;
      dra::MutexLock lock(&mu);
      if (first_error.ok()) first_error = std::move(status);
    });
    return first_error;
  }

  // After a write: cache what the server stored, and report when it stored
  // less than was sent (SkewReport). Called by concurrent writes of one pool.
  void Stored(const std::string& pool, size_t index, const k8s::ResourceSliceSpec& sent, Scope& scope, json object) {
    absl::StatusOr<k8s::ResourceSlice> stored = k8s::ResourceSliceFromJson(object);
    const std::string name = StringAt(object, json::json_pointer("/metadata/name"));
    Remember(scope, std::move(object));
    std::optional<std::string> skew = skew_report_.Record(pool, index, name, sent, stored);
    if (skew.has_value()) Report(absl::FailedPreconditionError(*skew), "publish slice");
  }

  // How the pool's slices are written: PublishingOptions::
  // node_allocatable_shape, else by the server's version where the pool has
  // node allocatable resources.
  absl::StatusOr<k8s::EncodeOptions> EncodingFor(const Pool& pool) {
    k8s::EncodeOptions encoding;
    if (options_.node_allocatable_shape.has_value()) {
      encoding.node_allocatable_shape = *options_.node_allocatable_shape;
      return encoding;
    }
    const bool any = absl::c_any_of(pool.slices, [](const Slice& slice) {
      return absl::c_any_of(slice.devices, [](const k8s::Device& d) { return !d.node_allocatable_resources.empty(); });
    });
    if (!any) return encoding;
    absl::StatusOr<std::string> version = skew_report_.ServerVersion();
    if (!version.ok()) {
      return absl::Status(version.status().code(),
                          absl::StrCat("ask the API server's version for the shape of nodeAllocatableResources: ",
                                       version.status().message()));
    }
    if (absl::StartsWith(*version, "v1.36."))
      encoding.node_allocatable_shape = k8s::NodeAllocatableShape::kLegacyMappings;
    return encoding;
  }

  // A pool written in the 1.36 shape must be expressible in it.
  static absl::Status CheckEncodable(const std::string& name, const Pool& pool, const k8s::EncodeOptions& encoding) {
    if (encoding.node_allocatable_shape == k8s::NodeAllocatableShape::kResources) return absl::OkStatus();
    for (size_t i = 0; i < pool.slices.size(); ++i) {
      k8s::ResourceSlice slice;
      slice.spec.devices = pool.slices[i].devices;
      absl::StatusOr<json> encoded = k8s::ToJson(slice, encoding);
      if (!encoded.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("pool ", k8s::GoQuote(name), ", slice ", i, ": ",
                                                       encoded.status().message(), " (the server's shape)"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status DeleteAll(const std::vector<Existing>& slices) {
    for (const Existing& e : slices) {
      const std::string name = StringAt(e.slice->object, json::json_pointer("/metadata/name"));
      k8s::Preconditions preconditions;
      preconditions.uid = StringAt(e.slice->object, json::json_pointer("/metadata/uid"));
      preconditions.resource_version = StringAt(e.slice->object, json::json_pointer("/metadata/resourceVersion"));
      DRA_CRASH_POINT("publisher.before_write");
      absl::Status status = client_->Delete(k8s::kResourceSlices, "", name, preconditions);
      DRA_CRASH_POINT("publisher.after_write");
      if (status.ok()) {
        deletes_.fetch_add(1);
        options_.logger.InfoV(4, "Deleted ResourceSlice", {{"name", name}, {"pool", e.slice->pool}});
        Forget(*e.scope, name, e.slice->pool);
      } else if (absl::IsNotFound(status)) {
        Forget(*e.scope, name, e.slice->pool);
      } else {
        if (k8s::IsConflict(status)) Reread(*e.scope, name);
        return status;
      }
    }
    return absl::OkStatus();
  }

  // A pool that is no longer desired and has no slices left needs no watch.
  void DropPoolScopeIfUnused(const std::string& pool) {
    std::unique_ptr<Scope> scope;
    {
      dra::MutexLock lock(&mu_);
      auto it = pool_scopes_.find(pool);
      if (it == pool_scopes_.end() || pool == options_.reconcile_pool || desired_.contains(pool) ||
          CacheOf(*it->second).slices().empty()) {
        return;
      }
      scope = std::move(it->second);
      pool_scopes_.erase(it);
    }
    // Destroyed here, outside mu_, which its informer's handler takes.
  }

  void RemoveAll(Scope& scope) {
    if (!scope.Synced()) {
      bool fell_back = false;
      absl::StatusOr<k8s::ListResult> list = k8s::ListAsInformer(*client_, InformerOptionsOf(scope), fell_back);
      if (!list.ok()) {
        Report(list.status(), absl::StrCat("list ResourceSlices ", scope.field_selector));
        return;
      }
      dra::MutexLock lock(&mu_);
      for (json& item : list->items) {
        std::string name = StringAt(item, json::json_pointer("/metadata/name"));
        CacheOf(scope).Store(name, MakeCached(std::move(item)));
      }
    }
    std::vector<Existing> all;
    {
      dra::MutexLock lock(&mu_);
      for (const auto& [name, slice] : CacheOf(scope).slices()) all.push_back({&scope, slice});
    }
    absl::Status status = DeleteAll(all);
    if (!status.ok()) Report(status, "remove ResourceSlices on stop");
  }

  const std::shared_ptr<k8s::Client> client_;
  const Options options_;
  const std::shared_ptr<WorkPool> work_pool_ =
      options_.work_pool != nullptr ? options_.work_pool : std::make_shared<WorkPool>(kParallelWrites - 1);
  const Publishing publishing_{options_.driver_name, options_.node_name};
  const ErrorHandler on_error_;
  SkewReport skew_report_{client_};

  mutable dra::Mutex mu_;
  dra::CondVar cv_;
  dra::Mutex report_mu_;                                                             // one error handler call at a time
  std::map<std::string, std::shared_ptr<const Pool>> desired_ ABSL_GUARDED_BY(mu_);  // by pool name
  bool have_desired_ ABSL_GUARDED_BY(mu_) = false;              // nothing is synced before the first Update()
  std::map<std::string, absl::Time> due_ ABSL_GUARDED_BY(mu_);  // pools to sync, and when
  struct DriftCheck {
    absl::Time first;             // the first change not explained yet
    absl::Time at;                // when the pool is synced
    std::set<std::string> names;  // slices changed by someone else, as far as known
  };
  std::map<std::string, DriftCheck> drift_ ABSL_GUARDED_BY(mu_);  // by pool
  bool busy_ ABSL_GUARDED_BY(mu_) = false;                        // a pool sync is running
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<Scope> node_scope_;  // set at construction
  std::map<std::string, std::unique_ptr<Scope>> pool_scopes_ ABSL_GUARDED_BY(mu_);

  // Worker thread only.
  std::map<std::string, PoolState> pools_;
  std::string node_uid_;

  std::atomic<bool> stop_requested_{false};  // Stop() began: cut a long sync short
  std::atomic<int64_t> creates_{0};
  std::atomic<int64_t> updates_{0};
  std::atomic<int64_t> deletes_{0};
  std::atomic<int64_t> errors_{0};
  std::atomic<int64_t> published_devices_{0};
  std::atomic<int64_t> lists_{0};
  std::atomic<int64_t> watch_events_{0};

  std::thread worker_;  // last: starts after everything above exists
};

absl::StatusOr<std::unique_ptr<Publisher>> Publisher::Start(std::shared_ptr<k8s::Client> client, Options options,
                                                            ErrorHandler on_error) {
  if (client == nullptr) return absl::InvalidArgumentError("resourceslice::Publisher: client: Required value");
  if (k8s::FieldErrors errors = k8s::ValidateDriverName(options.driver_name, "driver_name"); !errors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("resourceslice::Options: ", errors.front().ToString()));
  }
  if (!options.node_name.empty()) {
    std::vector<std::string> problems = k8s::IsDns1123Subdomain(options.node_name);
    if (!problems.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("resourceslice::Options: node_name: Invalid value: ", k8s::GoQuote(options.node_name), ": ",
                       absl::StrJoin(problems, "; ")));
    }
  }
  if (options.backoff_initial <= absl::ZeroDuration() || options.backoff_max < options.backoff_initial) {
    return absl::InvalidArgumentError(
        "resourceslice::Options: backoff_initial must be positive and at most backoff_max");
  }
  if (options.drift_repair_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("resourceslice::Options: drift_repair_delay must not be negative");
  }
  return std::unique_ptr<Publisher>(
      new Publisher(std::make_unique<Impl>(std::move(client), std::move(options), std::move(on_error))));
}

Publisher::Publisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Publisher::~Publisher() = default;
void Publisher::Update(DriverResources resources) { impl_->Update(std::move(resources)); }
PublisherStats Publisher::Stats() const { return impl_->Stats(); }
bool Publisher::Idle() const { return impl_->Idle(); }
void Publisher::Stop() { impl_->Stop(); }

}  // namespace dra::resourceslice
