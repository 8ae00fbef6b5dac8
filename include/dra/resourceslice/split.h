/// @file
/// dra::resourceslice::SplitIntoSlices: a pool's devices and shared counters
/// cut into Slices that the API server accepts, for drivers that do not split
/// themselves.
#pragma once

#include <vector>

#include "dra/k8s/resource_slice.h"
#include "dra/resourceslice/driver_resources.h"

namespace dra::resourceslice {

/// Shared counters first, in slices of their own (the API takes counters or
/// devices in a slice, never both), at most 8 counter sets each; then the
/// devices in their order, at most 128 per slice, or 64 in a slice where any
/// device has taints, consumesCounters or list-valued attributes. With
/// neither devices nor counters, one empty Slice (an empty pool, which is not
/// a missing pool).
std::vector<Slice> SplitIntoSlices(std::vector<k8s::Device> devices, std::vector<k8s::CounterSet> shared_counters = {});

}  // namespace dra::resourceslice
