#include "kubeletplugin/device_exclusivity.h"

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace dra::kubeletplugin::internal {
namespace {

HeldDevice Whole(const std::string& device) { return HeldDevice{.pool = "node-1", .device = device}; }

HeldDevice Share(const std::string& device, const std::string& share_id) {
  return HeldDevice{.pool = "node-1", .device = device, .share_id = share_id};
}

Holder HeldBy(const std::vector<HeldDevice>& devices, bool prepared = true) {
  static const k8s::ClaimRef kOldClaim{.namespace_ = "team-a", .name = "old-claim", .uid = "0000-old"};
  return Holder{kOldClaim, prepared, devices};
}

TEST_CASE("One device, two unrelated claims: the second collides, named with the holder and what releases it") {
  const std::vector<HeldDevice> held = {Whole("gpu-0")};
  const std::optional<std::string> collision = Collision(std::vector<HeldDevice>{Whole("gpu-0")}, HeldBy(held));
  REQUIRE(collision.has_value());
  CHECK(*collision ==
        "device node-1/gpu-0 is in use by claim team-a/old-claim (UID 0000-old), prepared on this node: a device "
        "without a shareID or adminAccess serves one claim at a time; this claim is prepared once the kubelet has "
        "unprepared that one (after its pod's containers stopped)");
  const std::optional<std::string> started =
      Collision(std::vector<HeldDevice>{Whole("gpu-0")}, HeldBy(held, /*prepared=*/false));
  REQUIRE(started.has_value());
  CHECK_THAT(*started, Catch::Contains("whose preparation started on this node") &&
                           Catch::EndsWith("or the orphan check has (its ResourceClaim gone)"));
}

TEST_CASE("Other devices, other pools and shares of one device do not collide") {
  const std::vector<HeldDevice> held = {Whole("gpu-0"), Share("gpu-4", "share-a")};
  CHECK_FALSE(Collision(std::vector<HeldDevice>{Whole("gpu-1")}, HeldBy(held)).has_value());
  CHECK_FALSE(
      Collision(std::vector<HeldDevice>{HeldDevice{.pool = "fabric", .device = "gpu-0"}}, HeldBy(held)).has_value());
  CHECK_FALSE(Collision(std::vector<HeldDevice>{Share("gpu-4", "share-b")}, HeldBy(held)).has_value());
  // A share of a device another claim holds whole (or the other way round)
  // is two claims on one exclusive allocation.
  CHECK(Collision(std::vector<HeldDevice>{Share("gpu-0", "share-b")}, HeldBy(held)).has_value());
  CHECK(Collision(std::vector<HeldDevice>{Whole("gpu-4")}, HeldBy(held)).has_value());
}

TEST_CASE("A device known from a CDI spec alone is that device in any pool, shared when the other allocation is") {
  // A quarantined claim's: its record lost, its pool and shareID with it.
  const std::vector<HeldDevice> held = {HeldDevice{.pool = "", .device = "gpu-0"}};
  CHECK(Collision(std::vector<HeldDevice>{Whole("gpu-0")}, HeldBy(held)).has_value());
  CHECK(Collision(std::vector<HeldDevice>{HeldDevice{.pool = "fabric", .device = "gpu-0"}}, HeldBy(held)).has_value());
  // A device either allows multiple allocations, each with a shareID, or none.
  CHECK_FALSE(Collision(std::vector<HeldDevice>{Share("gpu-0", "share-b")}, HeldBy(held)).has_value());
  CHECK_FALSE(Collision(std::vector<HeldDevice>{Whole("gpu-1")}, HeldBy(held)).has_value());
}

TEST_CASE("adminAccess on either side never collides") {
  HeldDevice admin = Whole("gpu-0");
  admin.admin_access = true;
  CHECK_FALSE(Collision(std::vector<HeldDevice>{admin}, HeldBy({Whole("gpu-0")})).has_value());
  CHECK_FALSE(Collision(std::vector<HeldDevice>{Whole("gpu-0")}, HeldBy({admin})).has_value());
}

TEST_CASE("Devices with a unit in common collide, and the error names the unit and the other device") {
  HeldDevice partition = Whole("gpu-0-partition-1");
  partition.units = {"gpu-0/1"};
  HeldDevice other_partition = Whole("gpu-0-partition-2");
  other_partition.units = {"gpu-0/2"};
  HeldDevice full = Whole("gpu-0-full");
  full.units = {"gpu-0/0", "gpu-0/1", "gpu-0/2"};
  const std::optional<std::string> collision = Collision(std::vector<HeldDevice>{full}, HeldBy({partition}));
  REQUIRE(collision.has_value());
  CHECK_THAT(*collision,
             Catch::Contains("device node-1/gpu-0-full is in use by claim team-a/old-claim") &&
                 Catch::Contains("(its device node-1/gpu-0-partition-1 occupies the same unit \"gpu-0/1\")"));
  CHECK_FALSE(Collision(std::vector<HeldDevice>{other_partition}, HeldBy({partition})).has_value());
}

TEST_CASE("The keys find every holder a claim may collide with, and not shares of a device another share wants") {
  HeldDevice admin = Whole("gpu-0");
  admin.admin_access = true;
  HeldDevice partition = Whole("gpu-0-partition-1");
  partition.units = {"gpu-0/1"};
  HeldDevice full = Whole("gpu-0-full");
  full.units = {"gpu-0/0", "gpu-0/1"};
  const std::vector<HeldDevice> devices = {Whole("gpu-0"),
                                           Whole("gpu-1"),
                                           HeldDevice{.pool = "fabric", .device = "gpu-0"},
                                           HeldDevice{.pool = "", .device = "gpu-0"},
                                           Share("gpu-0", "share-a"),
                                           Share("gpu-0", "share-b"),
                                           admin,
                                           partition,
                                           full};
  const auto meet = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    return std::find_first_of(a.begin(), a.end(), b.begin(), b.end()) != a.end();
  };
  for (const HeldDevice& wanted : devices) {
    for (const HeldDevice& held : devices) {
      const bool collides = Collision(std::vector<HeldDevice>{wanted}, HeldBy({held})).has_value();
      const bool found = meet(WantedKeys(std::vector<HeldDevice>{wanted}), HoldKeys(std::vector<HeldDevice>{held}));
      INFO("wanted " << wanted.pool << "/" << wanted.device << ", held " << held.pool << "/" << held.device);
      if (collides) CHECK(found);
    }
  }
  // Shares of one device, the bench's 1,024 claims: none is looked at for another.
  CHECK_FALSE(meet(WantedKeys(std::vector<HeldDevice>{Share("gpu-0", "share-b")}),
                   HoldKeys(std::vector<HeldDevice>{Share("gpu-0", "share-a")})));
  CHECK(HoldKeys(std::vector<HeldDevice>{admin}).empty());
}

TEST_CASE("HeldDevicesOf: a claim's allocation results with their units, sorted and distinct") {
  k8s::ResourceClaim claim;
  claim.status.allocation.emplace();
  auto result = [&](const std::string& device) -> k8s::DeviceRequestAllocationResult& {
    k8s::DeviceRequestAllocationResult& added = claim.status.allocation->devices.results.emplace_back();
    added.request = "gpu";
    added.driver = "gpu.example.com";
    added.pool = "node-1";
    added.device = device;
    return added;
  };
  result("gpu-0-full");
  k8s::DeviceRequestAllocationResult& shared = result("gpu-1");
  shared.admin_access = true;
  shared.share_id = "share-1";
  const DeviceUnits units = [](std::string_view pool, std::string_view device) -> std::vector<std::string> {
    if (pool == "node-1" && device == "gpu-0-full") return {"gpu-0/1", "gpu-0/0", "gpu-0/1"};
    return {};
  };
  const std::vector<HeldDevice> held = HeldDevicesOf(claim, units);
  REQUIRE(held.size() == 2);
  CHECK(held[0] == HeldDevice{.pool = "node-1", .device = "gpu-0-full", .units = {"gpu-0/0", "gpu-0/1"}});
  CHECK(held[1] == HeldDevice{.pool = "node-1", .device = "gpu-1", .share_id = "share-1", .admin_access = true});
  CHECK(HeldDevicesOf(claim, DeviceUnits())[0].units.empty());

  std::vector<Device> prepared(1);
  prepared[0].pool_name = "node-1";
  prepared[0].device_name = "gpu-0-full";
  CHECK(HeldDevicesOf(prepared, units) ==
        std::vector<HeldDevice>{{.pool = "node-1", .device = "gpu-0-full", .units = {"gpu-0/0", "gpu-0/1"}}});
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
