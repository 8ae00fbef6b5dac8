// The CallContext a driver gets over real Unix sockets, driven by a
// kubelet-like client: the kubelet's deadline, cancellation by the deadline,
// by the serializer queue and by Stop(), request IDs in the logs, and a
// hung driver call that Stop() leaves behind after shutdown_grace.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <future>
#include <list>
#include <thread>

#include "absl/time/clock.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/v1/api.grpc.pb.h"
#include "dractl/kubelet_client.h"
#include "support/capturing_logger.h"
#include "support/helper_dirs.h"
#include "support/http_get.h"
#include "support/poll.h"
#include "support/test_driver.h"

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

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

// How long a wait for an event may take before the test gives up: generous,
// so that only a lost event (a bug) ends it, never a slow machine (TSan).
constexpr absl::Duration kEventWait = absl::Minutes(2);

struct Fixture : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();
  std::shared_ptr<CapturingSink> log = std::make_shared<CapturingSink>();

  Fixture() {
    for (const char* id : {"1", "2"}) {
      claims->Put(AllocatedClaim("ns", std::string("c-") + id, std::string("uid-") + id, {std::string("gpu-") + id}));
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

TEST_CASE("at -v 4 a prepare logs where its time went, below that it does not", "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  options.logger = Logger(f.log, /*verbosity=*/4);
  auto helper = testing::HelperDirs::Start(driver, std::move(options));
  auto client = DraClient::Create(helper->dra_socket_path());

  REQUIRE(client->NodePrepareResources(DraApi::kV1, Claim("1"), kEventWait).ok());
  const std::vector<std::string> timing =
      f.log->Matching("\"Call timing\" method=\"NodePrepareResources\" requestID=\"1\" total=");
  REQUIRE(timing.size() == 1);
  for (const char* field : {" fetch=\"", " wait=\"", " checkpoint=\"", " driver=\""}) {
    CHECK_THAT(timing[0], Catch::Contains(field));
  }
  // Unprepare has no such line; a -v 2 logger none at all.
  REQUIRE(client->NodeUnprepareResources(DraApi::kV1, Claim("1"), kEventWait).ok());
  CHECK(f.log->Matching("\"Call timing\"").size() == 1);

  Fixture quiet;
  auto helper2 = testing::HelperDirs::Start(driver, quiet.MakeOptions());
  auto client2 = DraClient::Create(helper2->dra_socket_path());
  REQUIRE(client2->NodePrepareResources(DraApi::kV1, Claim("2"), kEventWait).ok());
  CHECK(quiet.log->Matching("\"Claim done\"").size() == 1);
  CHECK(quiet.log->Matching("\"Call timing\"").empty());
}

TEST_CASE("a call whose deadline passes is cancelled in the driver, which fails its claims", "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.WaitForCancellation();
  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());

  // The deadline must pass while the driver waits, not before the call
  // reached it (on a loaded machine it may not get there in time: the call
  // then fails without the driver): until the driver saw a call, again with
  // twice the time.
  for (absl::Duration timeout = absl::Milliseconds(300); driver.cancellations().empty(); timeout *= 2) {
    auto answer = client->NodePrepareResources(DraApi::kV1, Claim("1"), timeout);
    // The driver answers at the deadline: a slow client (ASan) may read that
    // answer before its own deadline fires.
    if (answer.ok()) {
      CHECK_THAT(answer->at("uid-1").error, Catch::Contains("the call's deadline"));
    } else {
      CHECK(answer.status().code() == absl::StatusCode::kDeadlineExceeded);
    }
    REQUIRE(PollUntil([&] { return driver.calls_inside() == 0; }, kEventWait));
  }
  CHECK(driver.cancellations()[0].code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(driver.cancellations()[0].message()),
             Catch::StartsWith("NodePrepareResources requestID=") && Catch::Contains(": the call's deadline"));
  // The failed claim was not recorded as prepared: the next call prepares it.
  CHECK(driver.prepared_uids().empty());
}

TEST_CASE("a call cancelled while it waits for the previous one never reaches the driver", "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.HoldCalls();
  Options options = f.MakeOptions();
  options.http_endpoint = "127.0.0.1:0";
  auto helper = testing::HelperDirs::Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());

  auto first = std::async(std::launch::async,
                          [&] { return client->NodePrepareResources(DraApi::kV1, Claim("1"), absl::Seconds(60)); });
  REQUIRE(PollUntil([&] { return driver.calls_inside() == 1; }, kEventWait));
  // The second call, cancelled by its caller once it waits in the Helper's
  // queue and not before: a deadline could pass before it got there.
  auto stub = drapb::DRAPlugin::NewStub(
      grpc::CreateChannel("unix:" + helper->dra_socket_path(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext second_context;
  drapb::NodePrepareResourcesRequest request;
  drapb::Claim* claim = request.add_claims();
  claim->set_namespace_("ns");
  claim->set_name("c-2");
  claim->set_uid("uid-2");
  auto second = std::async(std::launch::async, [&] {
    drapb::NodePrepareResourcesResponse response;
    return stub->NodePrepareResources(&second_context, request, &response);
  });
  REQUIRE(PollUntil(
      [&] {
        return testing::HttpGet(helper->http_port(), "/metrics").second.find("dra_serialization_waiting_calls 1\n") !=
               std::string::npos;
      },
      kEventWait, absl::Milliseconds(20)));
  second_context.TryCancel();
  CHECK(second.get().error_code() == grpc::StatusCode::CANCELLED);
  REQUIRE(PollUntil(
      [&] {
        return !f.log->Matching("\"Caller cancelled the call\" method=\"NodePrepareResources\" requestID=\"2\"")
                    .empty();
      },
      kEventWait));
  driver.ReleaseCalls();
  REQUIRE(first.get().ok());
  // The second call's handler runs once the first left the serializer.
  REQUIRE(
      PollUntil([&] { return !f.log->Matching("cancelled while waiting for the previous call").empty(); }, kEventWait));
  const std::vector<std::string> failed =
      f.log->Matching("\"Call failed\" method=\"NodePrepareResources\" requestID=\"2\"");
  REQUIRE(failed.size() == 1);
  CHECK_THAT(failed[0], Catch::Contains("the caller cancelled the call"));
  CHECK(driver.prepare_calls() == 1);
  CHECK(driver.prepared_uids() == std::vector<std::string>{"uid-1"});
}

TEST_CASE("Stop cancels a driver call that honours its context, and returns once it did", "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.WaitForCancellation();
  Options options = f.MakeOptions();
  options.shutdown_grace = absl::Minutes(5);  // returning must not need the grace
  auto helper = testing::HelperDirs::Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());

  auto call = std::async(std::launch::async,
                         [&] { return client->NodeUnprepareResources(DraApi::kV1, Claim("1"), absl::Seconds(60)); });
  REQUIRE(PollUntil([&] { return driver.calls_inside() == 1; }));
  helper->Stop();
  REQUIRE(driver.cancellations().size() == 1);
  CHECK(driver.cancellations()[0] == absl::UnavailableError("the DRA plugin is stopping"));
  CHECK(f.log->Matching("still running after the shutdown grace").empty());
  auto answer = call.get();
  if (answer.ok()) CHECK(answer->at("uid-1") == "the DRA plugin is stopping");
}

TEST_CASE("Stop with a hung driver call returns after shutdown_grace and names the call", "[helper][call_context]") {
  Fixture f;
  TestDriver driver;
  driver.HoldCalls();  // deaf to its context
  Options options = f.MakeOptions();
  options.shutdown_grace = absl::Milliseconds(200);
  auto helper = testing::HelperDirs::Start(driver, options);
  const std::string dra_socket = helper->dra_socket_path();
  const std::string registrar_socket = helper->registrar_socket_path();
  auto client = DraClient::Create(dra_socket);

  auto call = std::async(std::launch::async,
                         [&] { return client->NodePrepareResources(DraApi::kV1, Claim("1"), absl::Seconds(60)); });
  REQUIRE(PollUntil([&] { return driver.calls_inside() == 1; }));
  helper->Stop();
  CHECK(driver.calls_inside() == 1);  // Stop returned with the call still inside
  const std::vector<std::string> said = f.log->Matching("Driver calls still running after the shutdown grace");
  REQUIRE(said.size() == 1);
  CHECK_THAT(said[0],
             Catch::Contains("grace=\"200ms\"") && Catch::Contains("calls=\"NodePrepareResources requestID=1\""));
  CHECK_FALSE(std::filesystem::exists(dra_socket));
  CHECK_FALSE(std::filesystem::exists(registrar_socket));

  // The call finishes on its own; its answer is the driver's.
  driver.ReleaseCalls();
  auto answer = call.get();
  REQUIRE(answer.ok());
  CHECK(answer->at("uid-1").error.empty());
  helper.reset();
}

TEST_CASE("a Helper destroyed right after a hung call's answer went out", "[helper][call_context]") {
  // The answer is sent from an executor thread inside gRPC's Finish, which
  // may still run when the Helper's last owner (the thread Stop() left to
  // shut the DRA server down, or the driver) destroys it: the server must
  // not be deleted before the executor's threads are joined. ThreadSanitizer
  // sees it when it happens; each round is a chance.
  Fixture f;
  std::list<TestDriver> drivers;  // outlive the Helpers, which end on their own threads
  for (int round = 0; round < 10; ++round) {
    TestDriver& driver = drivers.emplace_back();
    driver.HoldCalls();
    Options options = f.MakeOptions();
    options.shutdown_grace = absl::ZeroDuration();
    options.plugin_data_dir += "/" + std::to_string(round);
    auto helper = testing::HelperDirs::Start(driver, options);
    auto client = DraClient::Create(helper->dra_socket_path());
    auto call = std::async(std::launch::async,
                           [&] { return client->NodePrepareResources(DraApi::kV1, Claim("1"), absl::Seconds(60)); });
    REQUIRE(PollUntil([&] { return driver.calls_inside() == 1; }, kEventWait));
    helper->Stop();
    driver.ReleaseCalls();
    REQUIRE(call.get().ok());
    helper.reset();
  }
}

}  // namespace
}  // namespace dra
