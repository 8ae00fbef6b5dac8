// The CPU example's view of the machine: cpulists as the kernel writes them
// (and as --reserved-cpus takes them), and the topology read from sysfs trees
// of several shapes, and once from this machine's own /sys.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <catch2/catch.hpp>

#include "cpuset.h"
#include "fake_sysfs.h"
#include "support/temp_dir.h"
#include "topology.h"

namespace {

using dra::testing::FakeMachine;

cpu::Topology Read(const FakeMachine& machine, dra::testing::TempDir& dir) {
  dra::testing::WriteFakeSysfs(dir.path(), machine);
  absl::StatusOr<cpu::Topology> topology = cpu::ReadTopology(dir.path());
  INFO(topology.status().ToString());
  REQUIRE(topology.ok());
  return *std::move(topology);
}

TEST_CASE("cpulists parse and format as the kernel's", "[examples][cpu]") {
  CHECK(*cpu::ParseCpuList("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(*cpu::ParseCpuList("") == std::vector<int>{});
  CHECK(*cpu::ParseCpuList("5,1,1-2") == std::vector<int>{1, 2, 5});
  CHECK(cpu::FormatCpuList({12, 4, 5, 6, 7, 4}) == "4-7,12");
  CHECK(cpu::FormatCpuList({}) == "");
  CHECK(cpu::FormatCpuList({3}) == "3");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0-3,x", "cpu list \"0-3,x\": at position 5: expected a CPU number"},
      {"4-2", "cpu list \"4-2\": at position 1: range 4-2 goes backwards"},
      {"1;2", "cpu list \"1;2\": at position 2: expected ',' or '-', got ';'"},
      {"0,", "cpu list \"0,\": at position 3: expected a CPU number"},
      {"99999", "cpu list \"99999\": at position 1: CPU number above 8191"},
      {"-1", "cpu list \"-1\": at position 1: expected a CPU number"},
  };
  for (const auto& [text, message] : bad) {
    absl::StatusOr<std::vector<int>> parsed = cpu::ParseCpuList(text);
    INFO(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message() == message);
  }
}

TEST_CASE("topology: one socket without SMT", "[examples][cpu]") {
  dra::testing::TempDir dir;
  const cpu::Topology t = Read(FakeMachine{}, dir);
  REQUIRE(t.cpus.size() == 4);
  CHECK_FALSE(t.smt());
  CHECK(t.Sockets() == std::vector<int>{0});
  CHECK(t.SocketCpus(0) == std::vector<int>{0, 1, 2, 3});
  CHECK(t.cpus[2].core_id == 2);
  CHECK(t.cpus[2].siblings == std::vector<int>{2});
  CHECK(t.cpus[2].l3_group == 0);
  REQUIRE(t.numa_nodes.size() == 1);
  CHECK(t.numa_nodes.at(0).memory_bytes == int64_t{16} << 30);
}

TEST_CASE("topology: two sockets with SMT, one NUMA node and two L3 groups each", "[examples][cpu]") {
  dra::testing::TempDir dir;
  FakeMachine m;
  m.sockets = 2;
  m.threads_per_core = 2;
  m.l3_per_socket = 2;
  const cpu::Topology t = Read(m, dir);
  REQUIRE(t.cpus.size() == 16);
  CHECK(t.smt());
  CHECK(t.Sockets() == std::vector<int>{0, 1});
  // Socket 1's cores are 4-7, their second threads 12-15.
  CHECK(t.SocketCpus(1) == std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15});
  CHECK(t.Find(13)->siblings == std::vector<int>{5, 13});
  CHECK(t.Find(13)->socket_id == 1);
  CHECK(t.Find(13)->numa_node == 1);
  CHECK(t.Find(13)->l3_group == 4);  // cores 0-1 of socket 1: CPUs 4,5,12,13
  CHECK(t.Find(15)->l3_group == 6);
  CHECK(t.NumaCpus(0) == std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11});
}

TEST_CASE("topology: offline CPUs are left out, also from their siblings", "[examples][cpu]") {
  dra::testing::TempDir dir;
  FakeMachine m;
  m.threads_per_core = 2;
  m.offline = {1, 6};
  const cpu::Topology t = Read(m, dir);
  CHECK(t.cpus.size() == 6);
  CHECK(t.Find(1) == nullptr);
  CHECK(t.Find(5)->siblings == std::vector<int>{5});
  CHECK(t.numa_nodes.at(0).cpus == std::vector<int>{0, 2, 3, 4, 5, 7});
}

TEST_CASE("topology: four NUMA nodes on two sockets, and a machine with 256 CPUs", "[examples][cpu]") {
  dra::testing::TempDir dir;
  FakeMachine m;
  m.sockets = 2;
  m.cores_per_socket = 8;
  m.numa_per_socket = 2;
  const cpu::Topology t = Read(m, dir);
  REQUIRE(t.numa_nodes.size() == 4);
  CHECK(t.NumaCpus(3) == std::vector<int>{12, 13, 14, 15});
  CHECK(t.Find(12)->socket_id == 1);

  dra::testing::TempDir big_dir;
  FakeMachine big;
  big.sockets = 2;
  big.cores_per_socket = 64;
  big.threads_per_core = 2;
  big.l3_per_socket = 8;
  const cpu::Topology b = Read(big, big_dir);
  CHECK(b.cpus.size() == 256);
  CHECK(b.SocketCpus(1).size() == 128);
  CHECK(b.Find(255)->siblings == std::vector<int>{127, 255});
}

TEST_CASE("topology: a missing or malformed file is an error naming it", "[examples][cpu]") {
  dra::testing::TempDir dir;
  dra::testing::WriteFakeSysfs(dir.path(), FakeMachine{});
  std::filesystem::remove(dir.Join("devices/system/cpu/cpu2/topology/core_id"));
  absl::StatusOr<cpu::Topology> missing = cpu::ReadTopology(dir.path());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "cannot read " + dir.Join("devices/system/cpu/cpu2/topology/core_id"));

  dra::testing::WriteSysfsFile(dir.Join("devices/system/cpu/cpu2/topology/core_id"), "two");
  absl::StatusOr<cpu::Topology> malformed = cpu::ReadTopology(dir.path());
  REQUIRE_FALSE(malformed.ok());
  CHECK(malformed.status().message() ==
        dir.Join("devices/system/cpu/cpu2/topology/core_id") + ": not an integer: \"two\"");

  dra::testing::WriteSysfsFile(dir.Join("devices/system/cpu/cpu2/topology/core_id"), "2");
  dra::testing::WriteSysfsFile(dir.Join("devices/system/cpu/online"), "0-3,");
  absl::StatusOr<cpu::Topology> online = cpu::ReadTopology(dir.path());
  REQUIRE_FALSE(online.ok());
  CHECK(online.status().message() ==
        dir.Join("devices/system/cpu/online") + ": cpu list \"0-3,\": at position 5: expected a CPU number");
}

TEST_CASE("topology: this machine's own /sys reads", "[examples][cpu]") {
  absl::StatusOr<cpu::Topology> t = cpu::ReadTopology("/sys");
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  CHECK(static_cast<long>(t->cpus.size()) == sysconf(_SC_NPROCESSORS_ONLN));
  for (const cpu::Cpu& c : t->cpus) {
    INFO("CPU " << c.id);
    CHECK(std::find(c.siblings.begin(), c.siblings.end(), c.id) != c.siblings.end());
  }
  CHECK_FALSE(t->numa_nodes.empty());
}

TEST_CASE("topology: a made-up one of NUMA nodes with their CPUs, one socket each", "[examples][cpu]") {
  const cpu::Topology topology = cpu::MockTopology(2, 3);
  REQUIRE(topology.cpus.size() == 6);
  CHECK(topology.NumaCpus(0) == std::vector<int>{0, 1, 2});
  CHECK(topology.NumaCpus(1) == std::vector<int>{3, 4, 5});
  CHECK(topology.SocketCpus(1) == std::vector<int>{3, 4, 5});
  CHECK(topology.Sockets() == std::vector<int>{0, 1});
  CHECK_FALSE(topology.smt());
  CHECK(topology.Find(4)->siblings == std::vector<int>{4});
}

}  // namespace
