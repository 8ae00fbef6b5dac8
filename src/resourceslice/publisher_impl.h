// The publisher's one worker and what it keeps: publisher.cc schedules pool
// syncs (desired pools, informer events, drift) and keeps the slice caches;
// pool_sync.cc carries out one pool's sync, the plan of pool_plan.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/work_pool.h"
#include "dra/k8s/informer.h"
#include "dra/k8s/resource_slice_json.h"
#include "dra/resourceslice/publisher.h"
#include "nlohmann/json.hpp"
#include "resourceslice/pool_plan.h"
#include "resourceslice/skew_report.h"
#include "resourceslice/slice_cache.h"

namespace dra::resourceslice {

class Publisher::Impl {
 public:
  Impl(std::shared_ptr<k8s::Client> client, Options options, ErrorHandler on_error);
  ~Impl() { Stop(); }

  void Update(DriverResources resources);
  PublisherStats Stats() const;
  bool Idle() const;
  void Stop();

 private:
  // Writes of one pool sync in flight at once.
  static constexpr size_t kParallelWrites = 8;

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

  struct DriftCheck {
    absl::Time first;             // the first change not explained yet
    absl::Time at;                // when the pool is synced
    std::set<std::string> names;  // slices changed by someone else, as far as known
  };

  // publisher.cc: the desired pools, the scopes and their informers.
  void UpdateDesired(DriverResources resources);
  k8s::InformerOptions InformerOptionsOf(const Scope& scope) const;
  void StartPoolScopeLocked(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartInformer(Scope& scope);
  std::vector<Scope*> AllScopes();
  std::vector<Scope*> ScopesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scopes the slices of `pool` can be in.
  std::vector<Scope*> ScopesOfLocked(const std::string& pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Scope* PoolScope(const std::string& pool);
  // A pool that is no longer desired and has no slices left needs no watch.
  void DropPoolScopeIfUnused(const std::string& pool);
  void RemoveAll(Scope& scope);
  void Report(const absl::Status& status, std::string_view context);

  // publisher.cc: scheduling.
  void Run();
  void Wake();
  // A pool whose time has come and whose scopes are listed; else lowers
  // `wake` to the earliest such time.
  std::optional<std::string> NextDuePoolLocked(absl::Time now, absl::Time& wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleLocked(const std::string& pool, absl::Time when) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Schedule(const std::string& pool, absl::Time when);
  // A change to slice `name` that this publisher did not make (as far as it
  // knows yet): the pool is checked after the drift delay unless the
  // publisher's own write explains the change first.
  void NoteDriftLocked(const std::string& pool, const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The publisher's own write of `name` explains a watch event about it that
  // came first.
  void ExplainedLocked(const std::string& pool, const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // publisher.cc: the slice caches.
  SliceCache& CacheOf(Scope& scope) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return scope.cache; }
  void OnScopeEvent(Scope& scope, const k8s::InformerEvent& event);
  void Remember(Scope& scope, nlohmann::json object);
  void Forget(Scope& scope, const std::string& name, const std::string& pool);
  // After a conflict: read the slice again so that the next attempt starts
  // from what the server has.
  void Reread(Scope& scope, const std::string& name);

  // pool_sync.cc: one pool's sync.
  void SyncAndSchedule(const std::string& pool);
  absl::Status SyncPool(const std::string& name);
  Observed Observe(const std::string& name);
  // A pool no longer desired: its slices go, then its watch.
  absl::Status RemovePool(const std::string& name, const std::vector<Existing>& existing);
  // Validates the desired pool unless it is the one validated last; an error
  // is a validation that could not be made (it is retried).
  absl::Status ValidateIfChanged(const std::string& name, const std::shared_ptr<const Pool>& desired, PoolState& state);
  absl::Status CheckPool(const std::string& name, const Pool& pool) const;
  // How the pool's slices are written: PublishingOptions::
  // node_allocatable_shape, else by the server's version where the pool has
  // node allocatable resources.
  absl::StatusOr<k8s::EncodeOptions> EncodingFor(const Pool& pool);
  // A pool written in the 1.36 shape must be expressible in it.
  static absl::Status CheckEncodable(const std::string& name, const Pool& pool, const k8s::EncodeOptions& encoding);
  // The Node's UID, for the owner reference of the slices it owns.
  absl::Status LookUpNodeUid();
  // The cached slices as the plan sees them.
  std::vector<ExistingSlice> AsPlanned(const std::vector<Existing>& existing, bool node_local) const;
  // Slice `index` of a desired pool, at `generation`.
  k8s::ResourceSlice DesiredSlice(const std::string& pool_name, const Pool& pool, size_t index,
                                  int64_t generation) const;
  absl::Status DeleteAll(const std::vector<Existing>& slices);
  // Writes the desired slice `index` over `match`, the cached slice it
  // replaces.
  absl::Status UpdateSlice(const PoolWrites& writes, size_t index, const Existing& match);
  // Creates the desired slice `index`, cached in `home`.
  absl::Status CreateSlice(const PoolWrites& writes, size_t index, Scope& home, bool owned_by_node);
  // Runs write(k) for every k below `count`, up to kParallelWrites at once on
  // the work pool (streams on the client's one HTTP/2 connection: a wiped pool
  // of 79 slices comes back in the time of a few round trips, not 79). Writes
  // not started when one fails or Stop() is called are skipped; returns the
  // first error.
  absl::Status WriteEach(size_t count, const std::function<absl::Status(size_t)>& write);
  // After a write: cache what the server stored, and report when it stored
  // less than was sent (SkewReport). Called by concurrent writes of one pool.
  void Stored(const std::string& pool, size_t index, const k8s::ResourceSliceSpec& sent, Scope& scope,
              nlohmann::json object);

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
  bool have_desired_ ABSL_GUARDED_BY(mu_) = false;                // nothing is synced before the first Update()
  std::map<std::string, absl::Time> due_ ABSL_GUARDED_BY(mu_);    // pools to sync, and when
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

}  // namespace dra::resourceslice
