// Which concrete CPUs a claim gets. The scheduler allocates a number of CPUs
// of a socket or NUMA node (or single CPUs); the node plugin picks them:
// whole cores first when SMT is on, packed into as few L3 cache groups as
// possible, never a reserved CPU or one another prepared claim holds.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "topology.h"

namespace cpu {

class CpuAllocator {
 public:
  CpuAllocator(Topology topology, std::set<int> reserved);

  // `count` free CPUs of `group` (a socket's or NUMA node's CPUs), added to
  // what the claim `uid` holds until Release(uid). `group_name` ("socket 0")
  // is for the error when too few are free; then nothing is taken.
  absl::StatusOr<std::vector<int>> Allocate(const std::string& uid, const std::string& group_name,
                                            const std::vector<int>& group, int count);
  // Exactly these CPUs (individual mode, or restored after a restart), added
  // to what `uid` holds; nothing is taken when one of them is not free.
  absl::Status Take(const std::string& uid, const std::vector<int>& cpus);
  void Release(const std::string& uid);
  // A new topology (CPUs went offline or online); held CPUs stay held.
  void SetTopology(Topology topology) { topology_ = std::move(topology); }

  // Held by claims, by claim UID.
  const std::map<std::string, std::vector<int>>& held() const { return held_; }
  const std::set<int>& reserved() const { return reserved_; }
  const Topology& topology() const { return topology_; }
  int allocated_cpus() const;

 private:
  void Hold(const std::string& uid, const std::vector<int>& cpus);

  Topology topology_;
  const std::set<int> reserved_;
  std::map<std::string, std::vector<int>> held_;
  std::map<int, std::string> owner_;  // CPU -> claim UID
};

}  // namespace cpu
