// Client-side validation of everything a pool would publish, before any
// request is sent.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "dra/k8s/resource_slice.h"
#include "dra/resourceslice/driver_resources.h"
#include "dra/resourceslice/publishing_options.h"

namespace dra::resourceslice {

// Each slice as the API server would check it (ValidateResourceSlice on
// `make_slice(i)`, made one at a time so that a large pool is not copied
// whole), then what no single slice shows: device names and counter set names
// unique in the pool, and every counter set and counter a device consumes
// declared in the pool. InvalidArgument names the pool, the slice, the field
// and the rule. Attribute and capacity names qualified with the slice's
// driver name are errors too with kRefuse, and with kWarn go to `warning`
// (empty when there are none), worded as the error would be, one part per
// slice that has them, joined by "; ".
absl::Status ValidatePool(std::string_view pool_name, const Pool& pool, DriverDomainNames driver_domain_names,
                          const std::function<k8s::ResourceSlice(size_t index)>& make_slice, std::string& warning);

}  // namespace dra::resourceslice
