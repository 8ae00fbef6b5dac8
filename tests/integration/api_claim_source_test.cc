// ApiClaimSource and the Helper against the fake API server
// (tests/support/fakeapiserver) over real HTTPS, driven by a kubelet-like
// client over real Unix sockets: claims are created through the REST client
// and allocated through the /status subresource, as the scheduler does.
// Also the orphan reaper, end to end and check by check.
//
// The one timing assertion (concurrent fetches) has a bound four times the
// work it measures; everything else waits with PollUntil.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/kubeletplugin/api_claim_source.h"
#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/orphan_reaper.h"
#include "support/claim_object.h"
#include "support/discard_logger.h"
#include "support/fake_api_claims.h"
#include "support/fake_apiserver.h"
#include "support/free_port.h"
#include "support/helper_dirs.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletclient::DraApi;
using kubeletclient::DraClient;
using kubeletplugin::ApiClaimSource;
using kubeletplugin::Helper;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using kubeletplugin::internal::Checkpoint;
using kubeletplugin::internal::CheckpointEntry;
using kubeletplugin::internal::ClaimState;
using kubeletplugin::internal::OrphanReaper;
using nlohmann::json;
using testing::AdminClientConfig;
using testing::AllocatedClaim;
using testing::CreateAllocatedClaim;
using testing::CreateClaim;
using testing::FakeApiServer;
using testing::MakeClient;
using testing::PollUntil;
using testing::StartServer;
using testing::TempDir;
using testing::TestDriver;

constexpr const char* kNamespace = testing::kClaimNamespace;

// GET requests the fake server has seen for one claim.
int ClaimGets(const FakeApiServer& server, const std::string& name) {
  absl::StatusOr<std::string> body = server.Admin("GET", "/fake/requests");
  REQUIRE(body.ok());
  int gets = 0;
  const json log = json::parse(*body);
  for (const json& request : log["requests"]) {
    if (request.value("verb", "") == "GET" && request.value("resource", "") == "resourceclaims" &&
        request.value("name", "") == name) {
      ++gets;
    }
  }
  return gets;
}

void SetDelay(const FakeApiServer& server, int milliseconds) {
  absl::StatusOr<std::string> r = server.Admin("POST", "/fake/delay", json{{"milliseconds", milliseconds}}.dump());
  INFO(r.status().ToString());
  REQUIRE(r.ok());
}

// A registry dir and plugin data dir in a temp dir, claims from the API.
struct Fixture : testing::HelperDirs {
  Options MakeOptions(std::shared_ptr<k8s::Client> client) const {
    return HelperDirs::MakeOptions(std::make_shared<ApiClaimSource>(std::move(client)));
  }

  // Writes checkpoint entries before the Helper starts, as a crashed one
  // would have left them.
  void SeedCheckpoint(const std::vector<CheckpointEntry>& entries) const {
    std::filesystem::create_directories(data);
    absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(data + "/checkpoint.json");
    REQUIRE(checkpoint.ok());
    std::vector<kubeletplugin::internal::CheckpointChange> changes;
    for (const CheckpointEntry& entry : entries) changes.push_back({entry.claim.uid, entry});
    REQUIRE((*checkpoint)->Commit(std::move(changes)).ok());
  }

  // What the checkpoint file holds now, by UID.
  std::map<std::string, ClaimState> CheckpointStates() const {
    absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(data + "/checkpoint.json");
    INFO(checkpoint.status().ToString());
    REQUIRE(checkpoint.ok());
    std::map<std::string, ClaimState> states;
    for (const CheckpointEntry& entry : (*checkpoint)->Entries()) states[entry.claim.uid] = entry.state;
    return states;
  }
};

CheckpointEntry Started(const std::string& name, const std::string& uid) {
  CheckpointEntry entry;
  entry.claim = k8s::ClaimRef{kNamespace, name, uid};
  entry.state = ClaimState::kPrepareStarted;
  return entry;
}

std::set<std::string> AsSet(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

TEST_CASE("ApiClaimSource reads the claim and keeps the client's errors", "[api_claim_source]") {
  auto server = StartServer();
  auto client = MakeClient(*server);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "c", {"gpu-0", "gpu-1"});
  ApiClaimSource source(client);

  absl::StatusOr<k8s::ResourceClaim> claim = source.GetClaim(ref, CallContext::Background());
  INFO(claim.status().ToString());
  REQUIRE(claim.ok());
  CHECK(claim->metadata.uid == ref.uid);
  REQUIRE(claim->status.allocation.has_value());
  CHECK(claim->status.allocation->devices.results.size() == 3);  // ours two, and the NIC

  absl::StatusOr<k8s::ResourceClaim> missing =
      source.GetClaim({kNamespace, "missing", "uid-x"}, CallContext::Background());
  REQUIRE_FALSE(missing.ok());
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(k8s::HttpStatusCode(missing.status()) == 404);
  CHECK(k8s::StatusReason(missing.status()) == "NotFound");
  CHECK_THAT(std::string(missing.status().message()),
             Catch::Contains("\"missing\" not found") &&
                 Catch::Contains("GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/missing"));

  CHECK(absl::IsFailedPrecondition(ApiClaimSource(nullptr).GetClaim(ref, CallContext::Background()).status()));
}

TEST_CASE("the Helper prepares claims it reads from the API server", "[api_claim_source]") {
  auto server = StartServer();
  auto client = MakeClient(*server);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "gpu-claim", {"gpu-0", "gpu-1"});
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver, f.MakeOptions(client));

  auto kubelet = DraClient::Create(helper->dra_socket_path());
  auto prepared = kubelet->NodePrepareResources(DraApi::kV1, std::vector<k8s::ClaimRef>{ref});
  INFO(prepared.status().ToString());
  REQUIRE(prepared.ok());
  REQUIRE(prepared->size() == 1);
  const kubeletclient::PrepareOutcome& outcome = prepared->at(ref.uid);
  CHECK(outcome.error.empty());
  REQUIRE(outcome.devices.size() == 2);
  CHECK(outcome.devices[0].cdi_device_ids == std::vector<std::string>{TestDriver::CdiId(ref.uid, "gpu-0")});
  CHECK(outcome.devices[1].cdi_device_ids == std::vector<std::string>{TestDriver::CdiId(ref.uid, "gpu-1")});
  CHECK(ClaimGets(*server, "gpu-claim") == 1);

  // Prepared claims are answered from the checkpoint, without the API.
  auto again = kubelet->NodePrepareResources(DraApi::kV1beta1, std::vector<k8s::ClaimRef>{ref});
  REQUIRE(again.ok());
  CHECK(again->at(ref.uid).error.empty());
  CHECK(ClaimGets(*server, "gpu-claim") == 1);
  CHECK(driver.prepare_calls() == 1);
}

TEST_CASE("claims read from the API fail only themselves", "[api_claim_source]") {
  auto server = StartServer();
  auto client = MakeClient(*server);
  const k8s::ClaimRef good = CreateAllocatedClaim(*client, "good");
  // Deleted and created again: same name, new UID.
  const k8s::ClaimRef old = CreateAllocatedClaim(*client, "replaced");
  REQUIRE(client->Delete(k8s::kResourceClaims, kNamespace, "replaced").ok());
  const k8s::ClaimRef replacement = CreateAllocatedClaim(*client, "replaced");
  REQUIRE(replacement.uid != old.uid);
  const k8s::ResourceClaim pending = CreateClaim(*client, "pending");  // never allocated
  const k8s::ClaimRef missing{kNamespace, "missing", "uid-missing"};

  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver, f.MakeOptions(client));
  auto prepared =
      DraClient::Create(helper->dra_socket_path())
          ->NodePrepareResources(DraApi::kV1, std::vector<k8s::ClaimRef>{
                                                  good, old, {kNamespace, "pending", pending.metadata.uid}, missing});
  INFO(prepared.status().ToString());
  REQUIRE(prepared.ok());
  REQUIRE(prepared->size() == 4);
  CHECK(prepared->at(good.uid).error.empty());
  CHECK(prepared->at(good.uid).devices.size() == 1);
  CHECK(prepared->at(old.uid).error == "claim ns/replaced got replaced");
  CHECK(prepared->at(pending.metadata.uid).error == "claim ns/pending not allocated");
  CHECK_THAT(prepared->at(missing.uid).error, Catch::StartsWith("retrieve claim ns/missing: ") &&
                                                  Catch::Contains("\"missing\" not found") &&
                                                  Catch::Contains("HTTP 404"));
  CHECK(driver.prepared_uids() == std::vector<std::string>{good.uid});
}

TEST_CASE("the claims of one call are fetched concurrently", "[api_claim_source]") {
  constexpr int kClaims = 8;
  constexpr int kDelayMs = 200;
  auto server = StartServer();
  auto admin = MakeClient(*server);
  std::vector<k8s::ClaimRef> refs;
  for (int i = 0; i < kClaims; ++i) {
    refs.push_back(CreateAllocatedClaim(*admin, absl::StrCat("c", i), {absl::StrCat("gpu-", i)}));
  }

  Fixture f;
  TestDriver driver;
  // A client of its own with the default rate limit: a fresh bucket lets a
  // pod's claims go out at once.
  auto helper = f.Start(driver, f.MakeOptions(MakeClient(*server, /*default_rate_limit=*/true)));
  auto kubelet = DraClient::Create(helper->dra_socket_path());
  SetDelay(*server, kDelayMs);

  REQUIRE(server->Admin("POST", "/fake/reset", "{}").ok());
  auto prepared = kubelet->NodePrepareResources(DraApi::kV1, refs);
  INFO(prepared.status().ToString());
  REQUIRE(prepared.ok());
  REQUIRE(prepared->size() == static_cast<size_t>(kClaims));
  for (const k8s::ClaimRef& ref : refs) CHECK(prepared->at(ref.uid).error.empty());
  CHECK(driver.prepare_calls() == 1);
  // Each GET takes 200 ms in the server: fetched one after another, never
  // two would be in flight at once.
  absl::StatusOr<std::string> requests = server->Admin("GET", "/fake/requests");
  REQUIRE(requests.ok());
  const json counts = json::parse(*requests);
  INFO(counts["peakInFlight"].dump());
  CHECK(counts["counts"]["GET resourceclaims"] == kClaims);
  CHECK(counts["peakInFlight"]["GET resourceclaims"] == kClaims);
}

TEST_CASE("with the API server down every claim is answered with a clear error", "[api_claim_source]") {
  auto server = StartServer();
  auto client = MakeClient(*server);
  const k8s::ClaimRef a = CreateAllocatedClaim(*client, "a");
  const k8s::ClaimRef b = CreateAllocatedClaim(*client, "b");
  // The Helper's API server is down: its client's port refuses connections.
  // (Not the stopped server's port: a test beside this one may start its own
  // server there, whose certificate this client then refuses.)
  const testing::RefusingPort down;
  k8s::ClientConfig config = AdminClientConfig(*server, /*default_rate_limit=*/false, /*max_retries=*/1);
  config.server = absl::StrCat("https://127.0.0.1:", down.port());
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver, f.MakeOptions(MakeClient(config)));

  auto prepared =
      DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, std::vector<k8s::ClaimRef>{a, b});
  INFO(prepared.status().ToString());
  REQUIRE(prepared.ok());
  REQUIRE(prepared->size() == 2);
  for (const auto& [ref, name] : {std::pair{a, "a"}, std::pair{b, "b"}}) {
    INFO(prepared->at(ref.uid).error);
    CHECK_THAT(prepared->at(ref.uid).error,
               Catch::StartsWith(absl::StrCat("retrieve claim ns/", name, ": ")) &&
                   Catch::Contains("cannot reach the API server") &&
                   Catch::Contains(absl::StrCat("GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/", name)));
  }
  CHECK(driver.prepare_calls() == 0);
}

TEST_CASE(
    "a 429 storm: the kubelet's call is answered before its deadline with each claim's error, not after "
    "the Retry-After",
    "[api_claim_source]") {
  auto server = StartServer();
  auto client = MakeClient(*server);
  const k8s::ClaimRef a = CreateAllocatedClaim(*client, "a");
  const k8s::ClaimRef b = CreateAllocatedClaim(*client, "b", {"gpu-1"});
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver, f.MakeOptions(client));
  REQUIRE(server
              ->Admin("POST", "/fake/fail",
                      json{{"verb", "GET"},
                           {"resource", "resourceclaims"},
                           {"status", 429},
                           {"count", 1000},
                           {"retryAfterSeconds", 60}}
                          .dump())
              .ok());

  // The kubelet's own limit is 45 s; a call answered at all (not gRPC
  // DEADLINE_EXCEEDED) was answered before its deadline.
  auto prepared = DraClient::Create(helper->dra_socket_path())
                      ->NodePrepareResources(DraApi::kV1, std::vector<k8s::ClaimRef>{a, b}, absl::Seconds(45));
  INFO(prepared.status().ToString());
  REQUIRE(prepared.ok());
  for (const k8s::ClaimRef& ref : {a, b}) {
    INFO(prepared->at(ref.uid).error);
    CHECK_THAT(prepared->at(ref.uid).error,
               Catch::StartsWith(absl::StrCat("retrieve claim ns/", ref.name, ": ")) &&
                   Catch::Contains("not retried: the retry in 1m would come after the call's deadline"));
  }
  CHECK(ClaimGets(*server, "a") == 1);
  CHECK(driver.prepare_calls() == 0);

  // The storm over, the kubelet's retry prepares them.
  REQUIRE(server->Admin("DELETE", "/fake/fail").ok());
  prepared = DraClient::Create(helper->dra_socket_path())
                 ->NodePrepareResources(DraApi::kV1, std::vector<k8s::ClaimRef>{a, b}, absl::Seconds(45));
  REQUIRE(prepared.ok());
  CHECK(prepared->at(a.uid).error.empty());
  CHECK(prepared->at(b.uid).error.empty());
}

TEST_CASE("orphans: a started claim gone from the API is unprepared, one still there is not", "[orphans]") {
  auto server = StartServer();
  auto client = MakeClient(*server);
  const k8s::ClaimRef kept = CreateAllocatedClaim(*client, "kept");
  CreateAllocatedClaim(*client, "replaced");  // a new UID; the checkpoint has the old one
  Fixture f;
  CheckpointEntry prepared_gone;  // prepared: the kubelet will unprepare it, not the reaper
  prepared_gone.claim = {kNamespace, "prepared-gone", "uid-prepared-gone"};
  prepared_gone.state = ClaimState::kPrepared;
  f.SeedCheckpoint({Started("gone", "uid-gone"), Started("replaced", "uid-replaced-old"), Started(kept.name, kept.uid),
                    prepared_gone});

  TestDriver driver;
  Options options = f.MakeOptions(client);
  options.orphan_check_interval = absl::Milliseconds(50);
  auto helper = f.Start(driver, options);

  REQUIRE(PollUntil([&] { return driver.unprepared_uids().size() >= 2; }));
  // The claim still there has been looked at (again) after that, and kept.
  const int gets = ClaimGets(*server, "kept");
  REQUIRE(PollUntil([&] { return ClaimGets(*server, "kept") >= gets + 2; }));
  CHECK(AsSet(driver.unprepared_uids()) == std::set<std::string>{"uid-gone", "uid-replaced-old"});
  CHECK(driver.unprepare_calls() == 2);
  CHECK(driver.errors().empty());
  CHECK(ClaimGets(*server, "prepared-gone") == 0);
  CHECK(f.CheckpointStates() == std::map<std::string, ClaimState>{{kept.uid, ClaimState::kPrepareStarted},
                                                                  {"uid-prepared-gone", ClaimState::kPrepared}});
}

TEST_CASE("orphans: API errors keep the claim and reach HandleError once", "[orphans]") {
  auto server = StartServer();
  auto client = MakeClient(*server, /*default_rate_limit=*/false, /*max_retries=*/0);
  Fixture f;
  f.SeedCheckpoint({Started("gone", "uid-gone")});
  REQUIRE(
      server->Admin("POST", "/fake/fail", R"({"verb":"GET","resource":"resourceclaims","status":500,"count":100000})")
          .ok());

  TestDriver driver;
  Options options = f.MakeOptions(client);
  options.orphan_check_interval = absl::Milliseconds(20);
  auto helper = f.Start(driver, options);
  REQUIRE(PollUntil([&] { return ClaimGets(*server, "gone") >= 3; }));
  REQUIRE(driver.errors().size() == 1);
  CHECK_THAT(
      driver.errors()[0],
      Catch::StartsWith("orphan check (recoverable): check whether claim ns/gone (UID uid-gone) still exists: ") &&
          Catch::Contains("HTTP 500"));
  CHECK(driver.unprepare_calls() == 0);

  REQUIRE(server->Admin("DELETE", "/fake/fail").ok());
  REQUIRE(PollUntil([&] { return driver.unprepared_uids() == std::vector<std::string>{"uid-gone"}; }));
  CHECK(driver.errors().size() == 1);
}

TEST_CASE("orphans: checks are off with a zero interval, a negative one is refused", "[orphans]") {
  Fixture f;
  TestDriver driver;
  auto server = StartServer();
  Options options = f.MakeOptions(MakeClient(*server));
  options.orphan_check_interval = -absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<Helper>> refused = Helper::Start(driver, options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "options.orphan_check_interval: Invalid value: \"-1s\": must not be negative");

  options.orphan_check_interval = absl::ZeroDuration();
  auto helper = f.Start(driver, options);
  helper->Stop();  // nothing to wait for
}

// --- OrphanReaper check by check, with a clock the test moves. ---

// Counts GetClaim calls; answers from memory or with a set error.
class CountingSource : public kubeletplugin::ClaimSource {
 public:
  absl::StatusOr<k8s::ResourceClaim> GetClaim(const k8s::ClaimRef& ref, const CallContext& ctx) override {
    ++calls;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!error.ok()) return error;
    }
    return claims.GetClaim(ref, ctx);
  }
  void SetError(absl::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    error = std::move(status);
  }

  InMemoryClaimSource claims;
  std::atomic<int> calls{0};

 private:
  std::mutex mu;
  absl::Status error;
};

struct ReaperFixture {
  static constexpr absl::Duration kInterval = absl::Seconds(60);
  TempDir dir;
  std::unique_ptr<Checkpoint> checkpoint;
  CountingSource source;
  TestDriver driver;
  Logger logger = testing::DiscardLogger();
  std::vector<k8s::ClaimRef> unprepare_calls;
  absl::Status unprepare_error;
  std::unique_ptr<OrphanReaper> reaper;
  const OrphanReaper::Clock::time_point t0 = OrphanReaper::Clock::now();

  ReaperFixture() {
    absl::StatusOr<std::unique_ptr<Checkpoint>> opened = Checkpoint::Open(dir.Join("checkpoint.json"));
    REQUIRE(opened.ok());
    checkpoint = *std::move(opened);
    // Stands in for ClaimPreparer::UnprepareOrphan: drops the entry.
    reaper = std::make_unique<OrphanReaper>(
        *checkpoint, source, driver,
        [this](const k8s::ClaimRef& ref) -> absl::StatusOr<bool> {
          unprepare_calls.push_back(ref);
          if (!unprepare_error.ok()) return unprepare_error;
          REQUIRE(checkpoint->Commit({{ref.uid, std::nullopt}}).ok());
          return true;
        },
        kInterval, logger);
  }

  void Set(const std::string& name, const std::string& uid, ClaimState state) {
    CheckpointEntry entry = Started(name, uid);
    entry.state = state;
    REQUIRE(checkpoint->Commit({{uid, entry}}).ok());
  }
  std::vector<std::string> CheckAt(absl::Duration since_t0) {
    return reaper->CheckOnce(
        t0 + std::chrono::duration_cast<OrphanReaper::Clock::duration>(absl::ToChronoNanoseconds(since_t0)));
  }
};

TEST_CASE("reaper: a started claim is unprepared only one interval after it was first seen", "[orphan_reaper]") {
  ReaperFixture r;
  const absl::Duration i = ReaperFixture::kInterval;
  r.Set("a", "uid-a", ClaimState::kPrepareStarted);

  CHECK(r.CheckAt(absl::ZeroDuration()).empty());  // first seen: noted only
  CHECK(r.source.calls == 0);
  CHECK(r.CheckAt(i - absl::Nanoseconds(1)).empty());
  CHECK(r.source.calls == 0);
  CHECK(r.CheckAt(i) == std::vector<std::string>{"uid-a"});  // gone from the source
  CHECK(r.source.calls == 1);
  CHECK(r.checkpoint->Entries().empty());

  // Seen started, then prepared (a kubelet call finished it), then started
  // again: the clock starts over.
  r.Set("b", "uid-b", ClaimState::kPrepareStarted);
  CHECK(r.CheckAt(2 * i).empty());
  r.Set("b", "uid-b", ClaimState::kPrepared);
  CHECK(r.CheckAt(3 * i).empty());
  r.Set("b", "uid-b", ClaimState::kPrepareStarted);
  CHECK(r.CheckAt(4 * i).empty());
  CHECK(r.CheckAt(5 * i - absl::Nanoseconds(1)).empty());
  CHECK(r.CheckAt(5 * i) == std::vector<std::string>{"uid-b"});
  CHECK(r.source.calls == 2);
}

TEST_CASE("reaper: only claims that are gone or replaced are orphans", "[orphan_reaper]") {
  ReaperFixture r;
  const absl::Duration i = ReaperFixture::kInterval;
  r.source.claims.Put(AllocatedClaim(kNamespace, "same", "uid-same"));
  r.source.claims.Put(AllocatedClaim(kNamespace, "replaced", "uid-new"));
  r.Set("same", "uid-same", ClaimState::kPrepareStarted);
  r.Set("replaced", "uid-old", ClaimState::kPrepareStarted);
  r.Set("gone", "uid-gone", ClaimState::kPrepareStarted);
  r.Set("prepared", "uid-prepared", ClaimState::kPrepared);

  CHECK(r.CheckAt(absl::ZeroDuration()).empty());
  CHECK(AsSet(r.CheckAt(i)) == std::set<std::string>{"uid-old", "uid-gone"});
  CHECK(r.CheckAt(2 * i).empty());  // the one still there stays
  CHECK(r.checkpoint->Get("uid-same").has_value());
  CHECK(r.checkpoint->Get("uid-prepared").has_value());
  CHECK(r.driver.errors().empty());
}

TEST_CASE("reaper: failures keep the claim and are reported once per streak", "[orphan_reaper]") {
  ReaperFixture r;
  const absl::Duration i = ReaperFixture::kInterval;
  r.Set("a", "uid-a", ClaimState::kPrepareStarted);
  CHECK(r.CheckAt(absl::ZeroDuration()).empty());

  r.source.SetError(absl::UnavailableError("cannot reach the API server"));
  CHECK(r.CheckAt(i).empty());
  CHECK(r.CheckAt(2 * i).empty());
  CHECK(r.driver.errors() ==
        std::vector<std::string>{
            "orphan check (recoverable): check whether claim ns/a (UID uid-a) still exists: cannot reach the "
            "API server"});
  CHECK(r.unprepare_calls.empty());

  // A 404 that is not a missing object (the API path itself is unknown) is
  // an error too, not a deletion.
  absl::Status no_route = absl::NotFoundError("the server could not find the requested resource");
  no_route.SetPayload(k8s::kHttpStatusPayloadUrl, absl::Cord("404"));
  r.source.SetError(no_route);
  CHECK(r.CheckAt(3 * i).empty());
  CHECK(r.unprepare_calls.empty());
  CHECK(r.driver.errors().size() == 1);  // same streak

  // A check that goes through (the claim is there after all) ends the streak.
  r.source.SetError(absl::OkStatus());
  r.source.claims.Put(AllocatedClaim(kNamespace, "a", "uid-a"));
  CHECK(r.CheckAt(4 * i).empty());
  CHECK(r.unprepare_calls.empty());

  // Now it is gone, but the driver fails to unprepare it: a new streak.
  r.source.claims.Remove(kNamespace, "a");
  r.unprepare_error = absl::InternalError("device busy");
  CHECK(r.CheckAt(5 * i).empty());
  CHECK(r.CheckAt(6 * i).empty());
  REQUIRE(r.driver.errors().size() == 2);
  CHECK(r.driver.errors()[1] == "orphan check (recoverable): unprepare orphaned claim ns/a (UID uid-a): device busy");
  CHECK(r.unprepare_calls.size() == 2);
  CHECK(r.checkpoint->Get("uid-a").has_value());

  r.unprepare_error = absl::OkStatus();
  CHECK(r.CheckAt(7 * i) == std::vector<std::string>{"uid-a"});
  CHECK(r.driver.errors().size() == 2);
}

TEST_CASE("reaper: Stop ends a waiting thread at once and is idempotent", "[orphan_reaper]") {
  ReaperFixture r;
  REQUIRE(r.reaper->Start().ok());
  r.reaper->Stop();  // would hang for the 60 s interval if it slept
  r.reaper->Stop();
}

}  // namespace
}  // namespace dra
