// Mock GPUs: stable identities, and health flipped through the control file.
#include <fstream>

#include <catch2/catch.hpp>

#include "fabric_pool.h"
#include "mock_gpus.h"
#include "support/temp_dir.h"

namespace {

TEST_CASE("mock GPUs are the same after a restart and differ between nodes", "[gpu][mock]") {
  const std::vector<gpu::GpuInfo> a = *gpu::MockGpus("node-a", 3, "").Discover();
  REQUIRE(a.size() == 3);
  CHECK(a == *gpu::MockGpus("node-a", 3, "").Discover());
  CHECK(a[0].uuid != gpu::MockGpus("node-b", 1, "").Discover()->at(0).uuid);
  CHECK(a[0].uuid != a[1].uuid);
  CHECK(a[2].device_nodes.at(0).path == "/dev/mock-gpu2");
  CHECK(a[2].device_nodes.at(0).minor == 2);
  CHECK(a[0].memory_bytes == 80LL << 30);
}

TEST_CASE("fabric GPUs are the same for every node plugin and the fabric controller", "[gpu][mock]") {
  const std::vector<gpu::GpuInfo> fabric = gpu::MockFabricGpus(2);
  REQUIRE(fabric.size() == 2);
  CHECK(fabric == gpu::MockFabricGpus(2));
  CHECK(fabric[0].uuid != gpu::MockGpus("node-a", 1, "").Discover()->at(0).uuid);
  CHECK(fabric[1].device_nodes.at(0).path == "/dev/mock-fabric-gpu1");
}

TEST_CASE("the health file's appended lines are events, a bad line is an error naming it", "[gpu][mock]") {
  dra::testing::TempDir dir;
  const std::string file = dir.Join("health");
  gpu::MockGpus gpus("node-a", 4, file);
  // No file yet: no events.
  CHECK(gpus.WaitForHealthEvents(absl::Milliseconds(1))->empty());
  std::ofstream(file, std::ios::app) << "2 unhealthy\n3 fatal\n1 heal";
  absl::StatusOr<std::vector<gpu::HealthEvent>> events = gpus.WaitForHealthEvents(absl::Seconds(5));
  REQUIRE(events.ok());
  REQUIRE(events->size() == 2);
  CHECK((*events)[0] == gpu::HealthEvent{2, false, false, "mock health file: unhealthy"});
  CHECK((*events)[1].fatal);
  // The partial line completes.
  std::ofstream(file, std::ios::app) << "thy\n";
  events = gpus.WaitForHealthEvents(absl::Seconds(5));
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  CHECK((*events)[0].healthy);
  CHECK((*events)[0].index == 1);
  std::ofstream(file, std::ios::app) << "9 healthy\n";
  events = gpus.WaitForHealthEvents(absl::Seconds(5));
  REQUIRE_FALSE(events.ok());
  CHECK(events.status().message() ==
        file + ": line \"9 healthy\": want \"<index> healthy|unhealthy|fatal\" with index below 4");
}

}  // namespace
