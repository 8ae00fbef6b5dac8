// Where each container may run. A container given one or more of the
// driver's prepared claims (their DRA_CPUSET_<uid> / DRA_MEMS_<uid> variables
// are in its environment) runs on exactly those claims' CPUs and, when they
// have memory devices, their NUMA nodes' memory; every other container runs
// on the shared pool: the online CPUs that no prepared claim holds. Reserved
// CPUs are in the shared pool: they are kept from claims, not from the
// system's containers (the kubelet's static CPU manager treats them alike).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace cpu {

// What a prepared claim holds.
struct ClaimPlacement {
  std::vector<int> cpus;
  std::vector<int> mems;  // NUMA nodes of its memory devices

  bool operator==(const ClaimPlacement&) const = default;
};

// A container's cpuset, as cpulists; `mems` "" leaves the runtime's own.
struct Placement {
  std::string cpus;
  std::string mems;

  bool operator==(const Placement&) const = default;
};

// The claim UIDs whose variables are in `env` ("NAME=value" entries).
std::set<std::string> ClaimsInEnvironment(const std::vector<std::string>& env);

// The placement of a container that names `container_claims`, given the
// prepared `claims` (by UID) and the node's `online` CPUs. A named claim
// that is not prepared (unprepared since, or a variable the pod set itself)
// gives nothing: a pod cannot take CPUs by naming a claim. When claims hold
// every online CPU the shared pool is all of them: a cpuset is never empty.
Placement PlaceContainer(const std::set<std::string>& container_claims,
                         const std::map<std::string, ClaimPlacement>& claims, const std::vector<int>& online);

}  // namespace cpu
