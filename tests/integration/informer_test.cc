// dra::k8s::Informer against the fake API server: list, watch, resume,
// relist on 410 only, selectors, metadata-only watches, transform, backoff.
// Every wait is for an event the informer reports, never for a duration.
#include "dra/k8s/informer.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "support/claim_object.h"
#include "support/fake_api_claims.h"
#include "support/poll.h"

namespace dra {
namespace {

using nlohmann::json;
using testing::kClaimNamespace;
using testing::PollUntil;

// What the handler saw, as "<type>[ list] <key>" lines.
class Recorder : public k8s::InformerHandler {
 public:
  void OnEvent(const k8s::InformerEvent& event) override {
    const char* type = event.type == k8s::InformerEvent::Type::kAdded      ? "ADDED"
                       : event.type == k8s::InformerEvent::Type::kModified ? "MODIFIED"
                                                                           : "DELETED";
    dra::MutexLock lock(&mu_);
    events_.push_back(absl::StrCat(type, event.from_list ? " list " : " ", k8s::Informer::Key(event.object)));
    last_[k8s::Informer::Key(event.object)] = event.object;
    if (event.type == k8s::InformerEvent::Type::kModified && event.old == nullptr) broken_ = true;
  }
  void OnSynced() override {
    dra::MutexLock lock(&mu_);
    ++synced_;
  }
  void OnError(const absl::Status& status, std::string_view context) override {
    dra::MutexLock lock(&mu_);
    errors_.push_back(absl::StrCat(std::string(context), ": ", status.ToString()));
  }

  std::vector<std::string> events() const {
    dra::MutexLock lock(&mu_);
    return events_;
  }
  bool Saw(const std::string& line) const {
    const std::vector<std::string> all = events();
    return std::find(all.begin(), all.end(), line) != all.end();
  }
  json Last(const std::string& key) const {
    dra::MutexLock lock(&mu_);
    return last_.at(key);
  }
  int synced() const {
    dra::MutexLock lock(&mu_);
    return synced_;
  }
  std::vector<std::string> errors() const {
    dra::MutexLock lock(&mu_);
    return errors_;
  }
  bool broken() const {
    dra::MutexLock lock(&mu_);
    return broken_;
  }

 private:
  mutable dra::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, json> last_ ABSL_GUARDED_BY(mu_);
  int synced_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mu_);
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

k8s::InformerOptions ClaimOptions() {
  k8s::InformerOptions options;
  options.resource = k8s::kResourceClaims;
  options.backoff_initial = absl::Milliseconds(10);
  options.backoff_max = absl::Milliseconds(100);
  return options;
}

std::unique_ptr<k8s::Informer> Start(std::shared_ptr<k8s::Client> client, k8s::InformerOptions options,
                                     k8s::InformerHandler& handler) {
  absl::StatusOr<std::unique_ptr<k8s::Informer>> informer = k8s::Informer::Start(client, options, handler);
  INFO(informer.status().ToString());
  REQUIRE(informer.ok());
  return *std::move(informer);
}

void CreateLabelled(k8s::Client& client, const std::string& name, const std::string& team) {
  json claim = testing::NewClaimObject(kClaimNamespace, name);
  claim["metadata"]["labels"] = {{"team", team}};
  absl::StatusOr<json> created = client.Create(k8s::kResourceClaims, kClaimNamespace, claim);
  INFO(created.status().ToString());
  REQUIRE(created.ok());
}

void Label(k8s::Client& client, const std::string& name, const std::string& key, const std::string& value) {
  absl::StatusOr<json> patched = client.Patch(k8s::kResourceClaims, kClaimNamespace, name, k8s::PatchType::kMerge,
                                              {{"metadata", {{"labels", {{key, value}}}}}});
  INFO(patched.status().ToString());
  REQUIRE(patched.ok());
}

// Ends the open watches; how many there were.
int CloseWatches(const testing::FakeApiServer& server) {
  absl::StatusOr<std::string> closed = server.Admin("POST", "/fake/closewatches");
  return closed.ok() ? json::parse(*closed).value("closed", 0) : -1;
}

std::string Key(const std::string& name) { return absl::StrCat(kClaimNamespace, "/", name); }

TEST_CASE("informer: the list becomes events, then the watch's changes, and the store follows", "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  CreateLabelled(*client, "a", "x");
  Recorder recorder;
  auto informer = Start(client, ClaimOptions(), recorder);
  REQUIRE(PollUntil([&] { return recorder.synced() == 1; }, absl::Seconds(20)));
  CHECK(informer->Synced());
  CHECK(recorder.events() == std::vector<std::string>{"ADDED list " + Key("a")});

  CreateLabelled(*client, "b", "y");
  Label(*client, "a", "seen", "yes");
  REQUIRE(client->Delete(k8s::kResourceClaims, kClaimNamespace, "b").ok());
  REQUIRE(PollUntil([&] { return recorder.events().size() == 4; }, absl::Seconds(20)));
  CHECK(recorder.events() == std::vector<std::string>{"ADDED list " + Key("a"), "ADDED " + Key("b"),
                                                      "MODIFIED " + Key("a"), "DELETED " + Key("b")});
  CHECK_FALSE(recorder.broken());
  std::optional<json> a = informer->Get(Key("a"));
  REQUIRE(a.has_value());
  CHECK(a->at("metadata").at("labels").at("seen") == "yes");
  CHECK_FALSE(informer->Get(Key("b")).has_value());
  CHECK(informer->List().size() == 1);
  CHECK(informer->Stats().lists == 1);
  CHECK(recorder.errors().empty());
}

int RequestCount(const testing::FakeApiServer& server, const std::string& key) {
  absl::StatusOr<std::string> requests = server.Admin("GET", "/fake/requests");
  REQUIRE(requests.ok());
  return json::parse(*requests)["counts"].value(key, 0);
}

TEST_CASE("informer: the list is a watch-list stream that goes on as the watch: one request", "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  CreateLabelled(*client, "a", "x");
  CreateLabelled(*client, "b", "x");
  REQUIRE(client->Delete(k8s::kResourceClaims, kClaimNamespace, "b").ok());
  Recorder recorder;
  auto informer = Start(client, ClaimOptions(), recorder);
  REQUIRE(PollUntil([&] { return recorder.synced() == 1; }, absl::Seconds(20)));
  CHECK(recorder.events() == std::vector<std::string>{"ADDED list " + Key("a")});
  CreateLabelled(*client, "c", "x");
  REQUIRE(PollUntil([&] { return recorder.Saw("ADDED " + Key("c")); }, absl::Seconds(20)));
  CHECK(RequestCount(*server, "LIST resourceclaims") == 0);
  CHECK(RequestCount(*server, "WATCH resourceclaims") == 1);
  const k8s::InformerStats stats = informer->Stats();
  CHECK(stats.lists == 1);
  CHECK(stats.watch_lists == 1);
  CHECK(stats.watches == 1);
  CHECK(recorder.errors().empty());
}

TEST_CASE("informer: a server with the WatchList feature off gets a LIST and a WATCH, from then on", "[informer]") {
  testing::FakeApiServer::Options server_options;
  server_options.extra_args = {"--quiet", "--watch-list=false"};
  absl::StatusOr<std::unique_ptr<testing::FakeApiServer>> server = testing::FakeApiServer::Start(server_options);
  REQUIRE(server.ok());
  auto client = testing::MakeClient(**server);
  CreateLabelled(*client, "a", "x");
  Recorder recorder;
  auto informer = Start(client, ClaimOptions(), recorder);
  REQUIRE(PollUntil([&] { return recorder.synced() == 1; }, absl::Seconds(20)));
  CHECK(recorder.events() == std::vector<std::string>{"ADDED list " + Key("a")});
  // A 410 lists again: with a LIST, not another refused watch-list.
  REQUIRE((*server)
              ->Admin("POST", "/fake/fail", R"({"verb":"WATCH","resource":"resourceclaims","count":1,"status":410})")
              .ok());
  REQUIRE(PollUntil([&] { return CloseWatches(**server) == 1; }, absl::Seconds(20)));
  REQUIRE(PollUntil([&] { return recorder.synced() == 2; }, absl::Seconds(20)));
  CHECK(RequestCount(**server, "LIST resourceclaims") == 2);
  const k8s::InformerStats stats = informer->Stats();
  CHECK(stats.lists == 2);
  CHECK(stats.watch_lists == 0);
  CHECK(recorder.errors().empty());
}

TEST_CASE("informer: a watch the server ends is resumed from its version, without a list", "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  Recorder recorder;
  auto informer = Start(client, ClaimOptions(), recorder);
  REQUIRE(PollUntil([&] { return informer->Synced(); }, absl::Seconds(20)));
  for (int round = 0; round < 3; ++round) {
    const int64_t watches = informer->Stats().watches;
    REQUIRE(PollUntil([&] { return CloseWatches(*server) == 1; }, absl::Seconds(20)));
    const std::string name = absl::StrCat("c", round);
    CreateLabelled(*client, name, "x");
    REQUIRE(PollUntil([&] { return recorder.Saw("ADDED " + Key(name)); }, absl::Seconds(20)));
    CHECK(informer->Stats().watches > watches);
  }
  CHECK(informer->Stats().lists == 1);
  CHECK(recorder.errors().empty());
}

TEST_CASE(
    "informer: failures are reported and retried with backoff, only 410 lists again, and the list's "
    "differences come as events",
    "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server, /*default_rate_limit=*/false, /*max_retries=*/0);
  CreateLabelled(*client, "stays", "x");
  CreateLabelled(*client, "goes", "x");
  CreateLabelled(*client, "changes", "x");
  // The list is a watch-list stream: a WATCH.
  REQUIRE(server->Admin("POST", "/fake/fail", R"({"verb":"WATCH","resource":"resourceclaims","count":3,"status":503})")
              .ok());
  Recorder recorder;
  auto informer = Start(client, ClaimOptions(), recorder);
  REQUIRE(PollUntil([&] { return informer->Synced(); }, absl::Seconds(20)));
  REQUIRE(recorder.errors().size() == 3);
  CHECK(recorder.errors()[0].rfind("watch-list resourceclaims: UNAVAILABLE: ", 0) == 0);
  CHECK(informer->Stats().lists == 1);

  // The watch fails (503, transient) until the faults are dropped; in the
  // meantime two claims change and the history goes, so the next watch gets
  // 410 and the informer lists: once.
  REQUIRE(
      server
          ->Admin("POST", "/fake/fail", R"({"verb":"WATCH","resource":"resourceclaims","count":1000000,"status":503})")
          .ok());
  REQUIRE(server->Admin("POST", "/fake/closewatches").ok());
  REQUIRE(PollUntil([&] { return recorder.errors().size() >= 5; }, absl::Seconds(20)));
  REQUIRE(client->Delete(k8s::kResourceClaims, kClaimNamespace, "goes").ok());
  Label(*client, "changes", "seen", "yes");
  CreateLabelled(*client, "new", "x");
  REQUIRE(server->Admin("POST", "/fake/compact").ok());
  REQUIRE(server->Admin("DELETE", "/fake/fail").ok());
  REQUIRE(PollUntil([&] { return recorder.synced() == 2; }, absl::Seconds(20)));
  CHECK(informer->Stats().lists == 2);
  CHECK(informer->Stats().watch_lists == 2);
  const std::vector<std::string> events = recorder.events();
  const std::vector<std::string> after(events.begin() + 3, events.end());
  CHECK(after == std::vector<std::string>{"DELETED list " + Key("goes"), "MODIFIED list " + Key("changes"),
                                          "ADDED list " + Key("new")});
  CHECK(informer->List().size() == 3);
  for (const std::string& error : recorder.errors()) CHECK(error.find("HTTP 410") == std::string::npos);
}

// The fake server sends whole objects on a metadata-only watch (as a server
// without that transformation does); e2e_client checks the real one.
TEST_CASE("informer: selectors are the server's, transform shapes the store", "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  CreateLabelled(*client, "mine", "x");
  CreateLabelled(*client, "theirs", "y");
  k8s::InformerOptions options = ClaimOptions();
  options.label_selector = "team=x";
  options.watch_metadata_only = true;
  options.transform = [](json& object) { object["metadata"].erase("managedFields"); };
  Recorder recorder;
  auto informer = Start(client, options, recorder);
  REQUIRE(PollUntil([&] { return informer->Synced(); }, absl::Seconds(20)));
  CHECK(recorder.Last(Key("mine")).contains("spec"));  // a list is whole
  Label(*client, "mine", "seen", "yes");
  CreateLabelled(*client, "later", "x");
  CreateLabelled(*client, "later-theirs", "y");
  REQUIRE(PollUntil([&] { return recorder.Saw("ADDED " + Key("later")); }, absl::Seconds(20)));
  CHECK(recorder.events() ==
        std::vector<std::string>{"ADDED list " + Key("mine"), "MODIFIED " + Key("mine"), "ADDED " + Key("later")});
  CHECK_FALSE(recorder.Last(Key("later"))["metadata"].contains("managedFields"));
  CHECK_FALSE(informer->Get(Key("theirs")).has_value());
}

TEST_CASE("informer: a field selector the server does not know falls back to a coarser one, refined here",
          "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  auto create = [&](const std::string& name, const std::string& driver, const std::string& pool) {
    json slice = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceSlice"},
                  {"metadata", {{"name", name}}},
                  {"spec",
                   {{"driver", driver},
                    {"pool", {{"name", pool}, {"generation", 1}, {"resourceSliceCount", 1}}},
                    {"allNodes", true},
                    {"devices", json::array()}}}};
    absl::StatusOr<json> created = client->Create(k8s::kResourceSlices, "", slice);
    INFO(created.status().ToString());
    REQUIRE(created.ok());
  };
  create("a-1", "d.example.com", "a");
  create("b-1", "d.example.com", "b");
  create("other-a-1", "other.example.com", "a");
  k8s::InformerOptions options;
  options.resource = k8s::kResourceSlices;
  // spec.unknown stands for spec.pool.name on a server before 1.37.
  options.field_selector = "spec.driver=d.example.com,spec.unknown=a";
  // Metadata-only: a LIST is refused; whole objects: a watch-list stream.
  const bool metadata_only = GENERATE(true, false);
  options.watch_metadata_only = metadata_only;
  options.field_selector_fallback = k8s::InformerOptions::FieldSelectorFallback{
      "spec.driver=d.example.com", [](const json& slice) { return slice["spec"]["pool"]["name"] == "a"; }};
  Recorder recorder;
  auto informer = Start(client, options, recorder);
  REQUIRE(PollUntil([&] { return informer->Synced(); }, absl::Seconds(20)));
  CHECK(recorder.errors().empty());
  CHECK(informer->Stats().field_selector_fallback);
  CHECK(informer->Stats().lists == 1);
  CHECK(informer->Stats().watch_lists == (metadata_only ? 0 : 1));
  create("b-2", "d.example.com", "b");
  create("other-a-2", "other.example.com", "a");
  create("a-2", "d.example.com", "a");
  REQUIRE(client->Delete(k8s::kResourceSlices, "", "b-1").ok());
  REQUIRE(client->Delete(k8s::kResourceSlices, "", "a-1").ok());
  REQUIRE(PollUntil([&] { return recorder.Saw("DELETED a-1"); }, absl::Seconds(20)));
  CHECK(recorder.events() == std::vector<std::string>{"ADDED list a-1", "ADDED a-2", "DELETED a-1"});
  CHECK(recorder.Last("a-2").contains("spec"));  // whole objects: metadata could not be refined
  CHECK(informer->List().size() == 1);
}

TEST_CASE("informer: Stop ends an open watch, and no handler call comes after it", "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  Recorder recorder;
  auto informer = Start(client, ClaimOptions(), recorder);
  REQUIRE(PollUntil([&] { return informer->Synced(); }, absl::Seconds(20)));
  informer->Stop();
  const size_t seen = recorder.events().size();
  CreateLabelled(*client, "after", "x");
  informer->Stop();  // idempotent
  CHECK(recorder.events().size() == seen);
}

TEST_CASE("informer: options are checked", "[informer]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  Recorder recorder;
  k8s::InformerOptions options;
  CHECK(k8s::Informer::Start(client, options, recorder).status().message() ==
        "InformerOptions: resource: Required value");
  options.resource = k8s::kResourceSlices;
  options.namespace_ = "ns";
  CHECK(absl::IsInvalidArgument(k8s::Informer::Start(client, options, recorder).status()));
  options.namespace_ = "";
  options.relist_spread = absl::Milliseconds(-1);
  CHECK(k8s::Informer::Start(client, options, recorder).status().message() ==
        "InformerOptions: relist_spread: Invalid value: must not be negative");
  options.relist_spread = absl::ZeroDuration();
  options.backoff_initial = absl::ZeroDuration();
  CHECK(absl::IsInvalidArgument(k8s::Informer::Start(client, options, recorder).status()));
  CHECK(absl::IsInvalidArgument(k8s::Informer::Start(nullptr, ClaimOptions(), recorder).status()));
}

}  // namespace
}  // namespace dra
