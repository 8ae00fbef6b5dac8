#include "dra/resourceslice/publisher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/thread_name.h"
#include "dra/k8s/field_error.h"
#include "dra/k8s/names.h"
#include "dra/k8s/validation.h"
#include "resourceslice/publisher_impl.h"

namespace dra::resourceslice {
namespace {

using nlohmann::json;

// A burst of changes by someone else defers the repair by at most this many
// drift delays after its first change.
constexpr int kMaxDriftDeferrals = 10;

}  // namespace

Publisher::Impl::Impl(std::shared_ptr<k8s::Client> client, Options options, ErrorHandler on_error)
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

void Publisher::Impl::Update(DriverResources resources) {
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

void Publisher::Impl::UpdateDesired(DriverResources resources) {
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

PublisherStats Publisher::Impl::Stats() const {
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

bool Publisher::Impl::Idle() const {
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

void Publisher::Impl::Stop() {
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

k8s::InformerOptions Publisher::Impl::InformerOptionsOf(const Scope& scope) const {
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

void Publisher::Impl::StartPoolScopeLocked(const std::string& name) {
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

void Publisher::Impl::StartInformer(Scope& scope) {
  absl::StatusOr<std::unique_ptr<k8s::Informer>> informer =
      k8s::Informer::Start(client_, InformerOptionsOf(scope), scope);
  if (!informer.ok()) {
    Report(informer.status(), absl::StrCat("watch ResourceSlices ", scope.field_selector));
    return;
  }
  scope.informer = *std::move(informer);
}

void Publisher::Impl::Wake() {
  dra::MutexLock lock(&mu_);
  cv_.SignalAll();
}

void Publisher::Impl::NoteDriftLocked(const std::string& pool, const std::string& name) {
  const absl::Time now = absl::Now();
  auto [it, inserted] = drift_.try_emplace(pool);
  if (inserted || it->second.names.empty()) it->second.first = now;
  it->second.at =
      std::min(now + options_.drift_repair_delay, it->second.first + kMaxDriftDeferrals * options_.drift_repair_delay);
  it->second.names.insert(name);
  cv_.SignalAll();
}

void Publisher::Impl::ScheduleLocked(const std::string& pool, absl::Time when) {
  auto [it, inserted] = due_.emplace(pool, when);
  if (!inserted) it->second = std::min(it->second, when);
  cv_.SignalAll();
}

void Publisher::Impl::Schedule(const std::string& pool, absl::Time when) {
  dra::MutexLock lock(&mu_);
  ScheduleLocked(pool, when);
}

void Publisher::Impl::Report(const absl::Status& status, std::string_view context) {
  dra::MutexLock lock(&report_mu_);
  errors_.fetch_add(1);
  options_.logger.Error("ResourceSlice publishing failed",
                        {{"context", std::string(context)}, {"err", std::string(status.message())}});
  if (on_error_) on_error_(status, context);
}

std::vector<Publisher::Impl::Scope*> Publisher::Impl::AllScopes() {
  dra::MutexLock lock(&mu_);
  return ScopesLocked();
}

std::vector<Publisher::Impl::Scope*> Publisher::Impl::ScopesOfLocked(const std::string& pool) {
  std::vector<Scope*> scopes;
  if (node_scope_) scopes.push_back(node_scope_.get());
  auto it = pool_scopes_.find(pool);
  if (it != pool_scopes_.end()) scopes.push_back(it->second.get());
  return scopes;
}

void Publisher::Impl::Run() {
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

std::vector<Publisher::Impl::Scope*> Publisher::Impl::ScopesLocked() {
  std::vector<Scope*> scopes;
  if (node_scope_) scopes.push_back(node_scope_.get());
  for (auto& [name, scope] : pool_scopes_) scopes.push_back(scope.get());
  return scopes;
}

std::optional<std::string> Publisher::Impl::NextDuePoolLocked(absl::Time now, absl::Time& wake) {
  for (const auto& [pool, when] : due_) {
    bool ready = true;
    for (Scope* scope : ScopesOfLocked(pool)) ready = ready && scope->Synced();
    if (!ready) continue;
    if (when <= now) return pool;
    wake = std::min(wake, when);
  }
  return std::nullopt;
}

void Publisher::Impl::OnScopeEvent(Scope& scope, const k8s::InformerEvent& event) {
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

void Publisher::Impl::ExplainedLocked(const std::string& pool, const std::string& name) {
  auto it = drift_.find(pool);
  if (it != drift_.end()) it->second.names.erase(name);
}

void Publisher::Impl::Remember(Scope& scope, json object) {
  std::shared_ptr<const CachedSlice> slice = MakeCached(std::move(object));
  const std::string name = StringAt(slice->object, json::json_pointer("/metadata/name"));
  const std::string pool = slice->pool;
  dra::MutexLock lock(&mu_);
  if (CacheOf(scope).StoreUnlessOutdated(name, std::move(slice))) ExplainedLocked(pool, name);
}

void Publisher::Impl::Forget(Scope& scope, const std::string& name, const std::string& pool) {
  dra::MutexLock lock(&mu_);
  CacheOf(scope).Erase(name);
  ExplainedLocked(pool, name);
}

void Publisher::Impl::Reread(Scope& scope, const std::string& name) {
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

Publisher::Impl::Scope* Publisher::Impl::PoolScope(const std::string& pool) {
  dra::MutexLock lock(&mu_);
  return pool_scopes_.at(pool).get();
}

void Publisher::Impl::DropPoolScopeIfUnused(const std::string& pool) {
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

void Publisher::Impl::RemoveAll(Scope& scope) {
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
