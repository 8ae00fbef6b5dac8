// Device exclusivity (Options::device_exclusivity) through the Helper's
// sockets: a device another claim on the node holds is refused for that
// claim alone, until the holder is unprepared.
#include <catch2/catch.hpp>

#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "support/helper_dirs.h"
#include "support/http_get.h"
#include "support/kubelet_calls.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletclient::DraApi;
using kubeletclient::DraClient;
using kubeletplugin::Helper;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using testing::AllocatedClaim;
using testing::HttpGet;
using testing::Prepare;
using testing::TestDriver;
using testing::Unprepare;

struct Fixture : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();
  Options MakeOptions() const { return HelperDirs::MakeOptions(claims); }
};

const k8s::ClaimRef kOld{"team-a", "old", "00000000-0000-4000-8000-00000000000a"};
const k8s::ClaimRef kNew{"team-b", "new", "00000000-0000-4000-8000-00000000000b"};

void Put(Fixture& f, const k8s::ClaimRef& ref, const std::vector<std::string>& devices = {"gpu-0"}) {
  f.claims->Put(AllocatedClaim(ref.namespace_, ref.name, ref.uid, devices));
}

// The claim's allocation result for "gpu-0".
k8s::DeviceRequestAllocationResult& Gpu0(k8s::ResourceClaim& claim) {
  return claim.status.allocation->devices.results.front();
}

TEST_CASE("exclusivity: a device held by a prepared claim is refused until the kubelet unprepares it",
          "[exclusivity]") {
  Fixture f;
  Put(f, kOld);
  Put(f, kNew);
  TestDriver driver;
  Options options = f.MakeOptions();
  options.http_endpoint = "127.0.0.1:0";
  auto helper = Fixture::Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(Prepare(*client, kOld).empty());

  const std::string refused = Prepare(*client, kNew);
  CHECK(refused ==
        "device pool-a/gpu-0 is in use by claim team-a/old (UID 00000000-0000-4000-8000-00000000000a), prepared on "
        "this node: a device without a shareID or adminAccess serves one claim at a time; this claim is prepared "
        "once the kubelet has unprepared that one (after its pod's containers stopped)");
  // The driver never saw it; v1beta1 gets the same answer; the holder is
  // still answered.
  CHECK(driver.prepared_uids() == std::vector<std::string>{kOld.uid});
  CHECK(Prepare(*client, kNew, DraApi::kV1beta1) == refused);
  CHECK(Prepare(*client, kOld).empty());
  CHECK_THAT(HttpGet(helper->http_port(), "/metrics").second,
             Catch::Contains("dra_device_exclusivity_refusals_total 2\n"));

  REQUIRE(Unprepare(*client, kOld).empty());
  CHECK(Prepare(*client, kNew).empty());
  CHECK(driver.prepared_uids() == std::vector<std::string>{kOld.uid, kNew.uid});
  // Now the old claim is the one refused (its pod came back, say).
  CHECK_THAT(Prepare(*client, kOld), Catch::StartsWith("device pool-a/gpu-0 is in use by claim team-b/new"));
}

TEST_CASE("exclusivity: two claims for one device in one call: the first is prepared, the second refused alone",
          "[exclusivity]") {
  Fixture f;
  Put(f, kOld, {"gpu-0", "gpu-1"});
  Put(f, kNew, {"gpu-2", "gpu-1"});
  const k8s::ClaimRef other{"team-c", "other", "00000000-0000-4000-8000-00000000000c"};
  Put(f, other, {"gpu-3"});
  TestDriver driver;
  auto helper = Fixture::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());
  auto answer = client->NodePrepareResources(DraApi::kV1, std::vector<k8s::ClaimRef>{kOld, kNew, other});
  REQUIRE(answer.ok());
  CHECK(answer->at(kOld.uid).error.empty());
  CHECK_THAT(answer->at(kNew.uid).error, Catch::StartsWith("device pool-a/gpu-1 is in use by claim team-a/old (UID " +
                                                           kOld.uid + "), whose preparation started on this node"));
  CHECK(answer->at(other.uid).error.empty());
  CHECK(driver.prepared_uids() == std::vector<std::string>{kOld.uid, other.uid});
}

TEST_CASE("exclusivity: shares of one device, and adminAccess, are not refused", "[exclusivity]") {
  Fixture f;
  TestDriver driver;
  auto helper = Fixture::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());

  SECTION("both allocations carry a shareID") {
    k8s::ResourceClaim old_claim = AllocatedClaim(kOld.namespace_, kOld.name, kOld.uid);
    Gpu0(old_claim).share_id = "share-old";
    k8s::ResourceClaim new_claim = AllocatedClaim(kNew.namespace_, kNew.name, kNew.uid);
    Gpu0(new_claim).share_id = "share-new";
    f.claims->Put(old_claim);
    f.claims->Put(new_claim);
    CHECK(Prepare(*client, kOld).empty());
    CHECK(Prepare(*client, kNew).empty());
  }
  SECTION("only one carries a shareID: one of them holds the device whole") {
    k8s::ResourceClaim old_claim = AllocatedClaim(kOld.namespace_, kOld.name, kOld.uid);
    Gpu0(old_claim).share_id = "share-old";
    f.claims->Put(old_claim);
    Put(f, kNew);
    CHECK(Prepare(*client, kOld).empty());
    CHECK_FALSE(Prepare(*client, kNew).empty());
  }
  SECTION("the new one has adminAccess") {
    Put(f, kOld);
    k8s::ResourceClaim admin = AllocatedClaim(kNew.namespace_, kNew.name, kNew.uid);
    Gpu0(admin).admin_access = true;
    f.claims->Put(admin);
    CHECK(Prepare(*client, kOld).empty());
    CHECK(Prepare(*client, kNew).empty());
  }
  SECTION("the holder has adminAccess") {
    k8s::ResourceClaim admin = AllocatedClaim(kOld.namespace_, kOld.name, kOld.uid);
    Gpu0(admin).admin_access = true;
    f.claims->Put(admin);
    Put(f, kNew);
    CHECK(Prepare(*client, kOld).empty());
    CHECK(Prepare(*client, kNew).empty());
  }
}

TEST_CASE("exclusivity: devices that share a unit (a partition and its whole GPU) are refused", "[exclusivity]") {
  Fixture f;
  Put(f, kOld, {"gpu-0-partition-1"});
  Put(f, kNew, {"gpu-0-full"});
  const k8s::ClaimRef sibling{"team-c", "sibling", "00000000-0000-4000-8000-00000000000c"};
  Put(f, sibling, {"gpu-0-partition-2"});
  TestDriver driver;
  Options options = f.MakeOptions();
  options.device_exclusivity.units = [](std::string_view pool, std::string_view device) -> std::vector<std::string> {
    if (pool != "pool-a") return {};
    if (device == "gpu-0-full") return {"gpu-0/1", "gpu-0/2"};
    if (device == "gpu-0-partition-1") return {"gpu-0/1"};
    if (device == "gpu-0-partition-2") return {"gpu-0/2"};
    return {};
  };
  auto helper = Fixture::Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(Prepare(*client, kOld).empty());
  CHECK(Prepare(*client, sibling).empty());
  CHECK_THAT(Prepare(*client, kNew),
             Catch::Contains("device pool-a/gpu-0-full is in use by claim team-a/old") &&
                 Catch::Contains("(its device pool-a/gpu-0-partition-1 occupies the same unit \"gpu-0/1\")"));
}

TEST_CASE("exclusivity: the holds survive a restart in the checkpoint, a claim that failed holds its devices",
          "[exclusivity]") {
  Fixture f;
  Put(f, kOld);
  Put(f, kNew);
  const k8s::ClaimRef failed{"team-c", "failed", "00000000-0000-4000-8000-00000000000c"};
  Put(f, failed, {"gpu-5"});
  const k8s::ClaimRef later{"team-d", "later", "00000000-0000-4000-8000-00000000000d"};
  Put(f, later, {"gpu-5"});
  {
    TestDriver driver;
    driver.FailClaim(failed.uid);
    auto helper = Fixture::Start(driver, f.MakeOptions());
    auto client = DraClient::Create(helper->dra_socket_path());
    REQUIRE(Prepare(*client, kOld).empty());
    REQUIRE(Prepare(*client, failed) == "injected failure");
  }
  TestDriver restarted;
  auto helper = Fixture::Start(restarted, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());
  CHECK_THAT(Prepare(*client, kNew), Catch::StartsWith("device pool-a/gpu-0 is in use by claim team-a/old"));
  // The driver may have touched the device before it failed: it stays held
  // until the kubelet unprepares that claim too.
  CHECK_THAT(Prepare(*client, later), Catch::StartsWith("device pool-a/gpu-5 is in use by claim team-c/failed (UID " +
                                                        failed.uid + "), whose preparation started"));
  REQUIRE(Unprepare(*client, kOld).empty());
  REQUIRE(Unprepare(*client, failed).empty());
  CHECK(Prepare(*client, kNew).empty());
  CHECK(Prepare(*client, later).empty());
  CHECK(restarted.prepare_calls() == 2);
}

TEST_CASE("exclusivity: off, or with the checkpoint off, every claim goes to the driver", "[exclusivity]") {
  Fixture f;
  Put(f, kOld);
  Put(f, kNew);
  Options options = f.MakeOptions();
  SECTION("off") { options.device_exclusivity.enabled = false; }
  SECTION("checkpoint off") { options.checkpoint = false; }
  TestDriver driver;
  auto helper = Fixture::Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());
  CHECK(Prepare(*client, kOld).empty());
  CHECK(Prepare(*client, kNew).empty());
  CHECK(driver.prepare_calls() == 2);
}

}  // namespace
}  // namespace dra
