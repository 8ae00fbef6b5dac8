// The CallContext a driver gets over real Unix sockets, driven by a
// kubelet-like client: the kubelet's deadline, cancellation by the deadline,
// by the serializer queue and by Stop(), request IDs in the logs, and a
// hung driver call that Stop() leaves behind after shutdown_grace.
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "absl/time/clock.h"
#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "support/capturing_logger.h"
#include "support/helper_dirs.h"
#include "support/poll.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletclient::DraApi;
using kubeletclient::DraClient;
using kubeletplugin::Helper;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using testing::AllocatedClaim;
using testing::CapturingSink;
using testing::PollUntil;
using testing::TestDriver;

struct Fixture : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();
  std::shared_ptr<CapturingSink> log = std::make_shared<CapturingSink>();

  Fixture() {
    for (const char* id : {"1", "2"}) {
      claims->Put(AllocatedClaim("ns", std::string("c-") + id, std::string("uid-") + id));
    }
  }
  Options MakeOptions() const {
    Options options = HelperDirs::MakeOptions(claims);
    options.logger = Logger(log, /*verbosity=*/2);
    return options;
  }
};

std::vector<k8s::ClaimRef> Claim(const std::string& id) { return {{"ns", "c-" + id, "uid-" + id}}; }

TEST_CASE("the driver sees the kubelet's deadline, the Helper's logs carry method and request ID",
          "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());

  const absl::Time before = absl::Now();
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Claim("1"), absl::Seconds(7)).ok());
  const absl::Time after = absl::Now();
  driver.FailClaim("uid-2");
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Claim("2"), absl::Seconds(7)).ok());

  const std::vector<absl::Time> deadlines = driver.deadlines();
  REQUIRE(deadlines.size() == 2);
  // The client's 7 s, less transit; gRPC rounds the timeout it sends up and
  // converts the deadline between clocks, so a little past 7 s is the same
  // deadline (the default would be 45 s).
  CHECK(deadlines[0] > before + absl::Seconds(6));
  CHECK(deadlines[0] <= after + absl::Seconds(8));
  CHECK(f.log->Matching("\"Claim done\" method=\"NodePrepareResources\" requestID=\"1\" claim=\"ns/c-1\"").size() == 1);
  CHECK(f.log->Matching("\"Claim failed\" method=\"NodePrepareResources\" requestID=\"2\" claim=\"ns/c-2\"").size() ==
        1);
}

TEST_CASE("a call whose deadline passes is cancelled in the driver, which fails its claims",
          "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.WaitForCancellation();
  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());

  auto answer = client->NodePrepareResources(DraApi::kV1, Claim("1"), absl::Milliseconds(300));
  // The driver answers at the deadline: a slow client (ASan) may read that
  // answer before its own deadline fires.
  if (answer.ok()) {
    CHECK_THAT(answer->at("uid-1").error, Catch::Contains("the call's deadline"));
  } else {
    CHECK(answer.status().code() == absl::StatusCode::kDeadlineExceeded);
  }
  REQUIRE(PollUntil([&] { return driver.cancellations().size() == 1; }));
  CHECK(driver.cancellations()[0].code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(driver.cancellations()[0].message()),
             Catch::StartsWith("NodePrepareResources requestID=1: the call's deadline"));
  // The failed claim was not recorded as prepared: the next call prepares it.
  CHECK(driver.prepared_uids().empty());
}

TEST_CASE("a call cancelled while it waits for the previous one never reaches the driver",
          "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.HoldCalls();
  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());

  auto first = std::async(std::launch::async, [&] {
    return client->NodePrepareResources(DraApi::kV1, Claim("1"), absl::Seconds(60));
  });
  REQUIRE(PollUntil([&] { return driver.calls_inside() == 1; }));
  // Long enough for the call to reach the Helper under TSan on a loaded
  // machine: a call whose deadline passes before that never has a handler.
  auto second = client->NodePrepareResources(DraApi::kV1, Claim("2"), absl::Seconds(2));
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == absl::StatusCode::kDeadlineExceeded);
  driver.ReleaseCalls();
  REQUIRE(first.get().ok());
  // The second call's handler runs once the first left the serializer.
  REQUIRE(PollUntil([&] { return !f.log->Matching("cancelled while waiting for the previous call").empty(); }));
  CHECK(f.log->Matching("\"Call failed\" method=\"NodePrepareResources\" requestID=\"2\"").size() == 1);
  CHECK(driver.prepare_calls() == 1);
  CHECK(driver.prepared_uids() == std::vector<std::string>{"uid-1"});
}

TEST_CASE("Stop cancels a driver call that honours its context, and returns once it did",
          "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.WaitForCancellation();
  Options options = f.MakeOptions();
  options.shutdown_grace = absl::Minutes(5);  // returning must not need the grace
  auto helper = testing::HelperDirs::Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());

  auto call = std::async(std::launch::async, [&] {
    return client->NodeUnprepareResources(DraApi::kV1, Claim("1"), absl::Seconds(60));
  });
  REQUIRE(PollUntil([&] { return driver.calls_inside() == 1; }));
  helper->Stop();
  REQUIRE(driver.cancellations().size() == 1);
  CHECK(driver.cancellations()[0] == absl::UnavailableError("the DRA plugin is stopping"));
  CHECK(f.log->Matching("still running after the shutdown grace").empty());
  auto answer = call.get();
  if (answer.ok()) CHECK(answer->at("uid-1") == "the DRA plugin is stopping");
}

TEST_CASE("Stop with a hung driver call returns after shutdown_grace and names the call",
          "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.HoldCalls();  // deaf to its context
  Options options = f.MakeOptions();
  options.shutdown_grace = absl::Milliseconds(200);
  auto helper = testing::HelperDirs::Start(driver, options);
  const std::string dra_socket = helper->dra_socket_path();
  const std::string registrar_socket = helper->registrar_socket_path();
  auto client = DraClient::Create(dra_socket);

  auto call = std::async(std::launch::async, [&] {
    return client->NodePrepareResources(DraApi::kV1, Claim("1"), absl::Seconds(60));
  });
  REQUIRE(PollUntil([&] { return driver.calls_inside() == 1; }));
  helper->Stop();
  CHECK(driver.calls_inside() == 1);  // Stop returned with the call still inside
  const std::vector<std::string> said = f.log->Matching("Driver calls still running after the shutdown grace");
  REQUIRE(said.size() == 1);
  CHECK_THAT(said[0], Catch::Contains("grace=\"200ms\"") && Catch::Contains("calls=\"NodePrepareResources requestID=1\""));
  CHECK_FALSE(std::filesystem::exists(dra_socket));
  CHECK_FALSE(std::filesystem::exists(registrar_socket));

  // The call finishes on its own; its answer is the driver's.
  driver.ReleaseCalls();
  auto answer = call.get();
  REQUIRE(answer.ok());
  CHECK(answer->at("uid-1").error.empty());
  helper.reset();
}

}  // namespace
}  // namespace dra
