#include "cpu_allocator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cpu {
namespace {

// The free CPUs of one core, and whether that is the whole core.
struct FreeCore {
  std::vector<int> cpus;
  bool whole = false;
};

// Takes `count` CPUs from `cores`: whole cores while at least a core's worth
// is still needed, then the threads of partly free cores, then threads of
// whole cores.
std::vector<int> PickFromCores(std::vector<FreeCore> cores, int count) {
  std::vector<int> picked;
  std::stable_sort(cores.begin(), cores.end(), [](const FreeCore& a, const FreeCore& b) { return a.whole > b.whole; });
  for (FreeCore& core : cores) {
    if (!core.whole || static_cast<int>(core.cpus.size()) > count - static_cast<int>(picked.size())) continue;
    picked.insert(picked.end(), core.cpus.begin(), core.cpus.end());
    core.cpus.clear();
  }
  std::stable_sort(cores.begin(), cores.end(), [](const FreeCore& a, const FreeCore& b) { return a.whole < b.whole; });
  for (FreeCore& core : cores) {
    for (int cpu : core.cpus) {
      if (static_cast<int>(picked.size()) == count) return picked;
      picked.push_back(cpu);
    }
  }
  return picked;
}

}  // namespace

CpuAllocator::CpuAllocator(Topology topology, std::set<int> reserved)
    : topology_(std::move(topology)), reserved_(std::move(reserved)) {}

int CpuAllocator::allocated_cpus() const { return static_cast<int>(owner_.size()); }

absl::StatusOr<std::vector<int>> CpuAllocator::Allocate(const std::string& uid, const std::string& group_name,
                                                        const std::vector<int>& group, int count) {
  if (count <= 0) return absl::InvalidArgumentError(absl::StrCat("asked for ", count, " CPUs of ", group_name));

  // Free CPUs by L3 group, then by core.
  std::map<int, std::map<std::pair<int, int>, FreeCore>> by_l3;  // l3 -> (socket, core) -> free threads
  int free = 0, reserved = 0, held = 0;
  for (int id : group) {
    const Cpu* cpu = topology_.Find(id);
    if (cpu == nullptr) continue;
    if (reserved_.contains(id)) {
      ++reserved;
      continue;
    }
    if (owner_.contains(id)) {
      ++held;
      continue;
    }
    ++free;
    by_l3[cpu->l3_group][{cpu->socket_id, cpu->core_id}].cpus.push_back(id);
  }
  if (free < count) {
    return absl::ResourceExhaustedError(absl::StrCat("needs ", count, " CPUs of ", group_name, ", ", free,
                                                     " are free (", group.size(), " online, ", reserved, " reserved, ",
                                                     held, " held by other claims)"));
  }
  std::vector<std::pair<int, std::vector<FreeCore>>> groups;  // free count, cores
  for (auto& [l3, cores] : by_l3) {
    std::vector<FreeCore> list;
    int n = 0;
    for (auto& [key, core] : cores) {
      const Cpu* first = topology_.Find(core.cpus.front());
      core.whole = core.cpus.size() == first->siblings.size();
      n += static_cast<int>(core.cpus.size());
      list.push_back(std::move(core));
    }
    groups.emplace_back(n, std::move(list));
  }
  // The smallest L3 group that fits the whole request; else the fullest
  // groups first.
  std::vector<int> picked;
  auto fits = std::min_element(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    const bool a_fits = a.first >= count, b_fits = b.first >= count;
    if (a_fits != b_fits) return a_fits;
    return a_fits ? a.first < b.first : a.first > b.first;
  });
  if (fits->first >= count) {
    picked = PickFromCores(fits->second, count);
  } else {
    std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [n, cores] : groups) {
      const int want = std::min(n, count - static_cast<int>(picked.size()));
      std::vector<int> part = PickFromCores(cores, want);
      picked.insert(picked.end(), part.begin(), part.end());
      if (static_cast<int>(picked.size()) == count) break;
    }
  }
  std::sort(picked.begin(), picked.end());
  Hold(uid, picked);
  return picked;
}

absl::Status CpuAllocator::Take(const std::string& uid, const std::vector<int>& cpus) {
  for (int id : cpus) {
    if (topology_.Find(id) == nullptr) return absl::FailedPreconditionError(absl::StrCat("CPU ", id, " is not online"));
    if (reserved_.contains(id)) return absl::FailedPreconditionError(absl::StrCat("CPU ", id, " is reserved"));
    if (auto owner = owner_.find(id); owner != owner_.end()) {
      return absl::FailedPreconditionError(absl::StrCat("CPU ", id, " is held by claim ", owner->second));
    }
  }
  Hold(uid, cpus);
  return absl::OkStatus();
}

void CpuAllocator::Hold(const std::string& uid, const std::vector<int>& cpus) {
  std::vector<int>& held = held_[uid];
  for (int id : cpus) {
    owner_[id] = uid;
    held.push_back(id);
  }
  std::sort(held.begin(), held.end());
}

void CpuAllocator::Release(const std::string& uid) {
  auto it = held_.find(uid);
  if (it == held_.end()) return;
  for (int id : it->second) owner_.erase(id);
  held_.erase(it);
}

}  // namespace cpu
