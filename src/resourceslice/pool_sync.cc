// One pool's sync: what the worker of publisher.cc runs when a pool is due.
// It observes the pool (desired and cached), validates it when it changed,
// plans with PlanPool (pool_plan.h) and carries the plan out: deletes, then
// updates, then creates.
#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "crashpoint/crash_point.h"
#include "dra/k8s/field_error.h"
#include "resourceslice/canonical.h"
#include "resourceslice/pool_validation.h"
#include "resourceslice/publisher_impl.h"
#include "resourceslice/slice_names.h"

namespace dra::resourceslice {
namespace {

using nlohmann::json;

// Conflicts retried at once before backoff applies.
constexpr int kImmediateConflictRetries = 3;

// The wait after the `failures`-th failure in a row (1-based).
absl::Duration Backoff(const Options& options, int failures) {
  return base::Backoff(failures - 1, options.backoff_initial, options.backoff_max);
}

}  // namespace

void Publisher::Impl::SyncAndSchedule(const std::string& pool) {
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

absl::Status Publisher::Impl::SyncPool(const std::string& name) {
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
  const PoolPlan plan = PlanPool(publishing_, name, desired, AsPlanned(observed.existing, node_local), state.generation,
                                 skew_report_.SkewsOf(name));

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

Publisher::Impl::Observed Publisher::Impl::Observe(const std::string& name) {
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

absl::Status Publisher::Impl::RemovePool(const std::string& name, const std::vector<Existing>& existing) {
  absl::Status status = DeleteAll(existing);
  if (status.ok()) DropPoolScopeIfUnused(name);
  return status;
}

absl::Status Publisher::Impl::ValidateIfChanged(const std::string& name, const std::shared_ptr<const Pool>& desired,
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

absl::Status Publisher::Impl::CheckPool(const std::string& name, const Pool& pool) const {
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

absl::StatusOr<k8s::EncodeOptions> Publisher::Impl::EncodingFor(const Pool& pool) {
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

absl::Status Publisher::Impl::CheckEncodable(const std::string& name, const Pool& pool,
                                             const k8s::EncodeOptions& encoding) {
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

absl::Status Publisher::Impl::LookUpNodeUid() {
  if (!node_uid_.empty()) return absl::OkStatus();
  absl::StatusOr<json> node = client_->Get(k8s::kNodes, "", options_.node_name);
  if (!node.ok()) {
    return absl::Status(node.status().code(), absl::StrCat("look up the Node's UID: ", node.status().message()));
  }
  node_uid_ = StringAt(*node, json::json_pointer("/metadata/uid"));
  return absl::OkStatus();
}

std::vector<ExistingSlice> Publisher::Impl::AsPlanned(const std::vector<Existing>& existing, bool node_local) const {
  std::vector<ExistingSlice> planned;
  for (const Existing& e : existing) {
    planned.push_back({StringAt(e.slice->object, json::json_pointer("/metadata/name")),
                       e.slice->typed ? &e.slice->typed->spec : nullptr, e.slice->resource_version,
                       (e.scope == node_scope_.get()) == node_local});
  }
  return planned;
}

k8s::ResourceSlice Publisher::Impl::DesiredSlice(const std::string& pool_name, const Pool& pool, size_t index,
                                                 int64_t generation) const {
  k8s::ResourceSlice slice;
  const bool node_local = pool.nodes == NodeSelection::kThisNode;
  slice.metadata.generate_name =
      SliceGenerateName(index, options_.driver_name, node_local ? options_.node_name : pool_name);
  slice.spec = DesiredSpec(publishing_, pool_name, pool, index, generation);
  return slice;
}

absl::Status Publisher::Impl::DeleteAll(const std::vector<Existing>& slices) {
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

absl::Status Publisher::Impl::UpdateSlice(const PoolWrites& writes, size_t index, const Existing& match) {
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

absl::Status Publisher::Impl::CreateSlice(const PoolWrites& writes, size_t index, Scope& home, bool owned_by_node) {
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

absl::Status Publisher::Impl::WriteEach(size_t count, const std::function<absl::Status(size_t)>& write) {
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

void Publisher::Impl::Stored(const std::string& pool, size_t index, const k8s::ResourceSliceSpec& sent, Scope& scope,
                             json object) {
  absl::StatusOr<k8s::ResourceSlice> stored = k8s::ResourceSliceFromJson(object);
  const std::string name = StringAt(object, json::json_pointer("/metadata/name"));
  Remember(scope, std::move(object));
  std::optional<std::string> skew = skew_report_.Record(pool, index, name, sent, stored);
  if (skew.has_value()) Report(absl::FailedPreconditionError(*skew), "publish slice");
}

}  // namespace dra::resourceslice
