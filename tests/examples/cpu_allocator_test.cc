// How the CPU example picks concrete CPUs: whole cores first with SMT, within
// one L3 group when it fits, never a reserved CPU or one another claim holds;
// too few free CPUs fail with the numbers.
#include <catch2/catch.hpp>

#include "cpu_allocator.h"
#include "cpuset.h"
#include "fake_sysfs.h"
#include "support/temp_dir.h"

namespace {

using dra::testing::FakeMachine;
using dra::testing::FakeTopology;

// Two sockets of 4 cores with 2 threads each, two L3 groups per socket.
FakeMachine TwoSocketsSmt() {
  FakeMachine m;
  m.sockets = 2;
  m.threads_per_core = 2;
  m.l3_per_socket = 2;
  return m;
}

std::string Pick(cpu::CpuAllocator& allocator, const std::string& uid, int socket, int count) {
  absl::StatusOr<std::vector<int>> cpus =
      allocator.Allocate(uid, "socket " + std::to_string(socket), allocator.topology().SocketCpus(socket), count);
  if (!cpus.ok()) return std::string(cpus.status().message());
  return cpu::FormatCpuList(*cpus);
}

TEST_CASE("CpuAllocator with SMT: whole cores of one L3 group first", "[examples][cpu]") {
  cpu::CpuAllocator allocator(FakeTopology(TwoSocketsSmt()), {});
  // Socket 0: cores 0-3 with threads 0-3 and 8-11; L3 groups {0,1,8,9} and {2,3,10,11}.
  CHECK(Pick(allocator, "a", 0, 2) == "0,8");     // one whole core
  CHECK(Pick(allocator, "b", 0, 2) == "1,9");     // the rest of that L3 group
  CHECK(Pick(allocator, "c", 0, 3) == "2-3,10");  // two cores' worth, one thread left over
  CHECK(Pick(allocator, "d", 0, 1) == "11");      // the half-used core before a whole one
  CHECK(Pick(allocator, "e", 0, 1) ==
        "needs 1 CPUs of socket 0, 0 are free (8 online, 0 reserved, 8 held by other claims)");
  allocator.Release("b");
  CHECK(Pick(allocator, "e", 0, 1) == "1");
  CHECK(allocator.allocated_cpus() == 7);
}

TEST_CASE("CpuAllocator packs a request into the smallest L3 group that holds it", "[examples][cpu]") {
  cpu::CpuAllocator allocator(FakeTopology(TwoSocketsSmt()), {});
  CHECK(Pick(allocator, "a", 0, 2) == "0,8");  // L3 group 0 has 2 free now, group 2 has 4
  CHECK(Pick(allocator, "b", 0, 4) == "2-3,10-11");
  CHECK(Pick(allocator, "c", 0, 2) == "1,9");
  // Larger than any group: the fullest groups first.
  cpu::CpuAllocator fresh(FakeTopology(TwoSocketsSmt()), {});
  CHECK(Pick(fresh, "big", 1, 6) == "4-6,12-14");  // all of L3 group 4, a core of group 6
}

TEST_CASE("CpuAllocator without SMT takes CPUs in order, never reserved ones", "[examples][cpu]") {
  FakeMachine m;
  m.cores_per_socket = 8;
  cpu::CpuAllocator allocator(FakeTopology(m), {0, 1});
  CHECK(Pick(allocator, "a", 0, 3) == "2-4");
  CHECK(Pick(allocator, "b", 0, 4) ==
        "needs 4 CPUs of socket 0, 3 are free (8 online, 2 reserved, 3 held by other claims)");
  CHECK(allocator.held().size() == 1);  // the failed request took nothing
  CHECK(Pick(allocator, "b", 0, 3) == "5-7");
}

TEST_CASE("CpuAllocator::Take takes exactly the CPUs named, or none of them", "[examples][cpu]") {
  FakeMachine m;
  m.cores_per_socket = 8;
  cpu::CpuAllocator allocator(FakeTopology(m), {7});
  REQUIRE(allocator.Take("a", {2, 3}).ok());
  CHECK(allocator.Take("b", {4, 3}).message() == "CPU 3 is held by claim a");
  CHECK(allocator.Take("b", {7}).message() == "CPU 7 is reserved");
  CHECK(allocator.Take("b", {9}).message() == "CPU 9 is not online");
  CHECK(allocator.held().at("a") == std::vector<int>{2, 3});
  CHECK_FALSE(allocator.held().contains("b"));
  // A claim can hold CPUs of several results.
  REQUIRE(allocator.Take("a", {5}).ok());
  CHECK(allocator.held().at("a") == std::vector<int>{2, 3, 5});
  CHECK(Pick(allocator, "c", 0, 4) == "0-1,4,6");
}

}  // namespace
