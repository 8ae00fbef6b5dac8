#include "topology.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cpuset.h"

namespace cpu {
namespace {

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<int> ReadInt(const std::string& path) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  int value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an integer: \"", absl::StripAsciiWhitespace(*text), "\""));
  }
  return value;
}

absl::StatusOr<std::vector<int>> ReadCpuList(const std::string& path) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(*text);
  if (!cpus.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", cpus.status().message()));
  return cpus;
}

// The lowest CPU sharing this CPU's L3 cache, or -1.
absl::StatusOr<int> L3Group(const std::string& cpu_dir) {
  const std::filesystem::path cache = cpu_dir + "/cache";
  std::error_code error;
  if (!std::filesystem::is_directory(cache, error)) return -1;
  for (const auto& entry : std::filesystem::directory_iterator(cache, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    absl::StatusOr<int> level = ReadInt(entry.path().string() + "/level");
    if (!level.ok() || *level != 3) continue;
    absl::StatusOr<std::vector<int>> shared = ReadCpuList(entry.path().string() + "/shared_cpu_list");
    if (!shared.ok()) return shared.status();
    return shared->empty() ? -1 : shared->front();
  }
  return -1;
}

// "Node 0 MemTotal:       32768000 kB" in node<N>/meminfo.
absl::StatusOr<int64_t> NodeMemory(const std::string& path) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("MemTotal:");
    if (at == std::string::npos) continue;
    std::istringstream fields(line.substr(at + 9));
    int64_t kib = 0;
    std::string unit;
    if (!(fields >> kib >> unit) || unit != "kB" || kib < 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": malformed MemTotal line: \"", line, "\""));
    }
    return kib * 1024;
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": no MemTotal line"));
}

std::vector<int> CpusWhere(const Topology& topology, const auto& predicate) {
  std::vector<int> ids;
  for (const Cpu& cpu : topology.cpus) {
    if (predicate(cpu)) ids.push_back(cpu.id);
  }
  return ids;
}

// The NUMA node of a PCIe root: the first of its devices that reports one.
std::optional<int> RootNumaNode(const std::filesystem::path& root) {
  std::error_code error;
  std::vector<std::filesystem::path> devices;
  for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
    if (std::filesystem::exists(entry.path() / "numa_node", error)) devices.push_back(entry.path());
  }
  std::sort(devices.begin(), devices.end());
  for (const std::filesystem::path& device : devices) {
    absl::StatusOr<int> node = ReadInt((device / "numa_node").string());
    if (node.ok() && *node >= 0) return *node;
  }
  return std::nullopt;
}

}  // namespace

const Cpu* Topology::Find(int id) const {
  auto it = std::lower_bound(cpus.begin(), cpus.end(), id, [](const Cpu& c, int v) { return c.id < v; });
  return it != cpus.end() && it->id == id ? &*it : nullptr;
}

bool Topology::smt() const {
  return std::any_of(cpus.begin(), cpus.end(), [](const Cpu& c) { return c.siblings.size() > 1; });
}

std::vector<int> Topology::SocketCpus(int socket) const {
  return CpusWhere(*this, [&](const Cpu& c) { return c.socket_id == socket; });
}

std::vector<int> Topology::NumaCpus(int node) const {
  return CpusWhere(*this, [&](const Cpu& c) { return c.numa_node == node; });
}

std::vector<int> Topology::Sockets() const {
  std::set<int> sockets;
  for (const Cpu& cpu : cpus) sockets.insert(cpu.socket_id);
  return {sockets.begin(), sockets.end()};
}

absl::StatusOr<Topology> ReadTopology(const std::string& sysfs_root) {
  const std::string cpu_root = sysfs_root + "/devices/system/cpu";
  absl::StatusOr<std::vector<int>> online = ReadCpuList(cpu_root + "/online");
  if (!online.ok()) return online.status();
  if (online->empty()) return absl::InvalidArgumentError(absl::StrCat(cpu_root, "/online: no CPU is online"));
  const std::set<int> online_set(online->begin(), online->end());

  Topology topology;
  for (int id : *online) {
    const std::string dir = absl::StrCat(cpu_root, "/cpu", id);
    Cpu& cpu = topology.cpus.emplace_back();
    cpu.id = id;
    absl::StatusOr<int> core = ReadInt(dir + "/topology/core_id");
    if (!core.ok()) return core.status();
    absl::StatusOr<int> socket = ReadInt(dir + "/topology/physical_package_id");
    if (!socket.ok()) return socket.status();
    absl::StatusOr<std::vector<int>> siblings = ReadCpuList(dir + "/topology/thread_siblings_list");
    if (!siblings.ok()) return siblings.status();
    absl::StatusOr<int> l3 = L3Group(dir);
    if (!l3.ok()) return l3.status();
    cpu.core_id = *core;
    cpu.socket_id = *socket;
    cpu.l3_group = *l3;
    for (int sibling : *siblings) {
      if (online_set.contains(sibling)) cpu.siblings.push_back(sibling);
    }
    if (std::find(cpu.siblings.begin(), cpu.siblings.end(), id) == cpu.siblings.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, "/topology/thread_siblings_list: does not list CPU ", id, " itself"));
    }
  }

  const std::string node_root = sysfs_root + "/devices/system/node";
  std::error_code error;
  if (std::filesystem::is_directory(node_root, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(node_root, error)) {
      const std::string name = entry.path().filename().string();
      int id = 0;
      if (name.rfind("node", 0) != 0 || !absl::SimpleAtoi(name.substr(4), &id)) continue;
      NumaNode node;
      node.id = id;
      absl::StatusOr<std::vector<int>> cpus = ReadCpuList(entry.path().string() + "/cpulist");
      if (!cpus.ok()) return cpus.status();
      absl::StatusOr<int64_t> memory = NodeMemory(entry.path().string() + "/meminfo");
      if (!memory.ok()) return memory.status();
      node.memory_bytes = *memory;
      for (int c : *cpus) {
        if (!online_set.contains(c)) continue;
        node.cpus.push_back(c);
        for (Cpu& cpu : topology.cpus) {
          if (cpu.id == c) cpu.numa_node = id;
        }
      }
      topology.numa_nodes[id] = std::move(node);
    }
  }
  if (topology.numa_nodes.empty()) {
    NumaNode& node = topology.numa_nodes[0];
    node.cpus = *online;
  }
  for (const auto& entry : std::filesystem::directory_iterator(sysfs_root + "/devices", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("pci", 0) != 0 || name.find(':') == std::string::npos) continue;
    if (std::optional<int> node = RootNumaNode(entry.path())) topology.pcie_roots[*node].push_back(name);
  }
  for (auto& [node, roots] : topology.pcie_roots) std::sort(roots.begin(), roots.end());
  return topology;
}

Topology MockTopology(int numa_nodes, int cpus_per_node) {
  Topology topology;
  for (int node = 0; node < numa_nodes; ++node) {
    NumaNode& numa = topology.numa_nodes[node];
    numa.id = node;
    for (int i = 0; i < cpus_per_node; ++i) {
      const int id = node * cpus_per_node + i;
      topology.cpus.push_back(Cpu{.id = id, .core_id = i, .socket_id = node, .numa_node = node, .siblings = {id}});
      numa.cpus.push_back(id);
    }
  }
  return topology;
}

}  // namespace cpu
