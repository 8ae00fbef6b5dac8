// PlanPool, the pure half of a pool sync, table-tested without a server:
// which slices are deleted, updated and created, and at which generation.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "resourceslice/pool_plan.h"
#include "resourceslice/slice_names.h"

namespace dra::resourceslice {
namespace {

const Publishing kPublishing{"gpu.example.com", "node-1"};
constexpr char kPool[] = "node-1";

// A node-local pool of `slices` slices of two devices each; `tag` goes in
// every device's "model" attribute.
Pool DesiredPool(size_t slices, const std::string& tag = "a100") {
  Pool pool;
  for (size_t i = 0; i < slices; ++i) {
    Slice& slice = pool.slices.emplace_back();
    for (int d = 0; d < 2; ++d) {
      k8s::Device& device = slice.devices.emplace_back();
      device.name = absl::StrCat("gpu-", i, "-", d);
      device.attributes["model"].string_value = tag;
    }
  }
  return pool;
}

// The server's copy of slice `index` of `pool` at `generation`.
struct Stored {
  std::string name;
  k8s::ResourceSliceSpec spec;
  int64_t resource_version;
};
Stored StoredSlice(const Pool& pool, size_t index, int64_t generation, int64_t resource_version = 10,
                   const std::string& suffix = "abcde") {
  return {SliceGenerateName(index, kPublishing.driver_name, kPublishing.node_name) + suffix,
          DesiredSpec(kPublishing, kPool, pool, index, generation), resource_version};
}

std::vector<ExistingSlice> View(const std::vector<Stored>& stored, std::vector<bool> in_place = {}) {
  std::vector<ExistingSlice> view;
  for (size_t k = 0; k < stored.size(); ++k) {
    view.push_back(
        {stored[k].name, &stored[k].spec, stored[k].resource_version, k < in_place.size() ? bool(in_place[k]) : true});
  }
  return view;
}

using Updates = std::vector<std::pair<size_t, size_t>>;
using Indexes = std::vector<size_t>;

TEST_CASE("plan: a new pool is created at generation 1, an identical one needs nothing") {
  const Pool pool = DesiredPool(3);
  const PoolPlan first = PlanPool(kPublishing, kPool, pool, {}, 0, {});
  CHECK(first.creates == Indexes{0, 1, 2});
  CHECK(first.updates.empty());
  CHECK(first.deletes.empty());
  CHECK(first.generation == 1);

  const std::vector<Stored> stored = {StoredSlice(pool, 0, 1), StoredSlice(pool, 1, 1), StoredSlice(pool, 2, 1)};
  const PoolPlan same = PlanPool(kPublishing, kPool, pool, View(stored), 1, {});
  CHECK(same.creates.empty());
  CHECK(same.updates.empty());
  CHECK(same.deletes.empty());
  CHECK(same.generation == 1);
}

TEST_CASE("plan: one changed slice is one update at the same generation, two changed rewrite all at the next") {
  const Pool old_pool = DesiredPool(3);
  const std::vector<Stored> stored = {StoredSlice(old_pool, 0, 4), StoredSlice(old_pool, 1, 4),
                                      StoredSlice(old_pool, 2, 4)};
  Pool pool = old_pool;
  pool.slices[1].devices[0].attributes["model"].string_value = "h100";
  const PoolPlan one = PlanPool(kPublishing, kPool, pool, View(stored), 4, {});
  CHECK(one.updates == Updates{{1, 1}});
  CHECK(one.generation == 4);

  pool.slices[2].devices[1].attributes["model"].string_value = "h100";
  const PoolPlan two = PlanPool(kPublishing, kPool, pool, View(stored), 4, {});
  CHECK(two.updates == Updates{{0, 0}, {1, 1}, {2, 2}});
  CHECK(two.generation == 5);
  CHECK(two.creates.empty());
}

TEST_CASE("plan: skipNodeOperations goes on every slice, and changing it rewrites all at the next generation") {
  Pool pool = DesiredPool(2);
  pool.skip_node_operations = {"NodePrepareResources", "NodeUnprepareResources"};
  for (size_t i = 0; i < 2; ++i) {
    CHECK(DesiredSpec(kPublishing, kPool, pool, i, 1).skip_node_operations == pool.skip_node_operations);
  }
  const Pool before = DesiredPool(2);
  const std::vector<Stored> stored = {StoredSlice(before, 0, 1), StoredSlice(before, 1, 1)};
  const PoolPlan plan = PlanPool(kPublishing, kPool, pool, View(stored), 1, {});
  CHECK(plan.updates == Updates{{0, 0}, {1, 1}});
  CHECK(plan.generation == 2);
}

TEST_CASE(
    "plan: one missing slice is created at the same generation, with another missing or changed all are rewritten") {
  const Pool pool = DesiredPool(3);
  const std::vector<Stored> one_gone = {StoredSlice(pool, 0, 2), StoredSlice(pool, 2, 2)};
  const PoolPlan one = PlanPool(kPublishing, kPool, pool, View(one_gone), 2, {});
  CHECK(one.creates == Indexes{1});
  CHECK(one.updates.empty());
  CHECK(one.generation == 2);

  const std::vector<Stored> two_gone = {StoredSlice(pool, 2, 2)};
  const PoolPlan two = PlanPool(kPublishing, kPool, pool, View(two_gone), 2, {});
  CHECK(two.creates == Indexes{0, 1});
  CHECK(two.updates == Updates{{2, 0}});
  CHECK(two.generation == 3);

  Pool changed = pool;
  changed.slices[0].devices[0].attributes["model"].string_value = "h100";
  const PoolPlan gone_and_changed = PlanPool(kPublishing, kPool, changed, View(one_gone), 2, {});
  CHECK(gone_and_changed.creates == Indexes{1});
  CHECK(gone_and_changed.updates == Updates{{0, 0}, {2, 1}});
  CHECK(gone_and_changed.generation == 3);

  // A pool that grew: the slices it had say the old count, so they change.
  const Pool grown = DesiredPool(4);
  const std::vector<Stored> before = {StoredSlice(pool, 0, 2), StoredSlice(pool, 1, 2), StoredSlice(pool, 2, 2)};
  const PoolPlan grew = PlanPool(kPublishing, kPool, grown, View(before), 2, {});
  CHECK(grew.creates == Indexes{3});
  CHECK(grew.updates.size() == 3);
  CHECK(grew.generation == 3);

  // Nothing left: a one-slice pool wiped starts again at the next generation.
  const PoolPlan wiped = PlanPool(kPublishing, kPool, DesiredPool(1), {}, 2, {});
  CHECK(wiped.creates == Indexes{0});
  CHECK(wiped.generation == 3);
}

TEST_CASE("plan: obsolete slices: past the pool's end, unreadable, misplaced, badly named, the older of two") {
  const Pool pool = DesiredPool(2);
  std::vector<Stored> stored = {
      StoredSlice(pool, 0, 1, 10),                                            // 0: kept
      StoredSlice(DesiredPool(3), 2, 1),                                      // 1: index 2 of a pool that had 3
      StoredSlice(pool, 1, 1, 12, "zzzzz"),                                   // 2: the newer of two for index 1
      StoredSlice(pool, 1, 1, 11, "yyyyy"),                                   // 3: the older one
      {"not-a-slice-name", DesiredSpec(kPublishing, kPool, pool, 0, 1), 10},  // 4
      StoredSlice(pool, 0, 1, 13, "misplaced"),                               // 5: found only where it does not belong
  };
  std::vector<ExistingSlice> view = View(stored, {true, true, true, true, true, false});
  view.push_back({SliceGenerateName(0, kPublishing.driver_name, kPool) + "unread", nullptr, 20, true});  // 6
  const PoolPlan plan = PlanPool(kPublishing, kPool, pool, view, 1, {});
  std::vector<size_t> deletes = plan.deletes;
  std::sort(deletes.begin(), deletes.end());
  CHECK(deletes == Indexes{1, 3, 4, 5, 6});
  CHECK(plan.updates.empty());  // the kept ones are as desired
  CHECK(plan.creates.empty());
}

TEST_CASE("plan: a rewrite cut short is finished at its generation, a desired floor above it wins") {
  const Pool old_pool = DesiredPool(3);
  Pool pool = DesiredPool(3, "h100");
  // Slices 0 and 1 were rewritten at 7, slice 2 still has the old content at 6.
  const std::vector<Stored> stored = {StoredSlice(pool, 0, 7), StoredSlice(pool, 1, 7), StoredSlice(old_pool, 2, 6)};
  const PoolPlan finish = PlanPool(kPublishing, kPool, pool, View(stored), 6, {});
  CHECK(finish.updates == Updates{{2, 2}});
  CHECK(finish.generation == 7);

  pool.generation = 20;
  const PoolPlan floor = PlanPool(kPublishing, kPool, pool, View(stored), 6, {});
  CHECK(floor.updates == Updates{{0, 0}, {1, 1}, {2, 2}});
  CHECK(floor.generation == 20);
  // The generation never goes back below what the publisher wrote.
  const PoolPlan remembered = PlanPool(kPublishing, kPool, DesiredPool(1), {}, 30, {});
  CHECK(remembered.generation == 31);
}

TEST_CASE("plan: a slice the server stored with fields dropped counts as published until the pool changes") {
  const Pool pool = DesiredPool(1);
  k8s::ResourceSliceSpec sent = DesiredSpec(kPublishing, kPool, pool, 0, 1);
  k8s::ResourceSliceSpec stored_spec = sent;
  stored_spec.devices[0].attributes.erase("model");  // a server without the field
  const std::vector<Stored> stored = {{SliceGenerateName(0, kPublishing.driver_name, kPool) + "x", stored_spec, 5}};
  const std::map<size_t, Skew> skews = {{0, {sent, stored_spec}}};
  CHECK(PlanPool(kPublishing, kPool, pool, View(stored), 1, {}).updates == Updates{{0, 0}});  // unknown skew: rewrite
  CHECK(PlanPool(kPublishing, kPool, pool, View(stored), 1, skews).updates.empty());
  CHECK(PlanPool(kPublishing, kPool, DesiredPool(1, "h100"), View(stored), 1, skews).updates == Updates{{0, 0}});
}

}  // namespace
}  // namespace dra::resourceslice
