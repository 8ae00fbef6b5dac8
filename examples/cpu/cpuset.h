// CPU lists in the kernel's cpulist format ("0-3,8,10-11"), as sysfs writes
// them and as --reserved-cpus takes them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace cpu {

// The CPUs of `text`, sorted and without duplicates; "" is none. An error
// names the position (1-based) and what is wrong there.
absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text);

// The shortest cpulist of `cpus` (any order, duplicates ignored): "4-7,12".
std::string FormatCpuList(std::vector<int> cpus);

}  // namespace cpu
