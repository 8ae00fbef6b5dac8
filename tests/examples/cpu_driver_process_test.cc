// The CPU driver binary as a process against the fake API server, on a fake
// sysfs tree, with the test as its kubelet: it publishes the tree's sockets
// without the reserved CPUs, republishes when CPUs go offline or come back,
// shows its CPU gauges on /metrics, and exits 0 on SIGTERM.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "example_driver_process.h"
#include "fake_sysfs.h"
#include "support/poll.h"

namespace {

using dra::testing::PollUntil;
using nlohmann::json;

// Two sockets of 4 cores, no SMT: socket 0 is CPUs 0-3, socket 1 CPUs 4-7.
struct Fixture {
  dra::testing::TempDir sysfs;
  dra::testing::FakeMachine machine = [] {
    dra::testing::FakeMachine m;
    m.sockets = 2;
    return m;
  }();
  bool written = (dra::testing::WriteFakeSysfs(sysfs.path(), machine), true);
  dra::testing::ExampleDriverProcess process{
      DRA_CPU_DRIVER,
      "cpu.example.com",
      {"--sysfs-root=" + sysfs.path(), "--nri-socket=", "--reserved-cpus=0", "--rescan-interval=50ms"}};

  // The published CPUs of each socket, "cpu-socket-0=3,cpu-socket-1=4".
  std::string Published() const {
    std::vector<std::string> parts;
    for (const json& slice : process.Slices()) {
      for (const json& device : slice["spec"]["devices"]) {
        parts.push_back(device["name"].get<std::string>() + "=" +
                        device["capacity"]["cpu.example.com/cpu"]["value"].get<std::string>());
      }
    }
    std::sort(parts.begin(), parts.end());
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : ",") + part;
    return out;
  }
};

TEST_CASE("the CPU driver publishes its sockets without reserved CPUs and republishes on hotplug",
          "[examples][cpu][process]") {
  Fixture f;
  REQUIRE(f.process.NotifyRegistration(true, "").ok());
  INFO(f.process.Log());
  REQUIRE(PollUntil([&] { return f.Published() == "cpu-socket-0=3,cpu-socket-1=4"; }, absl::Seconds(20)));
  CHECK_THAT(f.process.Metrics(), Catch::Contains("dra_cpu_allocatable_cpus 7\n") &&
                                      Catch::Contains("dra_cpu_reserved_cpus 1\n") &&
                                      Catch::Contains("dra_cpu_allocated_cpus 0\n"));

  // CPUs 5 and 6 go offline, then 6 comes back.
  f.machine.offline = {5, 6};
  dra::testing::WriteFakeSysfs(f.sysfs.path(), f.machine);
  CHECK(PollUntil([&] { return f.Published() == "cpu-socket-0=3,cpu-socket-1=2"; }, absl::Seconds(20)));
  CHECK(PollUntil([&] { return absl::StrContains(f.process.Metrics(), "dra_cpu_allocatable_cpus 5\n"); }));
  CHECK_THAT(f.process.Log(), Catch::Contains("Online CPUs changed; republishing"));
  f.machine.offline = {5};
  dra::testing::WriteFakeSysfs(f.sysfs.path(), f.machine);
  CHECK(PollUntil([&] { return f.Published() == "cpu-socket-0=3,cpu-socket-1=3"; }, absl::Seconds(20)));

  CHECK(f.process.driver.Stop() == "exited with status 0");
}

TEST_CASE("the CPU driver at -v=10 never logs its bearer token", "[examples][cpu][process]") {
  dra::testing::TempDir sysfs;
  dra::testing::FakeMachine machine;
  machine.sockets = 2;
  dra::testing::WriteFakeSysfs(sysfs.path(), machine);
  dra::testing::ExampleDriverProcess process(
      DRA_CPU_DRIVER, "cpu.example.com",
      {"--sysfs-root=" + sysfs.path(), "--nri-socket=", "--reserved-cpus=0", "-v=10"});
  REQUIRE(process.NotifyRegistration(true, "").ok());
  // Everything the driver does at start: the kubeconfig read, the client,
  // the list, watch and create of its slice, registration.
  REQUIRE(PollUntil([&] { return !process.Slices().empty(); }, absl::Seconds(20)));
  process.StopAndCheckTokenNotLogged();
}

}  // namespace
