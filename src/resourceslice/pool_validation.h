// Client-side validation of everything a pool would publish, before any
// request is sent.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "dra/k8s/resource_slice.h"
#include "dra/resourceslice/driver_resources.h"

namespace dra::resourceslice {

// Each slice as the API server would check it (ValidateResourceSlice on
// `make_slice(i)`, made one at a time so that a large pool is not copied
// whole), then what no single slice shows: device names and counter set names
// unique in the pool, and every counter set and counter a device consumes
// declared in the pool. InvalidArgument names the pool, the slice, the field
// and the rule.
absl::Status ValidatePool(std::string_view pool_name, const Pool& pool,
                          const std::function<k8s::ResourceSlice(size_t index)>& make_slice);

}  // namespace dra::resourceslice
