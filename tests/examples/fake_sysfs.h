// Fake sysfs CPU trees for the CPU example's tests: devices/system/cpu and
// devices/system/node as Linux writes them, for a machine described in a
// few numbers. CPUs are numbered as Linux numbers them on x86: the first
// thread of every core of every socket, then the second threads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cpuset.h"
#include "support/temp_dir.h"
#include "topology.h"

namespace dra::testing {

struct FakeMachine {
  int sockets = 1;
  int cores_per_socket = 4;
  int threads_per_core = 1;
  int numa_per_socket = 1;  // divides cores_per_socket
  int l3_per_socket = 1;    // divides cores_per_socket
  std::set<int> offline;
  int pcie_roots_per_numa = 0;             // pci0000:<n>, one device each, numbered across NUMA nodes
  int64_t memory_per_numa_kib = 16 << 20;  // 16 GiB

  int cores() const { return sockets * cores_per_socket; }
  int cpus() const { return cores() * threads_per_core; }
  int CpuId(int socket, int core, int thread) const { return thread * cores() + socket * cores_per_socket + core; }
};

inline void WriteSysfsFile(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

inline void WriteFakeSysfs(const std::string& root, const FakeMachine& m) {
  const std::filesystem::path cpu_root = std::filesystem::path(root) / "devices/system/cpu";
  std::vector<int> online;
  for (int id = 0; id < m.cpus(); ++id) {
    if (!m.offline.contains(id)) online.push_back(id);
  }
  WriteSysfsFile(cpu_root / "online", cpu::FormatCpuList(online));
  WriteSysfsFile(cpu_root / "possible", "0-" + std::to_string(m.cpus() - 1));
  const int cores_per_numa = m.cores_per_socket / m.numa_per_socket;
  const int cores_per_l3 = m.cores_per_socket / m.l3_per_socket;
  std::vector<std::vector<int>> numa_cpus(m.sockets * m.numa_per_socket);
  for (int s = 0; s < m.sockets; ++s) {
    for (int c = 0; c < m.cores_per_socket; ++c) {
      std::vector<int> siblings;
      for (int t = 0; t < m.threads_per_core; ++t) siblings.push_back(m.CpuId(s, c, t));
      std::vector<int> l3;
      const int first_core = c / cores_per_l3 * cores_per_l3;
      for (int lc = first_core; lc < first_core + cores_per_l3; ++lc) {
        for (int t = 0; t < m.threads_per_core; ++t) l3.push_back(m.CpuId(s, lc, t));
      }
      for (int t = 0; t < m.threads_per_core; ++t) {
        const int id = m.CpuId(s, c, t);
        const std::filesystem::path dir = cpu_root / ("cpu" + std::to_string(id));
        WriteSysfsFile(dir / "topology/core_id", std::to_string(c));
        WriteSysfsFile(dir / "topology/physical_package_id", std::to_string(s));
        WriteSysfsFile(dir / "topology/thread_siblings_list", cpu::FormatCpuList(siblings));
        WriteSysfsFile(dir / "cache/index0/level", "1");
        WriteSysfsFile(dir / "cache/index0/shared_cpu_list", cpu::FormatCpuList(siblings));
        WriteSysfsFile(dir / "cache/index3/level", "3");
        WriteSysfsFile(dir / "cache/index3/shared_cpu_list", cpu::FormatCpuList(l3));
        numa_cpus[s * m.numa_per_socket + c / cores_per_numa].push_back(id);
      }
    }
  }
  int bus = 0;
  for (size_t n = 0; n < numa_cpus.size(); ++n) {
    for (int r = 0; r < m.pcie_roots_per_numa; ++r, ++bus) {
      char name[16];
      std::snprintf(name, sizeof(name), "%02x", bus);
      const std::filesystem::path device = std::filesystem::path(root) / ("devices/pci0000:" + std::string(name)) /
                                           ("0000:" + std::string(name) + ":00.0");
      WriteSysfsFile(device / "numa_node", std::to_string(n));
    }
  }
  const std::filesystem::path node_root = std::filesystem::path(root) / "devices/system/node";
  for (size_t n = 0; n < numa_cpus.size(); ++n) {
    const std::filesystem::path dir = node_root / ("node" + std::to_string(n));
    WriteSysfsFile(dir / "cpulist", cpu::FormatCpuList(numa_cpus[n]));
    WriteSysfsFile(dir / "meminfo", "Node " + std::to_string(n) +
                                        " MemTotal:       " + std::to_string(m.memory_per_numa_kib) + " kB\nNode " +
                                        std::to_string(n) + " MemFree:        1024 kB");
  }
}

// The topology ReadTopology reads from `m`'s tree.
inline cpu::Topology FakeTopology(const FakeMachine& m) {
  TempDir dir;
  WriteFakeSysfs(dir.path(), m);
  absl::StatusOr<cpu::Topology> topology = cpu::ReadTopology(dir.path());
  INFO(topology.status().ToString());
  REQUIRE(topology.ok());
  return *std::move(topology);
}

}  // namespace dra::testing
