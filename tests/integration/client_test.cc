// dra::k8s::Client against the fake API server (tests/support/fakeapiserver)
// over real HTTPS: CRUD, paging, conflicts, patches, watches with bookmarks
// and 410, TLS verification, client certificates, token rotation, exec
// plugins, error messages, retries, rate limiting and create safety.
//
// Timing assertions are lower bounds only.
#include <sys/stat.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/k8s/resource_claim_json.h"
#include "support/claim_object.h"
#include "support/fake_apiserver.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/watch_thread.h"

namespace dra::k8s {
namespace {

using dra::testing::FakeApiServer;
using dra::testing::PollUntil;
using dra::testing::ReadFile;
using dra::testing::TempDir;
using dra::testing::WatchThread;
using dra::testing::WriteFile;
using nlohmann::json;

std::unique_ptr<FakeApiServer> StartServer(std::vector<std::string> token_lines = {"admin-token,admin"},
                                           std::vector<std::string> extra_args = {}) {
  FakeApiServer::Options options;
  options.token_lines = std::move(token_lines);
  options.extra_args = std::move(extra_args);
  options.extra_args.push_back("--quiet");
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(options);
  INFO(server.status().ToString());
  REQUIRE(server.ok());
  return *std::move(server);
}

ClientConfig BaseConfig(const FakeApiServer& server) {
  ClientConfig config;
  config.server = server.url();
  config.ca_file = server.ca_file();
  config.bearer_token = server.admin_token();
  config.qps = 0;  // tests that want the limiter set it
  config.timeout = absl::Seconds(20);
  return config;
}

std::shared_ptr<Client> MakeClient(const ClientConfig& config) {
  absl::StatusOr<std::shared_ptr<Client>> client = Client::Create(config);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return *client;
}

json NewClaim(const std::string& ns, const std::string& name, bool generate = false) {
  json claim = testing::NewClaimObject(ns, name);
  if (generate) {
    claim["metadata"].erase("name");
    claim["metadata"]["generateName"] = name;
  }
  return claim;
}

// The request log of the fake server.
json Requests(const FakeApiServer& server) {
  absl::StatusOr<std::string> body = server.Admin("GET", "/fake/requests");
  REQUIRE(body.ok());
  return json::parse(*body);
}

int Count(const FakeApiServer& server, const std::string& key) {
  json requests = Requests(server);
  return requests["counts"].value(key, 0);
}

void ResetCounts(const FakeApiServer& server) { REQUIRE(server.Admin("POST", "/fake/reset", "{}").ok()); }

void Fail(const FakeApiServer& server, const std::string& verb, const std::string& resource, int status, int count,
          int retry_after = 0) {
  json rule = {{"verb", verb}, {"resource", resource}, {"status", status}, {"count", count}};
  if (retry_after > 0) rule["retryAfterSeconds"] = retry_after;
  absl::StatusOr<std::string> r = server.Admin("POST", "/fake/fail", rule.dump());
  INFO(r.status().ToString());
  REQUIRE(r.ok());
}

TEST_CASE("ServerVersion is the server's gitVersion", "[client]") {
  auto server = StartServer();
  absl::StatusOr<std::string> version = MakeClient(BaseConfig(*server))->ServerVersion();
  INFO(version.status().ToString());
  CHECK(version.value_or("") == "v1.37.0-fakeapiserver");
}

TEST_CASE("create, get, update with conflict, delete with preconditions", "[client][crud]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));

  absl::StatusOr<json> created = client->Create(kResourceClaims, "ns", NewClaim("ns", "c1"));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  const std::string rv1 = (*created)["metadata"]["resourceVersion"];
  CHECK_FALSE(rv1.empty());

  absl::StatusOr<json> again = client->Create(kResourceClaims, "ns", NewClaim("ns", "c1"));
  REQUIRE_FALSE(again.ok());
  CHECK(absl::IsAlreadyExists(again.status()));
  CHECK(absl::StrContains(again.status().message(), "already exists"));
  CHECK(HttpStatusCode(again.status()) == 409);

  absl::StatusOr<json> generated = client->Create(kResourceClaims, "ns", NewClaim("ns", "gen-", true));
  REQUIRE(generated.ok());
  CHECK(absl::StartsWith((*generated)["metadata"]["name"].get<std::string>(), "gen-"));

  absl::StatusOr<ResourceClaim> typed = client->GetResourceClaim("ns", "c1");
  REQUIRE(typed.ok());
  CHECK(typed->metadata.resource_version == rv1);
  CHECK(typed->spec.devices.requests.at(0).exactly->device_class_name == "gpu.example.com");

  absl::StatusOr<json> missing = client->Get(kResourceClaims, "ns", "nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(absl::StrContains(missing.status().message(), "\"nope\" not found"));

  // Update with the current resourceVersion, then with the stale one.
  json object = *created;
  object["metadata"]["labels"] = {{"tier", "gold"}};
  absl::StatusOr<json> updated = client->Update(kResourceClaims, "ns", object);
  REQUIRE(updated.ok());
  CHECK((*updated)["metadata"]["labels"]["tier"] == "gold");
  CHECK((*updated)["metadata"]["resourceVersion"] != rv1);
  object["metadata"]["labels"]["tier"] = "silver";
  absl::StatusOr<json> stale = client->Update(kResourceClaims, "ns", object);
  REQUIRE_FALSE(stale.ok());
  CHECK(IsConflict(stale.status()));
  CHECK(stale.status().code() == absl::StatusCode::kAborted);
  CHECK(absl::StrContains(stale.status().message(), "the object has been modified"));

  // Delete preconditions: a wrong UID or resourceVersion is a conflict.
  const std::string uid = (*updated)["metadata"]["uid"];
  absl::Status wrong_uid = client->Delete(kResourceClaims, "ns", "c1", Preconditions{"not-the-uid", ""});
  CHECK(IsConflict(wrong_uid));
  absl::Status wrong_rv = client->Delete(kResourceClaims, "ns", "c1", Preconditions{"", rv1});
  CHECK(IsConflict(wrong_rv));
  CHECK(client->Get(kResourceClaims, "ns", "c1").ok());
  absl::Status deleted = client->Delete(
      kResourceClaims, "ns", "c1", Preconditions{uid, (*updated)["metadata"]["resourceVersion"].get<std::string>()});
  INFO(deleted.ToString());
  CHECK(deleted.ok());
  CHECK(absl::IsNotFound(client->Get(kResourceClaims, "ns", "c1").status()));
  CHECK(absl::IsNotFound(client->Delete(kResourceClaims, "ns", "c1")));
}

TEST_CASE("RequestCounts: every request by verb and code, retries included, watches as WATCH", "[client][metrics]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));
  CHECK(client->RequestCounts().empty());
  REQUIRE(client->Create(kResourceClaims, "ns", NewClaim("ns", "c1")).ok());
  CHECK(absl::IsNotFound(client->Get(kResourceClaims, "ns", "nope").status()));
  Fail(*server, "GET", "resourceclaims", 500, 1);
  REQUIRE(client->Get(kResourceClaims, "ns", "c1").ok());  // one 500, retried
  WatchOptions options;
  options.timeout_seconds = 1;
  const auto ignore = [](const WatchEvent&) {};
  CHECK(client->RunWatch(kResourceClaims, "ns", options, ignore, WatchStop()).ok());

  auto counts = [&] {
    std::map<std::string, uint64_t> by_key;
    for (const k8s::RequestCount& count : client->RequestCounts()) by_key[count.verb + " " + count.code] = count.count;
    return by_key;
  };
  CHECK(counts() == std::map<std::string, uint64_t>{
                        {"GET 200", 1}, {"GET 404", 1}, {"GET 500", 1}, {"POST 201", 1}, {"WATCH 200", 1}});

  // No answer at all: "<error>".
  ClientConfig config = BaseConfig(*server);
  config.server = "https://127.0.0.1:1";
  config.max_retries = 0;
  auto unreachable = MakeClient(config);
  CHECK_FALSE(unreachable->Get(kResourceClaims, "ns", "c1").ok());
  REQUIRE(unreachable->RequestCounts().size() == 1);
  CHECK(unreachable->RequestCounts()[0].verb == "GET");
  CHECK(unreachable->RequestCounts()[0].code == "<error>");
  CHECK(unreachable->RequestCounts()[0].count == 1);
}

TEST_CASE("ResourceSlices are sent as protobuf, and as JSON from then on to a server that refuses it (415)",
          "[client][protobuf]") {
  auto server = StartServer();
  auto counts = [](Client& client) {
    std::map<std::string, uint64_t> by_key;
    for (const k8s::RequestCount& count : client.RequestCounts()) by_key[count.verb + " " + count.code] = count.count;
    return by_key;
  };
  auto slice = [](const std::string& name) {
    return json{{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceSlice"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"driver", "gpu.example.com"},
                  {"nodeName", "node-a"},
                  {"pool", {{"name", "node-a"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                  {"devices", {{{"name", "gpu-0"}}}}}}};
  };

  auto client = MakeClient(BaseConfig(*server));
  absl::StatusOr<json> first = client->Create(kResourceSlices, "", slice("s1"));
  INFO(first.status().ToString());
  REQUIRE(first.ok());
  CHECK((*first)["metadata"]["name"] == "s1");
  json update = *first;
  update["metadata"]["labels"] = {{"tier", "gold"}};
  REQUIRE(client->Update(kResourceSlices, "", update).ok());
  REQUIRE(client->Create(kResourceSlices, "", slice("s2")).ok());
  // The fake speaks JSON only: the first protobuf body was refused, nothing after it.
  CHECK(counts(*client) == std::map<std::string, uint64_t>{{"POST 201", 2}, {"POST 415", 1}, {"PUT 200", 1}});

  // Writers in parallel on a new client: one of them finds out, the others
  // send JSON meanwhile; one refusal, not one per writer.
  auto parallel = MakeClient(BaseConfig(*server));
  std::vector<absl::Status> created(16);  // asserted here: Catch2 is not thread-safe
  std::vector<std::thread> writers;
  for (int i = 0; i < 16; ++i) {
    writers.emplace_back(
        [&, i] { created[i] = parallel->Create(kResourceSlices, "", slice(absl::StrCat("p", i))).status(); });
  }
  for (std::thread& writer : writers) writer.join();
  for (const absl::Status& status : created) CHECK(status.ok());
  CHECK(counts(*parallel) == std::map<std::string, uint64_t>{{"POST 201", 16}, {"POST 415", 1}});

  ClientConfig config = BaseConfig(*server);
  config.protobuf = false;
  auto json_only = MakeClient(config);
  REQUIRE(json_only->Create(kResourceSlices, "", slice("s3")).ok());
  CHECK(counts(*json_only) == std::map<std::string, uint64_t>{{"POST 201", 1}});
}

TEST_CASE("list pages over 520 objects, in one namespace and across all", "[client][list]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));
  for (int i = 0; i < 520; ++i) {
    absl::StatusOr<json> created = client->Create(kResourceClaims, "paging", NewClaim("paging", absl::StrCat("c", i)));
    REQUIRE(created.ok());
  }
  REQUIRE(client->Create(kResourceClaims, "other", NewClaim("other", "x")).ok());
  ResetCounts(*server);

  ListOptions options;
  options.limit = 100;
  absl::StatusOr<ListResult> all = client->ListAll(kResourceClaims, "paging", options);
  INFO(all.status().ToString());
  REQUIRE(all.ok());
  CHECK(all->items.size() == 520);
  CHECK(all->continue_token.empty());
  CHECK_FALSE(all->resource_version.empty());
  CHECK(all->items[0]["kind"] == "ResourceClaim");
  std::set<std::string> names;
  for (const json& item : all->items) names.insert(item["metadata"]["name"].get<std::string>());
  CHECK(names.size() == 520);
  CHECK(Count(*server, "LIST resourceclaims") == 6);

  // The default page size is 500; one page by hand has a continue token.
  absl::StatusOr<ListResult> everywhere = client->ListAll(kResourceClaims, "");
  REQUIRE(everywhere.ok());
  CHECK(everywhere->items.size() == 521);
  options.limit = 500;
  absl::StatusOr<ListResult> page = client->List(kResourceClaims, "paging", options);
  REQUIRE(page.ok());
  CHECK(page->items.size() == 500);
  CHECK_FALSE(page->continue_token.empty());
}

TEST_CASE("a response over max_response_bytes fails that request only, with ResourceExhausted", "[client][limits]") {
  auto server = StartServer();
  ClientConfig config = BaseConfig(*server);
  config.max_response_bytes = 4096;
  auto client = MakeClient(config);
  for (int i = 0; i < 20; ++i)
    REQUIRE(client->Create(kResourceClaims, "big", NewClaim("big", absl::StrCat("c", i))).ok());
  ResetCounts(*server);

  absl::StatusOr<ListResult> all = client->ListAll(kResourceClaims, "big");
  REQUIRE_FALSE(all.ok());
  INFO(all.status().ToString());
  CHECK(all.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(all.status().message(), "larger than max_response_bytes (4096 bytes)"));
  CHECK(absl::StrContains(all.status().message(), "resourceclaims"));
  CHECK(Count(*server, "LIST resourceclaims") == 1);  // not retried: the answer would be as large again

  // One object fits; the client goes on working.
  absl::StatusOr<json> one = client->Get(kResourceClaims, "big", "c0");
  INFO(one.status().ToString());
  CHECK(one.ok());
}

TEST_CASE("patches: merge, JSON and apply, on the object and on status", "[client][patch]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));
  REQUIRE(client->Create(kResourceClaims, "ns", NewClaim("ns", "c1")).ok());

  absl::StatusOr<json> merged =
      client->Patch(kResourceClaims, "ns", "c1", PatchType::kMerge, json{{"metadata", {{"labels", {{"a", "1"}}}}}});
  INFO(merged.status().ToString());
  REQUIRE(merged.ok());
  CHECK((*merged)["metadata"]["labels"]["a"] == "1");

  json allocation = {
      {"devices",
       {{"results",
         json::array(
             {{{"request", "gpu"}, {"driver", "gpu.example.com"}, {"pool", "node-1"}, {"device", "gpu-0"}}})}}}};
  PatchOptions status_patch;
  status_patch.subresource = "status";
  absl::StatusOr<json> allocated = client->Patch(kResourceClaims, "ns", "c1", PatchType::kMerge,
                                                 json{{"status", {{"allocation", allocation}}}}, status_patch);
  INFO(allocated.status().ToString());
  REQUIRE(allocated.ok());
  CHECK((*allocated)["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0");

  // Server-side apply of the driver's device status.
  json condition = {{"type", "Ready"},
                    {"status", "True"},
                    {"reason", "Prepared"},
                    {"message", "ok"},
                    {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
  json apply = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "c1"}, {"namespace", "ns"}}},
                {"status",
                 {{"devices", json::array({{{"driver", "gpu.example.com"},
                                            {"pool", "node-1"},
                                            {"device", "gpu-0"},
                                            {"conditions", json::array({condition})}}})}}}};
  PatchOptions apply_options;
  apply_options.subresource = "status";
  apply_options.field_manager = "gpu.example.com";
  apply_options.force = true;
  absl::StatusOr<json> applied = client->Patch(kResourceClaims, "ns", "c1", PatchType::kApply, apply, apply_options);
  INFO(applied.status().ToString());
  REQUIRE(applied.ok());
  CHECK((*applied)["status"]["devices"][0]["conditions"][0]["reason"] == "Prepared");
  CHECK((*applied)["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0");

  // A JSON patch flips the condition.
  json ops = json::array({{{"op", "replace"}, {"path", "/status/devices/0/conditions/0/status"}, {"value", "False"}}});
  absl::StatusOr<json> patched = client->Patch(kResourceClaims, "ns", "c1", PatchType::kJson, ops, status_patch);
  INFO(patched.status().ToString());
  REQUIRE(patched.ok());
  CHECK((*patched)["status"]["devices"][0]["conditions"][0]["status"] == "False");

  // Apply without a field manager fails locally.
  CHECK(client->Patch(kResourceClaims, "ns", "c1", PatchType::kApply, apply).status().code() ==
        absl::StatusCode::kInvalidArgument);
  // An invalid patch is InvalidArgument with the server's message.
  json bad = json::array({{{"op", "replace"}, {"path", "/spec/devices/requests/0/name"}, {"value", "Not_A_Name"}}});
  absl::StatusOr<json> invalid = client->Patch(kResourceClaims, "ns", "c1", PatchType::kJson, bad);
  REQUIRE_FALSE(invalid.ok());
  CHECK(invalid.status().code() == absl::StatusCode::kInvalidArgument);

  // Typed status update through the claim model keeps what it does not model.
  absl::StatusOr<ResourceClaim> claim = client->GetResourceClaim("ns", "c1");
  REQUIRE(claim.ok());
  claim->status.devices.at(0).conditions.at(0).status = "True";
  absl::StatusOr<ResourceClaim> written = client->UpdateResourceClaimStatus(*claim);
  INFO(written.status().ToString());
  REQUIRE(written.ok());
  CHECK(written->status.devices.at(0).conditions.at(0).status == "True");
}

// Collects watch events for the test thread.
struct EventLog {
  std::mutex mu;
  std::vector<WatchEvent> events;

  void Add(const WatchEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
  }
  std::vector<WatchEvent> Snapshot() {
    std::lock_guard<std::mutex> lock(mu);
    return events;
  }
  std::vector<std::string> Added() {
    std::vector<std::string> out;
    for (const WatchEvent& e : Snapshot()) {
      if (e.type == "ADDED") out.push_back(e.object["metadata"]["name"]);
    }
    return out;
  }
  std::string LastBookmark() {
    std::string rv;
    for (const WatchEvent& e : Snapshot()) {
      if (e.type == "BOOKMARK") rv = e.object["metadata"]["resourceVersion"];
    }
    return rv;
  }
};

TEST_CASE("watch: events, bookmarks, resume from a bookmark, relist after 410", "[client][watch]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));
  REQUIRE(client->Create(kResourceClaims, "w", NewClaim("w", "before")).ok());
  absl::StatusOr<ListResult> list = client->List(kResourceClaims, "w");
  REQUIRE(list.ok());
  const std::string list_rv = list->resource_version;

  // 1. Watch from the list; the server ends the stream after 3 s.
  EventLog first;
  WatchOptions options;
  options.resource_version = list_rv;
  options.timeout_seconds = 3;
  auto watch =
      std::make_unique<WatchThread>(client, kResourceClaims, "w", options, [&](const WatchEvent& e) { first.Add(e); });
  REQUIRE(client->Create(kResourceClaims, "w", NewClaim("w", "a")).ok());
  REQUIRE(client->Create(kResourceClaims, "w", NewClaim("w", "b")).ok());
  REQUIRE(PollUntil([&] { return first.Added().size() == 2 && !first.LastBookmark().empty(); }));
  CHECK(first.Added() == std::vector<std::string>{"a", "b"});
  absl::Status ended = watch->Wait();
  INFO(ended.ToString());
  CHECK(ended.ok());
  const std::string bookmark = first.LastBookmark();

  // 2. Changes while nobody watches; resume from the bookmark sees exactly them.
  REQUIRE(client->Create(kResourceClaims, "w", NewClaim("w", "c")).ok());
  EventLog second;
  options.resource_version = bookmark;
  options.timeout_seconds = 0;
  auto resumed =
      std::make_unique<WatchThread>(client, kResourceClaims, "w", options, [&](const WatchEvent& e) { second.Add(e); });
  REQUIRE(PollUntil([&] { return !second.Added().empty(); }));
  CHECK(second.Added() == std::vector<std::string>{"c"});
  resumed->Stop();
  CHECK(resumed->Wait().ok());

  // 3. After compaction an old resourceVersion is gone: relist and watch on.
  // No body: the endpoint does not read one, and an unread body can get the
  // HTTP/2 stream reset under the fixture's own request.
  absl::StatusOr<std::string> compacted = server->Admin("POST", "/fake/compact");
  INFO(compacted.status().ToString());
  REQUIRE(compacted.ok());
  REQUIRE(client->Create(kResourceClaims, "w", NewClaim("w", "d")).ok());
  options.resource_version = list_rv;
  const auto ignore = [](const WatchEvent&) {};
  absl::Status gone = client->RunWatch(kResourceClaims, "w", options, ignore, WatchStop());
  INFO(gone.ToString());
  CHECK(IsGone(gone));
  CHECK(absl::StrContains(gone.message(), "too old resource version"));

  absl::StatusOr<ListResult> relist = client->ListAll(kResourceClaims, "w");
  REQUIRE(relist.ok());
  CHECK(relist->items.size() == 5);
  EventLog third;
  options.resource_version = relist->resource_version;
  auto fresh =
      std::make_unique<WatchThread>(client, kResourceClaims, "w", options, [&](const WatchEvent& e) { third.Add(e); });
  REQUIRE(client->Create(kResourceClaims, "w", NewClaim("w", "e")).ok());
  REQUIRE(PollUntil([&] { return !third.Added().empty(); }));
  CHECK(third.Added() == std::vector<std::string>{"e"});
  fresh.reset();  // the destructor stops and joins
}

// Watches whose headers are in.
uint64_t WatchCount(Client& client) {
  uint64_t n = 0;
  for (const k8s::RequestCount& count : client.RequestCounts()) {
    if (count.verb == "WATCH") n += count.count;
  }
  return n;
}

TEST_CASE(
    "watches and requests are HTTP/2 streams on one connection: a handler makes requests of its own and Stop ends "
    "an idle watch",
    "[client][watch]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));
  REQUIRE(client->ServerVersion().ok());
  REQUIRE(server->Admin("POST", "/fake/reset", "{}").ok());

  // Each of three watches answers an event with a GET of the object on the
  // same client: a handler runs on the watch's thread, never on the I/O
  // thread that the GET needs.
  std::mutex mu;
  std::vector<std::string> fetched;
  auto fetch = [&](const WatchEvent& e) {
    if (e.type != "ADDED") return;
    absl::StatusOr<json> got =
        client->Get(kResourceClaims, e.object["metadata"]["namespace"], e.object["metadata"]["name"]);
    std::lock_guard<std::mutex> lock(mu);
    fetched.push_back(got.ok() ? (*got)["metadata"]["name"].get<std::string>() : got.status().ToString());
  };
  std::vector<std::unique_ptr<WatchThread>> watches;
  for (const char* ns : {"a", "b", "c"}) {
    watches.push_back(std::make_unique<WatchThread>(client, kResourceClaims, ns, WatchOptions{}, fetch));
  }
  REQUIRE(PollUntil([&] { return WatchCount(*client) == 3; }));
  for (const char* ns : {"a", "b", "c"}) REQUIRE(client->Create(kResourceClaims, ns, NewClaim(ns, ns)).ok());
  REQUIRE(PollUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return fetched.size() == 3;
  }));
  std::sort(fetched.begin(), fetched.end());
  CHECK(fetched == std::vector<std::string>{"a", "b", "c"});

  absl::StatusOr<std::string> requests = server->Admin("GET", "/fake/requests");
  REQUIRE(requests.ok());
  // One connection since the reset: this query's own (the fixture opens one
  // per call). The version request's connection carried all of the client's.
  CHECK(json::parse(*requests)["connections"] == 1);

  // No event is on its way to the idle watch: Stop ends it all the same.
  watches[0]->Stop();
  CHECK(watches[0]->Wait().ok());
  CHECK_FALSE(watches[1]->Done());
  watches.clear();
}

TEST_CASE("TLS: the server certificate is verified", "[client][tls]") {
  auto server = StartServer();

  SECTION("a CA that did not sign it") {
    ClientConfig config = BaseConfig(*server);
    config.ca_file = server->cert_dir() + "/client-ca.crt";
    config.max_retries = 0;
    absl::StatusOr<json> got = MakeClient(config)->Get(kResourceClaims, "ns", "x");
    REQUIRE_FALSE(got.ok());
    INFO(got.status().ToString());
    CHECK(got.status().code() == absl::StatusCode::kUnavailable);
    CHECK(absl::StrContains(got.status().message(), "TLS verification of the API server's certificate failed"));
    CHECK(absl::StrContains(got.status().message(), "client-ca.crt"));
    CHECK_FALSE(absl::StrContains(got.status().message(), server->admin_token()));
  }
  SECTION("the system trust store does not know it") {
    ClientConfig config = BaseConfig(*server);
    config.ca_file.clear();
    absl::StatusOr<json> got = MakeClient(config)->Get(kResourceClaims, "ns", "x");
    REQUIRE_FALSE(got.ok());
    CHECK(absl::StrContains(got.status().message(), "the system trust store"));
  }
  SECTION("inline CA data") {
    ClientConfig config = BaseConfig(*server);
    config.ca_file.clear();
    config.ca_data = ReadFile(server->ca_file());
    CHECK(absl::IsNotFound(MakeClient(config)->Get(kResourceClaims, "ns", "x").status()));
  }
  SECTION("tls_server_name: the certificate is checked against that name") {
    ClientConfig config = BaseConfig(*server);
    config.tls_server_name = "localhost";
    CHECK(absl::IsNotFound(MakeClient(config)->Get(kResourceClaims, "ns", "x").status()));
    config.tls_server_name = "not-in-the-cert.example";
    absl::Status wrong = MakeClient(config)->Get(kResourceClaims, "ns", "x").status();
    INFO(wrong.ToString());
    CHECK(absl::StrContains(wrong.message(), "TLS verification"));
  }
  SECTION("an expired certificate") {
    ClientConfig config = BaseConfig(*server);
    config.tls_server_name = "expired.localhost";  // the fake serves its expired certificate for that name
    config.max_retries = 0;
    absl::Status expired = MakeClient(config)->Get(kResourceClaims, "ns", "x").status();
    INFO(expired.ToString());
    CHECK(expired.code() == absl::StatusCode::kUnavailable);
    CHECK(absl::StrContains(expired.message(), "TLS verification of the API server's certificate failed"));
    CHECK(absl::StrContains(expired.message(), "expired"));
  }
  SECTION("insecure_skip_tls_verify") {
    ClientConfig config = BaseConfig(*server);
    config.ca_file.clear();
    config.insecure_skip_tls_verify = true;
    CHECK(absl::IsNotFound(MakeClient(config)->Get(kResourceClaims, "ns", "x").status()));
  }
}

TEST_CASE("client certificate authentication, from files and from data", "[client][auth]") {
  auto server = StartServer();
  ClientConfig config = BaseConfig(*server);
  config.bearer_token.clear();

  SECTION("files") {
    config.client_cert_file = server->client_cert_file();
    config.client_key_file = server->client_key_file();
  }
  SECTION("data") {
    config.client_cert_data = ReadFile(server->client_cert_file());
    config.client_key_data = ReadFile(server->client_key_file());
  }
  ResetCounts(*server);
  absl::Status status = MakeClient(config)->Get(kResourceClaims, "ns", "x").status();
  INFO(status.ToString());
  CHECK(absl::IsNotFound(status));
  json log = Requests(*server)["requests"];
  REQUIRE(log.size() == 1);
  CHECK(log[0]["user"] == "cert-user");
}

TEST_CASE("a rotated token file is used without a restart", "[client][auth]") {
  auto server = StartServer({"admin-token,admin", "token-a,alice", "token-b,bob"});
  TempDir dir;
  WriteFile(dir.Join("token"), "token-a\n");
  ClientConfig config = BaseConfig(*server);
  config.bearer_token.clear();
  config.token_file = dir.Join("token");
  auto client = MakeClient(config);

  ResetCounts(*server);
  CHECK(absl::IsNotFound(client->Get(kResourceClaims, "ns", "x").status()));
  // As the kubelet does it: write a new file, rename it over the old one.
  WriteFile(dir.Join("token.tmp"), "token-b\n");
  REQUIRE(::rename(dir.Join("token.tmp").c_str(), dir.Join("token").c_str()) == 0);
  CHECK(absl::IsNotFound(client->Get(kResourceClaims, "ns", "x").status()));
  json log = Requests(*server)["requests"];
  REQUIRE(log.size() == 2);
  CHECK(log[0]["user"] == "alice");
  CHECK(log[1]["user"] == "bob");
}

TEST_CASE("an exec plugin's token is used, and the plugin runs again after a 401", "[client][auth][exec]") {
  auto server = StartServer({"admin-token,admin", "exec-token,exec-user"});
  TempDir dir;
  // First run: a token the server does not know; later runs: a good one.
  WriteFile(dir.Join("plugin.sh"), absl::StrCat(R"(#!/bin/sh
n=$(cat ")",
                                                dir.Join("count"), R"(" 2>/dev/null || echo 0)
n=$((n+1)); echo $n > ")",
                                                dir.Join("count"), R"("
tok=exec-token; [ $n -eq 1 ] && tok=stale-token
echo "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"$tok\"}}"
)"));
  ::chmod(dir.Join("plugin.sh").c_str(), 0700);
  ClientConfig config = BaseConfig(*server);
  config.bearer_token.clear();
  config.exec = ExecConfig{};
  config.exec->command = dir.Join("plugin.sh");
  auto client = MakeClient(config);
  CHECK(absl::IsNotFound(client->Get(kResourceClaims, "ns", "x").status()));
  CHECK(absl::IsNotFound(client->Get(kResourceClaims, "ns", "x").status()));
  CHECK(ReadFile(dir.Join("count")) == "2\n");
}

TEST_CASE("401 and 403 carry the server's message", "[client][auth]") {
  auto server = StartServer({"admin-token,admin", "mallory-token,mallory"}, {"--forbidden-users=mallory"});
  ClientConfig config = BaseConfig(*server);

  config.bearer_token = "unknown-token";
  absl::Status unauthenticated = MakeClient(config)->Get(kResourceClaims, "ns", "x").status();
  CHECK(unauthenticated.code() == absl::StatusCode::kUnauthenticated);
  CHECK(absl::StartsWith(unauthenticated.message(), "Unauthorized"));
  CHECK_FALSE(absl::StrContains(unauthenticated.message(), "unknown-token"));

  config.bearer_token = "mallory-token";
  absl::Status forbidden = MakeClient(config)->Get(kResourceClaims, "ns", "x").status();
  CHECK(forbidden.code() == absl::StatusCode::kPermissionDenied);
  CHECK(absl::StartsWith(forbidden.message(),
                         "resourceclaims.resource.k8s.io \"x\" is forbidden: User \"mallory\" cannot get resource "
                         "\"resourceclaims\" in API group \"resource.k8s.io\" in the namespace \"ns\""));
  CHECK(HttpStatusCode(forbidden) == 403);
}

TEST_CASE("retries honour Retry-After and give up with the server's message", "[client][retry]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));
  REQUIRE(client->Create(kResourceClaims, "ns", NewClaim("ns", "c1")).ok());

  ResetCounts(*server);
  Fail(*server, "GET", "resourceclaims", 503, 2, 1);
  const absl::Time start = absl::Now();
  absl::Status status = client->Get(kResourceClaims, "ns", "c1").status();
  INFO(status.ToString());
  CHECK(status.ok());
  CHECK(absl::Now() - start >= absl::Milliseconds(1800));
  CHECK(Count(*server, "GET resourceclaims") == 3);

  ResetCounts(*server);
  Fail(*server, "LIST", "resourceclaims", 429, 1, 1);
  CHECK(client->List(kResourceClaims, "ns").ok());
  CHECK(Count(*server, "LIST resourceclaims") == 2);

  ClientConfig few = BaseConfig(*server);
  few.max_retries = 1;
  ResetCounts(*server);
  Fail(*server, "PATCH", "resourceclaims", 500, 5);
  absl::StatusOr<json> failed = MakeClient(few)->Patch(kResourceClaims, "ns", "c1", PatchType::kMerge,
                                                       json{{"metadata", {{"labels", {{"a", "b"}}}}}});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StartsWith(failed.status().message(), "Internal error occurred: injected fault"));
  CHECK(Count(*server, "PATCH resourceclaims") == 2);
  REQUIRE(server->Admin("DELETE", "/fake/fail").ok());
}

TEST_CASE("a request with a deadline is not retried, throttled or left running past it", "[client][retry]") {
  auto server = StartServer();
  ClientConfig config = BaseConfig(*server);
  auto client = MakeClient(config);
  REQUIRE(client->Create(kResourceClaims, "ns", NewClaim("ns", "c1")).ok());

  SECTION("a 429 whose Retry-After ends after the deadline: the 429 at once, saying why") {
    ResetCounts(*server);
    Fail(*server, "GET", "resourceclaims", 429, 100, 30);
    absl::StatusOr<ResourceClaim> claim = client->GetResourceClaim("ns", "c1", absl::Now() + absl::Seconds(20));
    INFO(claim.status().ToString());
    REQUIRE_FALSE(claim.ok());
    CHECK(HttpStatusCode(claim.status()) == 429);
    CHECK_THAT(std::string(claim.status().message()),
               Catch::Contains("not retried: the retry in 30s would come after the call's deadline"));
    CHECK(Count(*server, "GET resourceclaims") == 1);
    REQUIRE(server->Admin("DELETE", "/fake/fail").ok());
  }
  SECTION("a slow server: the attempt's timeout ends at the deadline") {
    config.timeout = absl::Seconds(30);
    auto patient = MakeClient(config);
    REQUIRE(server->Admin("POST", "/fake/delay", json{{"milliseconds", 5000}}.dump()).ok());
    // The deadline must pass in the attempt, not before it was sent (a
    // loaded machine): until the server saw it, again with twice the time.
    absl::StatusOr<json> got;
    for (absl::Duration timeout = absl::Milliseconds(300);; timeout *= 2) {
      const int gets_before = Count(*server, "GET resourceclaims");
      got = patient->Get(kResourceClaims, "ns", "c1", absl::Now() + timeout);
      if (Count(*server, "GET resourceclaims") > gets_before) break;
    }
    INFO(got.status().ToString());
    REQUIRE_FALSE(got.ok());
    CHECK(absl::IsDeadlineExceeded(got.status()));
    // The time left when it was sent, not the configured 30 s.
    CHECK_THAT(std::string(got.status().message()),
               Catch::StartsWith("request timed out (timeout ") && Catch::Contains("ms)"));
    REQUIRE(server->Admin("POST", "/fake/delay", json{{"milliseconds", 0}}.dump()).ok());
  }
  SECTION("a deadline already passed: nothing is sent") {
    ResetCounts(*server);
    absl::StatusOr<json> got = client->Get(kResourceClaims, "ns", "c1", absl::Now() - absl::Seconds(1));
    REQUIRE_FALSE(got.ok());
    CHECK(absl::IsDeadlineExceeded(got.status()));
    CHECK_THAT(std::string(got.status().message()), Catch::StartsWith("the call's deadline passed before the request"));
    CHECK(Count(*server, "GET resourceclaims") == 0);
  }
  SECTION("every verb takes a deadline: one already passed sends nothing") {
    ResetCounts(*server);
    const absl::Time past = absl::Now() - absl::Seconds(1);
    ListOptions list;
    list.deadline = past;
    UpdateOptions update;
    update.deadline = past;
    PatchOptions patch;
    patch.deadline = past;
    json claim = NewClaim("ns", "c2");
    const std::vector<std::pair<std::string, absl::Status>> results = {
        {"List", client->List(kResourceClaims, "ns", list).status()},
        {"ListAll", client->ListAll(kResourceClaims, "ns", list).status()},
        {"Create", client->Create(kResourceClaims, "ns", claim, past).status()},
        {"Update", client->Update(kResourceClaims, "ns", NewClaim("ns", "c1"), past).status()},
        {"UpdateStatus", client->UpdateStatus(kResourceClaims, "ns", NewClaim("ns", "c1"), update).status()},
        {"Patch", client->Patch(kResourceClaims, "ns", "c1", PatchType::kMerge, json::object(), patch).status()},
        {"Delete", client->Delete(kResourceClaims, "ns", "c1", {}, past)},
        {"ServerVersion", client->ServerVersion(past).status()},
    };
    for (const auto& [verb, status] : results) {
      INFO(verb << ": " << status.ToString());
      CHECK(absl::IsDeadlineExceeded(status));
    }
    int sent = 0;
    const json requests = Requests(*server);
    for (const auto& [key, count] : requests["counts"].items()) sent += count.get<int>();
    CHECK(sent == 0);
  }
  SECTION("the client-side rate limit's next slot after the deadline: DeadlineExceeded, nothing sent") {
    config.qps = 0.1;
    config.burst = 1;
    auto slow = MakeClient(config);
    REQUIRE(slow->Get(kResourceClaims, "ns", "c1").ok());  // takes the one token
    ResetCounts(*server);
    absl::StatusOr<json> got = slow->Get(kResourceClaims, "ns", "c1", absl::Now() + absl::Seconds(1));
    REQUIRE_FALSE(got.ok());
    CHECK(absl::IsDeadlineExceeded(got.status()));
    CHECK_THAT(std::string(got.status().message()), Catch::StartsWith("client-side rate limit (qps 0.1)"));
    CHECK(Count(*server, "GET resourceclaims") == 0);
  }
}

TEST_CASE("the rate limiter paces requests: qps 20, burst 1", "[client][ratelimit]") {
  auto server = StartServer();
  ClientConfig config = BaseConfig(*server);
  config.qps = 20;
  config.burst = 1;
  auto client = MakeClient(config);
  const absl::Time start = absl::Now();
  for (int i = 0; i < 21; ++i) CHECK(absl::IsNotFound(client->Get(kResourceClaims, "ns", "x").status()));
  CHECK(absl::Now() - start >= absl::Milliseconds(900));  // 20 waits of 50 ms; never an upper bound
}

TEST_CASE("a create that may have landed is not retried blindly", "[client][create]") {
  auto server = StartServer();
  auto client = MakeClient(BaseConfig(*server));

  SECTION("generateName: one POST, Unavailable saying it may have happened") {
    ResetCounts(*server);
    Fail(*server, "CREATE", "resourceclaims", 504, 1);
    absl::StatusOr<json> created = client->Create(kResourceClaims, "ns", NewClaim("ns", "gen-", true));
    REQUIRE_FALSE(created.ok());
    CHECK(created.status().code() == absl::StatusCode::kUnavailable);
    CHECK(absl::StrContains(created.status().message(), "may have happened"));
    CHECK(Count(*server, "CREATE resourceclaims") == 1);
  }
  SECTION("fixed name: a GET shows it did not land, then it is created") {
    ResetCounts(*server);
    Fail(*server, "CREATE", "resourceclaims", 504, 1);
    absl::StatusOr<json> created = client->Create(kResourceClaims, "ns", NewClaim("ns", "fixed"));
    INFO(created.status().ToString());
    REQUIRE(created.ok());
    CHECK(Count(*server, "CREATE resourceclaims") == 2);
    CHECK(Count(*server, "GET resourceclaims") == 1);
  }
  SECTION("429 is safe to retry: the server did not run the create") {
    ResetCounts(*server);
    Fail(*server, "CREATE", "resourceclaims", 429, 1, 1);
    CHECK(client->Create(kResourceClaims, "ns", NewClaim("ns", "gen-", true)).ok());
    CHECK(Count(*server, "CREATE resourceclaims") == 2);
  }
}

TEST_CASE("a kubeconfig drives the client end to end", "[client][kubeconfig]") {
  auto server = StartServer();
  TempDir dir;
  WriteFile(dir.Join("config"),
            absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: fake\n",
                         "clusters:\n- name: fake\n  cluster:\n    server: ", server->url(),
                         "\n    certificate-authority: ", server->ca_file(),
                         "\ncontexts:\n- name: fake\n  context: {cluster: fake, user: cert}\n",
                         "users:\n- name: cert\n  user:\n    client-certificate: ", server->client_cert_file(),
                         "\n    client-key: ", server->client_key_file(), "\n"));
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(dir.Join("config"));
  REQUIRE(config.ok());
  auto client = MakeClient(*config);
  CHECK(client->Create(kResourceClaims, "ns", NewClaim("ns", "k")).ok());
  CHECK(client->GetResourceClaim("ns", "k").ok());
}

}  // namespace
}  // namespace dra::k8s
