#include "resourceslice/pool_plan.h"

#include <algorithm>
#include <optional>

#include "resourceslice/canonical.h"
#include "resourceslice/slice_names.h"

namespace dra::resourceslice {

k8s::ResourceSliceSpec DesiredSpec(const Publishing& publishing, const std::string& pool_name, const Pool& pool,
                                   size_t index, int64_t generation, bool with_content) {
  k8s::ResourceSliceSpec spec;
  spec.driver = publishing.driver_name;
  spec.pool.name = pool_name;
  spec.pool.generation = generation;
  spec.pool.resource_slice_count = static_cast<int64_t>(pool.slices.size());
  spec.skip_node_operations = pool.skip_node_operations;
  switch (pool.nodes) {
    case NodeSelection::kThisNode:
      spec.node_name = publishing.node_name;
      break;
    case NodeSelection::kNodeSelector:
      spec.node_selector = pool.node_selector;
      break;
    case NodeSelection::kAllNodes:
      spec.all_nodes = true;
      break;
    case NodeSelection::kPerDevice:
      spec.per_device_node_selection = true;
      break;
  }
  if (with_content) {
    spec.devices = pool.slices[index].devices;
    spec.shared_counters = pool.slices[index].shared_counters;
  }
  return spec;
}

PoolPlan PlanPool(const Publishing& publishing, const std::string& pool_name, const Pool& desired,
                  const std::vector<ExistingSlice>& existing, int64_t generation_floor,
                  const std::map<size_t, Skew>& skews) {
  PoolPlan plan;
  const size_t count = desired.slices.size();
  int64_t generation = generation_floor;
  for (const ExistingSlice& e : existing) {
    if (e.spec != nullptr) generation = std::max(generation, e.spec->pool.generation);
  }

  std::vector<std::optional<size_t>> matched(count);
  auto newer = [&](size_t a, size_t b) {
    return std::make_pair(existing[a].spec->pool.generation, existing[a].resource_version) >
           std::make_pair(existing[b].spec->pool.generation, existing[b].resource_version);
  };
  for (size_t k = 0; k < existing.size(); ++k) {
    const ExistingSlice& e = existing[k];
    const std::optional<size_t> index = ParseSliceIndex(e.name);
    if (!e.in_place || !index || *index >= count || e.spec == nullptr) {
      plan.deletes.push_back(k);
      continue;
    }
    std::optional<size_t>& slot = matched[*index];
    if (!slot) {
      slot = k;
    } else if (newer(k, *slot)) {
      plan.deletes.push_back(*slot);
      slot = k;
    } else {
      plan.deletes.push_back(k);
    }
  }

  bool unfinished = false;
  size_t missing = 0;
  std::vector<bool> changed(count, false);
  size_t num_changed = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!matched[i]) {
      ++missing;
      continue;
    }
    const k8s::ResourceSliceSpec& stored = *existing[*matched[i]].spec;
    unfinished = unfinished || stored.pool.generation < generation;
    k8s::ResourceSliceSpec want = DesiredSpec(publishing, pool_name, desired, i, generation, false);
    want.shared_counters = desired.slices[i].shared_counters;
    const std::vector<k8s::Device>& devices = desired.slices[i].devices;
    bool same = SameSpec(want, devices, stored);
    if (!same) {
      auto skew = skews.find(i);
      same = skew != skews.end() && SameSpec(want, devices, skew->second.sent) && SameSpec(skew->second.stored, stored);
    }
    changed[i] = !same;
    num_changed += changed[i] ? 1 : 0;
  }

  plan.generation = generation;
  bool rewrite_all = false;
  if (desired.generation > generation) {
    plan.generation = desired.generation;
    rewrite_all = true;
  } else if (!unfinished && (missing + num_changed > 1 || missing == count)) {
    plan.generation = generation + 1;
    rewrite_all = true;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!matched[i]) {
      plan.creates.push_back(i);
    } else if (rewrite_all || changed[i]) {
      plan.updates.emplace_back(i, *matched[i]);
    }
  }
  return plan;
}

}  // namespace dra::resourceslice
