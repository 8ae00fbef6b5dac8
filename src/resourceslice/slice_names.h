// Slice names: generateName "<index as 5 hex digits>-<driver>-<owner>-", so
// that name order (the allocator's first-fit order) is slice order and the
// index can be read back to match existing slices with desired ones.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dra::resourceslice {

// Indexes go up to 0xfffff: far beyond what a pool can hold.
inline constexpr size_t kMaxSliceIndex = 0xfffff;

// `owner` is the node name for node-local pools, else the pool name ('/'
// becomes '.', since names cannot contain '/').
std::string SliceGenerateName(size_t index, std::string_view driver, std::string_view owner);

// The index at the start of a slice name, or nullopt when the name does not
// start with 5 lower-case hex digits and '-'.
std::optional<size_t> ParseSliceIndex(std::string_view name);

}  // namespace dra::resourceslice
