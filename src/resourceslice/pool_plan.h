// The pure half of a pool sync (the Go resourceslice controller's
// syncPool): from the desired pool and the slices the server has, which
// slices to delete, update and create, and at which pool generation. No
// I/O; the publisher carries the plan out.
//
// The rules: an existing slice matches the desired slice whose index its
// name starts with (slice_names.h); one in the wrong place (a node-local
// pool's slice found only by the pool's selector, or the reverse), with an
// index past the pool's end, or that the codec could not read is obsolete,
// and of two for one index the one with the lower (generation,
// resourceVersion) is. The generation is the highest any slice or the floor
// has. Slices below it mean a rewrite was cut short: it is finished at that
// generation, each stale or changed slice updated. Otherwise more than one
// slice missing or changed is a rewrite of all of them at the next
// generation (so that the scheduler never sees a mix), and a single one a
// create or an update at the same generation, unless no slice is left (what
// the pool looked like at that generation is unknown): the Go controller bumps the
// generation for a missing slice too, which makes a cluster-wide DELETE
// collection that removes a pool's slices seconds apart cost an update of
// every slice left (bench/scale measured 2 creates and 2 updates per
// 2-slice pool against 2 creates); a desired Pool::generation above it is
// a rewrite at that generation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dra/k8s/resource_slice.h"
#include "dra/resourceslice/driver_resources.h"

namespace dra::resourceslice {

// Who publishes: the spec fields a slice takes from the publisher.
struct Publishing {
  std::string driver_name;
  std::string node_name;  // for NodeSelection::kThisNode
};

// The spec of slice `index` of `pool` (named `pool_name`) at `generation`;
// without `with_content` its devices and shared counters are left empty.
k8s::ResourceSliceSpec DesiredSpec(const Publishing& publishing, const std::string& pool_name, const Pool& pool,
                                   size_t index, int64_t generation, bool with_content = true);

// A slice of the pool as the server last showed it.
struct ExistingSlice {
  std::string name;
  const k8s::ResourceSliceSpec* spec = nullptr;  // nullptr: the codec could not read it
  int64_t resource_version = 0;
  bool in_place = true;  // found where this pool's slices belong
};

// What the publisher sent for a slice index and what the server stored
// instead (a feature gate is off): the stored form counts as published until
// the desired slice changes.
struct Skew {
  k8s::ResourceSliceSpec sent;
  k8s::ResourceSliceSpec stored;
};

struct PoolPlan {
  int64_t generation = 0;                          // of every slice written
  std::vector<size_t> deletes;                     // indexes into `existing`
  std::vector<std::pair<size_t, size_t>> updates;  // (desired slice index, index into `existing`)
  std::vector<size_t> creates;                     // desired slice indexes
};

// `generation_floor`: the highest generation this publisher wrote or saw
// for the pool (generations never go back). `skews` by desired slice index.
PoolPlan PlanPool(const Publishing& publishing, const std::string& pool_name, const Pool& desired,
                  const std::vector<ExistingSlice>& existing, int64_t generation_floor,
                  const std::map<size_t, Skew>& skews);

}  // namespace dra::resourceslice
