// The CPU example's placement rule: claim containers get exactly their
// claims' CPUs, everything else the CPUs no claim holds, and a pod cannot
// take CPUs by naming a claim in its own environment.
#include <catch2/catch.hpp>

#include "cpu_pinning.h"

namespace {

using cpu::ClaimPlacement;
using cpu::Placement;

const std::vector<int> kOnline = {0, 1, 2, 3, 4, 5, 6, 7};

TEST_CASE("the claims a container names are read from its DRA_CPUSET_ and DRA_MEMS_ variables", "[cpu][pinning]") {
  CHECK(cpu::ClaimsInEnvironment({"PATH=/bin", "DRA_CPUSET_0a1b_2c=2-3", "DRA_MEMS_0a1b_2c=0", "DRA_CPUSET_ff=1",
                                  "DRA_CPUSET_=4", "XDRA_CPUSET_ee=5"}) == std::set<std::string>{"0a1b-2c", "ff"});
  CHECK(cpu::ClaimsInEnvironment({}).empty());
}

TEST_CASE("a claim's container runs on its claims' CPUs and memory, the rest on the CPUs no claim holds",
          "[cpu][pinning]") {
  const std::map<std::string, ClaimPlacement> claims = {{"a", {{2, 3}, {}}}, {"b", {{6}, {1}}}, {"m", {{}, {0}}}};
  CHECK(cpu::PlaceContainer({"a"}, claims, kOnline) == Placement{"2-3", ""});
  CHECK(cpu::PlaceContainer({"a", "b"}, claims, kOnline) == Placement{"2-3,6", "1"});
  CHECK(cpu::PlaceContainer({}, claims, kOnline) == Placement{"0-1,4-5,7", ""});
  // Memory only: the shared CPUs, the claim's NUMA node.
  CHECK(cpu::PlaceContainer({"m"}, claims, kOnline) == Placement{"0-1,4-5,7", "0"});
}

TEST_CASE("a container naming a claim that is not prepared is in the shared pool", "[cpu][pinning]") {
  const std::map<std::string, ClaimPlacement> claims = {{"a", {{2, 3}, {}}}};
  CHECK(cpu::PlaceContainer({"forged"}, claims, kOnline) == Placement{"0-1,4-7", ""});
  CHECK(cpu::PlaceContainer({"forged", "a"}, claims, kOnline) == Placement{"2-3", ""});
}

TEST_CASE("when claims hold every online CPU the shared pool is all of them, never empty", "[cpu][pinning]") {
  const std::map<std::string, ClaimPlacement> claims = {{"a", {{0, 1}, {}}}};
  CHECK(cpu::PlaceContainer({}, claims, {0, 1}) == Placement{"0-1", ""});
}

}  // namespace
