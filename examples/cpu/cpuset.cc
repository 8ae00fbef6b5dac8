#include "cpuset.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"

namespace cpu {
namespace {

// The largest CPU number accepted: the kernel's NR_CPUS limit is 8192.
constexpr int kMaxCpu = 8191;

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  std::vector<int> cpus;
  size_t pos = 0;
  auto fail = [&](size_t at, std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu list \"", std::string(text), "\": at position ", at + 1, ": ", std::string(what)));
  };
  auto number = [&](int* out) -> absl::Status {
    const size_t start = pos;
    int64_t value = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      value = value * 10 + (text[pos] - '0');
      if (value > kMaxCpu) return fail(start, absl::StrCat("CPU number above ", kMaxCpu));
      ++pos;
    }
    if (pos == start) return fail(start, "expected a CPU number");
    *out = static_cast<int>(value);
    return absl::OkStatus();
  };
  if (text.empty()) return cpus;
  while (true) {
    const size_t range_start = pos;
    int first = 0;
    if (absl::Status s = number(&first); !s.ok()) return s;
    int last = first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (absl::Status s = number(&last); !s.ok()) return s;
      if (last < first) return fail(range_start, absl::StrCat("range ", first, "-", last, " goes backwards"));
    }
    for (int c = first; c <= last; ++c) cpus.push_back(c);
    if (pos == text.size()) break;
    if (text[pos] != ',') return fail(pos, absl::StrCat("expected ',' or '-', got '", std::string(1, text[pos]), "'"));
    ++pos;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out.push_back(',');
    absl::StrAppend(&out, cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace cpu
