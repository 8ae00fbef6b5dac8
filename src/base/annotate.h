// dra::base::Annotate: a status with what was being done put in front of
// its message, its code kept ("write CDI spec of claim ns/a: ...").
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dra::base {

inline absl::Status Annotate(const absl::Status& status, std::string_view prefix) {
  return absl::Status(status.code(), absl::StrCat(std::string(prefix), ": ", status.message()));
}

}  // namespace dra::base
