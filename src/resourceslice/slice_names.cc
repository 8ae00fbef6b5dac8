#include "resourceslice/slice_names.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace dra::resourceslice {

std::string SliceGenerateName(size_t index, std::string_view driver, std::string_view owner) {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "%05zx", index & kMaxSliceIndex);
  std::string sanitized(owner);
  std::replace(sanitized.begin(), sanitized.end(), '/', '.');
  // The API server cuts a generateName prefix to 58 characters; the index
  // comes first so that it survives.
  return absl::StrCat(hex, "-", absl::string_view(driver.data(), driver.size()), "-", sanitized, "-");
}

std::optional<size_t> ParseSliceIndex(std::string_view name) {
  if (name.size() < 6 || name[5] != '-') return std::nullopt;
  size_t index = 0;
  for (size_t i = 0; i < 5; ++i) {
    const char c = name[i];
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    index = index * 16 + static_cast<size_t>(digit);
  }
  return index;
}

}  // namespace dra::resourceslice
