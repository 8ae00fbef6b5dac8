// The node's CPU topology as sysfs describes it: online CPUs with their core,
// socket, NUMA node and L3 cache group, and each NUMA node's memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cpu {

struct Cpu {
  int id = 0;
  int core_id = 0;    // unique within its socket only
  int socket_id = 0;  // physical_package_id
  int numa_node = 0;
  int l3_group = -1;          // the lowest CPU sharing its L3 cache; -1: no L3 known
  std::vector<int> siblings;  // SMT threads of its core, itself included, online only
};

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;  // online
  int64_t memory_bytes = 0;
};

struct Topology {
  std::vector<Cpu> cpus;               // online, by id
  std::map<int, NumaNode> numa_nodes;  // by id; one node 0 when sysfs shows none
  // PCIe root complexes ("pci0000:00") by the NUMA node their devices
  // report; roots whose devices report none (-1) are left out.
  std::map<int, std::vector<std::string>> pcie_roots;

  const Cpu* Find(int id) const;
  // Whether any core runs more than one online thread.
  bool smt() const;
  // Online CPUs of the socket or NUMA node, ascending.
  std::vector<int> SocketCpus(int socket) const;
  std::vector<int> NumaCpus(int node) const;
  std::vector<int> Sockets() const;
};

// Reads <sysfs_root>/devices/system/cpu, <sysfs_root>/devices/system/node and
// the PCIe roots <sysfs_root>/devices/pci<domain>:<bus> ("/sys" on a node).
// A missing or malformed file names its path.
absl::StatusOr<Topology> ReadTopology(const std::string& sysfs_root);

// A made-up topology: `numa_nodes` NUMA nodes of `cpus_per_node` CPUs each,
// one socket per node, no SMT, no L3 groups, no memory: what
// dra-example-driver's cpu profile pretends a node has.
Topology MockTopology(int numa_nodes, int cpus_per_node);

}  // namespace cpu
