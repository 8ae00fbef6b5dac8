// The CPU example's cpulist parser (cpu::ParseCpuList, for sysfs files and
// --reserved-cpus): every input parses or fails with InvalidArgument; the
// CPUs come sorted, distinct and in range, and their shortest list parses
// back to them.
#include <algorithm>

#include "cpu/cpuset.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<std::vector<int>> cpus = cpu::ParseCpuList(dra::fuzz::AsText(data, size));
  if (!cpus.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(cpus.status()));
    return 0;
  }
  DRA_FUZZ_CHECK(std::adjacent_find(cpus->begin(), cpus->end(), std::greater_equal<int>()) == cpus->end());
  DRA_FUZZ_CHECK(cpus->empty() || (cpus->front() >= 0 && cpus->back() <= 8191));
  const std::string list = cpu::FormatCpuList(*cpus);
  absl::StatusOr<std::vector<int>> again = cpu::ParseCpuList(list);
  DRA_FUZZ_CHECK(again.ok());
  DRA_FUZZ_CHECK(*again == *cpus);
  DRA_FUZZ_CHECK(cpu::FormatCpuList(*again) == list);
  return 0;
}
