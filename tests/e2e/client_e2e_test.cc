// dra::k8s::Client against a real kube-apiserver (v1.37, built from source by
// tests/e2e/build-k8s.sh and started by tests/e2e/cluster.sh as a ctest
// fixture): CRUD with conflicts and delete preconditions, paging over 520
// ResourceSlices, watches on slices and claims (an object the admin deletes is
// seen by a driver's watch; an expired resourceVersion is 410), server-side
// apply on claim status (with the per-driver RBAC the server asks for), TLS
// with the server's CA and with a wrong one, RBAC denials, and the
// nodeAllocatableResources shape the server stores.
//
// DRA_E2E_KUBECONFIG names the admin kubeconfig of the running cluster; the
// other identities' kubeconfigs and the CAs sit beside it (see cluster.sh).
// Every test works in its own namespace and names its cluster-scoped objects
// with a per-process prefix, so tests can run in parallel and again on the
// same cluster.
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/k8s/resource_slice_json.h"
#include "e2e/e2e_cluster.h"
#include "support/claim_object.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/watch_thread.h"

namespace dra::k8s {
namespace {

using dra::e2e::AdminConfig;
using dra::e2e::ClusterDir;
using dra::e2e::CreateNamespace;
using dra::e2e::Eventually;
using dra::e2e::MakeClient;
using dra::e2e::UniqueName;
using dra::testing::PollUntil;
using dra::testing::ReadFile;
using dra::testing::WatchThread;
using nlohmann::json;

// The driver identity tests grant rights to, and its service account user.
constexpr char kDriverIdentity[] = "gpu-driver";
constexpr char kDriverName[] = "gpu.e2e.example.com";
const std::string kDriverUser = e2e::DriverUser(kDriverIdentity);

ClientConfig DriverConfig() { return e2e::DriverConfig(kDriverIdentity); }
ClientConfig UnprivilegedConfig() { return e2e::LoadConfig("unprivileged.kubeconfig"); }

void Grant(Client& admin, const std::string& ns, const json& rules, const std::function<bool()>& probe) {
  e2e::Grant(admin, kDriverUser, ns, rules, probe);
}

json NewSlice(const std::string& name, const std::string& pool, const std::string& run_label, int devices = 2) {
  json list = json::array();
  for (int i = 0; i < devices; ++i) {
    list.push_back({{"name", absl::StrCat("gpu-", i)},
                    {"attributes", {{"model", {{"string", "e2e-1000"}}}, {"index", {{"int", i}}}}},
                    {"capacity", {{"memory", {{"value", "16Gi"}}}}}});
  }
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceSlice"},
              {"metadata", {{"name", name}, {"labels", {{"e2e-run", run_label}}}}},
              {"spec",
               {{"driver", kDriverName},
                {"nodeName", "node-" + run_label},
                {"pool", {{"name", pool}, {"generation", 1}, {"resourceSliceCount", 1}}},
                {"devices", list}}}};
}

json Allocation(const std::string& node) {
  json result = {{"request", "gpu"}, {"driver", kDriverName}, {"pool", node}, {"device", "gpu-0"}};
  json requirement = {{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({node})}};
  json term = {{"matchFields", json::array({requirement})}};
  return json{{"devices", {{"results", json::array({result})}}},
              {"nodeSelector", {{"nodeSelectorTerms", json::array({term})}}}};
}

ListOptions OnePage() {
  ListOptions options;
  options.limit = 1;
  return options;
}

std::string Rv(const json& object) { return object["metadata"]["resourceVersion"].get<std::string>(); }

// Collects watch events for the test thread.
struct EventLog {
  std::mutex mu;
  std::vector<WatchEvent> events;

  void Add(const WatchEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
  }
  // "TYPE name" for every event but bookmarks, in order.
  std::vector<std::string> Summary() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> out;
    for (const WatchEvent& e : events) {
      if (e.type != "BOOKMARK") out.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
    }
    return out;
  }
  std::optional<WatchEvent> Find(const std::string& type, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    for (const WatchEvent& e : events) {
      if (e.type == type && e.object["metadata"]["name"] == name) return e;
    }
    return std::nullopt;
  }
};

TEST_CASE("ResourceSlices: create, get, update with conflict, patches, delete with preconditions", "[e2e][crud]") {
  auto client = MakeClient(AdminConfig());
  const std::string run = UniqueName("crud");
  const std::string name = run + "-slice";

  absl::StatusOr<json> created = client->Create(kResourceSlices, "", NewSlice(name, run, run));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  const std::string rv1 = Rv(*created);
  const std::string uid = (*created)["metadata"]["uid"];
  CHECK((*created)["spec"]["devices"].size() == 2);
  CHECK((*created)["metadata"]["generation"] == 1);

  absl::StatusOr<json> again = client->Create(kResourceSlices, "", NewSlice(name, run, run));
  REQUIRE_FALSE(again.ok());
  INFO(again.status().ToString());
  CHECK(absl::IsAlreadyExists(again.status()));
  CHECK(absl::StrContains(again.status().message(),
                          absl::StrCat("resourceslices.resource.k8s.io \"", name, "\" already exists")));
  CHECK(HttpStatusCode(again.status()) == 409);
  CHECK(StatusReason(again.status()) == "AlreadyExists");

  absl::StatusOr<json> got = client->Get(kResourceSlices, "", name);
  REQUIRE(got.ok());
  CHECK(Rv(*got) == rv1);
  // The typed codec reads what the server stored.
  absl::StatusOr<ResourceSlice> typed = ResourceSliceFromJson(*got);
  INFO(typed.status().ToString());
  REQUIRE(typed.ok());
  CHECK(typed->spec.devices.at(1).attributes.at("index").int_value == 1);
  CHECK(typed->spec.devices.at(0).capacity.at("memory").value.ToString() == "16Gi");

  absl::StatusOr<json> missing = client->Get(kResourceSlices, "", name + "-nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(absl::StrContains(missing.status().message(), "\"" + name + "-nope\" not found"));

  // Update with the current resourceVersion, then with the stale one.
  json object = *got;
  object["spec"]["pool"]["generation"] = 2;
  absl::StatusOr<json> updated = client->Update(kResourceSlices, "", object);
  INFO(updated.status().ToString());
  REQUIRE(updated.ok());
  CHECK((*updated)["spec"]["pool"]["generation"] == 2);
  CHECK((*updated)["metadata"]["generation"] == 2);
  CHECK(Rv(*updated) != rv1);
  object["spec"]["pool"]["generation"] = 3;
  absl::StatusOr<json> stale = client->Update(kResourceSlices, "", object);
  REQUIRE_FALSE(stale.ok());
  INFO(stale.status().ToString());
  CHECK(IsConflict(stale.status()));
  CHECK(stale.status().code() == absl::StatusCode::kAborted);
  CHECK(absl::StrContains(stale.status().message(),
                          absl::StrCat("Operation cannot be fulfilled on resourceslices.resource.k8s.io \"", name,
                                       "\": the object has been modified; please apply your changes to the latest "
                                       "version and try again")));
  CHECK(absl::StrContains(stale.status().message(), "[PUT /apis/resource.k8s.io/v1/resourceslices/" + name));

  // Merge, strategic-merge and JSON patches.
  absl::StatusOr<json> merged =
      client->Patch(kResourceSlices, "", name, PatchType::kMerge, json{{"metadata", {{"labels", {{"a", "1"}}}}}});
  INFO(merged.status().ToString());
  REQUIRE(merged.ok());
  CHECK((*merged)["metadata"]["labels"]["a"] == "1");
  CHECK((*merged)["metadata"]["labels"]["e2e-run"] == run);
  absl::StatusOr<json> strategic = client->Patch(kResourceSlices, "", name, PatchType::kStrategicMerge,
                                                 json{{"metadata", {{"labels", {{"b", "2"}}}}}});
  INFO(strategic.status().ToString());
  REQUIRE(strategic.ok());
  CHECK((*strategic)["metadata"]["labels"]["a"] == "1");
  CHECK((*strategic)["metadata"]["labels"]["b"] == "2");
  json ops = json::array({{{"op", "test"}, {"path", "/spec/pool/generation"}, {"value", 2}},
                          {{"op", "replace"}, {"path", "/spec/pool/generation"}, {"value", 4}}});
  absl::StatusOr<json> patched = client->Patch(kResourceSlices, "", name, PatchType::kJson, ops);
  INFO(patched.status().ToString());
  REQUIRE(patched.ok());
  CHECK((*patched)["spec"]["pool"]["generation"] == 4);
  // A failed JSON patch test is a 422 from the server.
  absl::StatusOr<json> failed_test = client->Patch(kResourceSlices, "", name, PatchType::kJson, ops);
  REQUIRE_FALSE(failed_test.ok());
  INFO(failed_test.status().ToString());
  CHECK(failed_test.status().code() == absl::StatusCode::kInvalidArgument);
  // An invalid object: the server's field error comes back.
  json invalid_ops = json::array({{{"op", "replace"}, {"path", "/spec/devices/0/name"}, {"value", "Not_A_Name"}}});
  absl::StatusOr<json> invalid = client->Patch(kResourceSlices, "", name, PatchType::kJson, invalid_ops);
  REQUIRE_FALSE(invalid.ok());
  INFO(invalid.status().ToString());
  CHECK(invalid.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(HttpStatusCode(invalid.status()) == 422);
  CHECK(absl::StrContains(invalid.status().message(), "spec.devices[0].name"));

  // Delete preconditions: a wrong UID or resourceVersion is a conflict.
  absl::Status wrong_uid = client->Delete(kResourceSlices, "", name, Preconditions{"not-the-uid", ""});
  INFO(wrong_uid.ToString());
  CHECK(IsConflict(wrong_uid));
  CHECK(absl::StrContains(wrong_uid.message(),
                          "the UID in the precondition (not-the-uid) does not match the UID in "
                          "record (" +
                              uid +
                              "). The object might have been deleted and then "
                              "recreated"));
  absl::Status wrong_rv = client->Delete(kResourceSlices, "", name, Preconditions{"", rv1});
  INFO(wrong_rv.ToString());
  CHECK(IsConflict(wrong_rv));
  CHECK(absl::StrContains(wrong_rv.message(), "the ResourceVersion in the precondition (" + rv1 +
                                                  ") does not match "
                                                  "the ResourceVersion in record"));
  CHECK(client->Get(kResourceSlices, "", name).ok());
  absl::Status deleted = client->Delete(kResourceSlices, "", name, Preconditions{uid, Rv(*patched)});
  INFO(deleted.ToString());
  CHECK(deleted.ok());
  CHECK(absl::IsNotFound(client->Get(kResourceSlices, "", name).status()));
  CHECK(absl::IsNotFound(client->Delete(kResourceSlices, "", name)));
  // Every slice went as protobuf: kube-apiserver refused none (a 415 would
  // have turned the client to JSON).
  for (const k8s::RequestCount& count : client->RequestCounts()) {
    INFO(count.verb);
    CHECK(count.code != "415");
  }
}

TEST_CASE("ResourceClaims: create, generateName, update with conflict, delete with preconditions", "[e2e][crud]") {
  auto client = MakeClient(AdminConfig());
  const std::string ns = CreateNamespace(*client, "e2e-claims");

  absl::StatusOr<json> created = client->Create(kResourceClaims, ns, testing::NewClaimObject(ns, "c1"));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  const std::string rv1 = Rv(*created);
  const std::string uid = (*created)["metadata"]["uid"];

  json generate = testing::NewClaimObject(ns, "");
  generate["metadata"].erase("name");
  generate["metadata"]["generateName"] = "gen-";
  absl::StatusOr<json> generated = client->Create(kResourceClaims, "", generate);  // namespace from the object
  INFO(generated.status().ToString());
  REQUIRE(generated.ok());
  CHECK(absl::StartsWith((*generated)["metadata"]["name"].get<std::string>(), "gen-"));
  CHECK((*generated)["metadata"]["namespace"] == ns);

  absl::StatusOr<ResourceClaim> typed = client->GetResourceClaim(ns, "c1");
  INFO(typed.status().ToString());
  REQUIRE(typed.ok());
  CHECK(typed->metadata.uid == uid);
  CHECK(typed->spec.devices.requests.at(0).exactly->device_class_name == "gpu.example.com");
  // The server defaults allocationMode and count; the codec keeps them.
  CHECK(ToJson(*typed)["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"] == "ExactCount");

  absl::StatusOr<json> missing = client->Get(kResourceClaims, ns, "nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(absl::StrContains(missing.status().message(), "resourceclaims.resource.k8s.io \"nope\" not found"));

  // The claim spec is immutable: the server says so.
  json object = *created;
  object["spec"]["devices"]["requests"][0]["name"] = "other";
  absl::StatusOr<json> immutable = client->Update(kResourceClaims, ns, object);
  REQUIRE_FALSE(immutable.ok());
  INFO(immutable.status().ToString());
  CHECK(immutable.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(immutable.status().message(), "field is immutable"));

  object = *created;
  object["metadata"]["labels"] = {{"tier", "gold"}};
  absl::StatusOr<json> updated = client->Update(kResourceClaims, ns, object);
  INFO(updated.status().ToString());
  REQUIRE(updated.ok());
  CHECK((*updated)["metadata"]["labels"]["tier"] == "gold");
  object["metadata"]["labels"]["tier"] = "silver";
  absl::StatusOr<json> stale = client->Update(kResourceClaims, ns, object);
  REQUIRE_FALSE(stale.ok());
  CHECK(IsConflict(stale.status()));
  CHECK(absl::StrContains(stale.status().message(), "the object has been modified"));

  absl::Status wrong_uid = client->Delete(kResourceClaims, ns, "c1", Preconditions{"not-the-uid", ""});
  CHECK(IsConflict(wrong_uid));
  absl::Status wrong_rv = client->Delete(kResourceClaims, ns, "c1", Preconditions{"", rv1});
  CHECK(IsConflict(wrong_rv));
  absl::Status deleted = client->Delete(kResourceClaims, ns, "c1", Preconditions{uid, Rv(*updated)});
  INFO(deleted.ToString());
  CHECK(deleted.ok());
  CHECK(absl::IsNotFound(client->Get(kResourceClaims, ns, "c1").status()));
}

TEST_CASE("list pages over 520 ResourceSlices", "[e2e][list]") {
  auto client = MakeClient(AdminConfig());
  const std::string run = UniqueName("paging");
  constexpr int kSlices = 520;
  for (int i = 0; i < kSlices; ++i) {
    absl::StatusOr<json> created =
        client->Create(kResourceSlices, "", NewSlice(absl::StrCat(run, "-", i), absl::StrCat(run, "-", i), run, 1));
    INFO(created.status().ToString());
    REQUIRE(created.ok());
  }

  ListOptions options;
  options.label_selector = "e2e-run=" + run;
  options.limit = 100;
  // By hand: six pages, each but the last with a continue token.
  std::set<std::string> names;
  int pages = 0;
  std::string first_rv;
  for (;;) {
    absl::StatusOr<ListResult> page = client->List(kResourceSlices, "", options);
    INFO(page.status().ToString());
    REQUIRE(page.ok());
    ++pages;
    if (first_rv.empty()) first_rv = page->resource_version;
    CHECK(page->resource_version == first_rv);  // one consistent snapshot
    for (const json& item : page->items) {
      CHECK(item["kind"] == "ResourceSlice");
      CHECK(item["apiVersion"] == "resource.k8s.io/v1");
      names.insert(item["metadata"]["name"].get<std::string>());
    }
    if (page->continue_token.empty()) break;
    CHECK(page->items.size() == 100);
    options.continue_token = page->continue_token;
  }
  CHECK(pages == 6);
  CHECK(names.size() == kSlices);

  // ListAll with the default page size (500): two pages, one result.
  options.continue_token.clear();
  options.limit = 0;
  absl::StatusOr<ListResult> all = client->ListAll(kResourceSlices, "", options);
  INFO(all.status().ToString());
  REQUIRE(all.ok());
  CHECK(all->items.size() == kSlices);
  CHECK(all->continue_token.empty());
  CHECK_FALSE(all->resource_version.empty());
  options.limit = 500;
  absl::StatusOr<ListResult> page = client->List(kResourceSlices, "", options);
  REQUIRE(page.ok());
  CHECK(page->items.size() == 500);
  CHECK_FALSE(page->continue_token.empty());

  // A field selector the server supports for slices.
  ListOptions by_pool;
  by_pool.field_selector = "spec.pool.name=" + run + "-7";
  absl::StatusOr<ListResult> one = client->ListAll(kResourceSlices, "", by_pool);
  INFO(one.status().ToString());
  REQUIRE(one.ok());
  REQUIRE(one->items.size() == 1);
  CHECK(one->items[0]["metadata"]["name"] == run + "-7");

  for (int i = 0; i < kSlices; ++i) {
    absl::Status deleted = client->Delete(kResourceSlices, "", absl::StrCat(run, "-", i));
    INFO(deleted.ToString());
    REQUIRE(deleted.ok());
  }
  options.limit = 0;
  absl::StatusOr<ListResult> none = client->ListAll(kResourceSlices, "", options);
  REQUIRE(none.ok());
  CHECK(none->items.empty());
}

TEST_CASE("watch ResourceSlices as a driver: added, modified, and deleted by the admin", "[e2e][watch]") {
  auto admin = MakeClient(AdminConfig());
  auto driver = MakeClient(DriverConfig());
  const std::string run = UniqueName("watch-slices");
  Grant(*admin, "",
        json::array({{{"apiGroups", json::array({"resource.k8s.io"})},
                      {"resources", json::array({"resourceslices"})},
                      {"verbs", json::array({"get", "list", "watch", "create", "update", "patch", "delete"})}}}),
        [&] { return driver->List(kResourceSlices, "", OnePage()).ok(); });

  ListOptions list_options;
  list_options.label_selector = "e2e-run=" + run;
  absl::StatusOr<ListResult> list = driver->List(kResourceSlices, "", list_options);
  INFO(list.status().ToString());
  REQUIRE(list.ok());
  CHECK(list->items.empty());

  EventLog log;
  WatchOptions options;
  options.resource_version = list->resource_version;
  options.label_selector = "e2e-run=" + run;
  auto watch =
      std::make_unique<WatchThread>(driver, kResourceSlices, "", options, [&](const WatchEvent& e) { log.Add(e); });
  // The same watch for metadata only, in protobuf (the default) and in JSON.
  options.metadata_only = true;
  EventLog metadata_log;
  auto metadata_watch = std::make_unique<WatchThread>(driver, kResourceSlices, "", options,
                                                      [&](const WatchEvent& e) { metadata_log.Add(e); });
  k8s::ClientConfig json_config = DriverConfig();
  json_config.protobuf = false;
  auto json_driver = MakeClient(json_config);
  EventLog json_metadata_log;
  auto json_metadata_watch = std::make_unique<WatchThread>(json_driver, kResourceSlices, "", options,
                                                           [&](const WatchEvent& e) { json_metadata_log.Add(e); });

  const std::string name = run + "-a";
  absl::StatusOr<json> created = driver->Create(kResourceSlices, "", NewSlice(name, run, run));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  json object = *created;
  object["spec"]["pool"]["generation"] = 2;
  REQUIRE(driver->Update(kResourceSlices, "", object).ok());
  // Another run's slice is not seen (label selector).
  const std::string other = UniqueName("watch-other");
  REQUIRE(admin->Create(kResourceSlices, "", NewSlice(other, other, other)).ok());
  // The admin deletes the driver's slice: the driver sees it go.
  REQUIRE(admin->Delete(kResourceSlices, "", name).ok());

  REQUIRE(PollUntil([&] { return log.Summary().size() >= 3; }, absl::Seconds(20)));
  CHECK(log.Summary() == std::vector<std::string>{"ADDED " + name, "MODIFIED " + name, "DELETED " + name});
  std::optional<WatchEvent> gone = log.Find("DELETED", name);
  REQUIRE(gone.has_value());
  CHECK(gone->object["spec"]["pool"]["generation"] == 2);  // the last state before deletion
  CHECK(gone->object["kind"] == "ResourceSlice");
  for (EventLog* partial : {&metadata_log, &json_metadata_log}) {
    REQUIRE(PollUntil([&] { return partial->Summary().size() >= 3; }, absl::Seconds(20)));
    CHECK(partial->Summary() == log.Summary());
    std::optional<WatchEvent> partial_gone = partial->Find("DELETED", name);
    REQUIRE(partial_gone.has_value());
    CHECK(partial_gone->object["kind"] == "PartialObjectMetadata");
    CHECK(partial_gone->object["apiVersion"] == "meta.k8s.io/v1");
    CHECK_FALSE(partial_gone->object.contains("spec"));
    CHECK(partial_gone->object["metadata"]["resourceVersion"] == gone->object["metadata"]["resourceVersion"]);
  }
  metadata_watch->Stop();
  json_metadata_watch->Stop();
  CHECK_FALSE(watch->Done());
  watch->Stop();
  CHECK(watch->Wait().ok());
  REQUIRE(admin->Delete(kResourceSlices, "", other).ok());
}

// Grants the driver read access to claims in a fresh namespace.
std::string WatchNamespace(Client& admin, Client& driver) {
  const std::string ns = CreateNamespace(admin, "e2e-watch");
  Grant(admin, ns,
        json::array({{{"apiGroups", json::array({"resource.k8s.io"})},
                      {"resources", json::array({"resourceclaims"})},
                      {"verbs", json::array({"get", "list", "watch"})}}}),
        [&] { return driver.List(kResourceClaims, ns).ok(); });
  return ns;
}

TEST_CASE("watch ResourceClaims as a driver from a list's version, ended by the server after timeoutSeconds",
          "[e2e][watch]") {
  auto admin = MakeClient(AdminConfig());
  auto driver = MakeClient(DriverConfig());
  const std::string ns = WatchNamespace(*admin, *driver);

  REQUIRE(admin->Create(kResourceClaims, ns, testing::NewClaimObject(ns, "before")).ok());
  absl::StatusOr<ListResult> list = driver->List(kResourceClaims, ns);
  REQUIRE(list.ok());
  REQUIRE(list->items.size() == 1);

  EventLog log;
  WatchOptions options;
  options.resource_version = list->resource_version;
  options.timeout_seconds = 4;
  const absl::Time start = absl::Now();
  auto watch =
      std::make_unique<WatchThread>(driver, kResourceClaims, ns, options, [&](const WatchEvent& e) { log.Add(e); });
  REQUIRE(admin->Create(kResourceClaims, ns, testing::NewClaimObject(ns, "a")).ok());
  REQUIRE(
      admin->Patch(kResourceClaims, ns, "a", PatchType::kMerge, json{{"metadata", {{"labels", {{"x", "y"}}}}}}).ok());
  REQUIRE(admin->Delete(kResourceClaims, ns, "before").ok());
  REQUIRE(PollUntil([&] { return log.Summary().size() >= 3; }, absl::Seconds(20)));
  CHECK(log.Summary() == std::vector<std::string>{"ADDED a", "MODIFIED a", "DELETED before"});
  std::optional<WatchEvent> deleted = log.Find("DELETED", "before");
  REQUIRE(deleted.has_value());
  CHECK(deleted->object["kind"] == "ResourceClaim");
  // The end of the server's timeout is a clean end.
  absl::Status ended = watch->Wait();
  INFO(ended.ToString());
  CHECK(ended.ok());
  CHECK(absl::Now() - start >= absl::Seconds(3));

  // Not tested here: a watch from a version older than the server's window
  // (410, relist). The watch cache of a fresh apiserver still holds every
  // event since it started, so no version is "too old" (even resourceVersion
  // 1 after an etcd compaction is served from the cache); the fake server's
  // suite covers the client's handling of 410.
}

// v1.37 gzips the watch-list stream (a watch without a resourceVersion)
// for clients that accept gzip, one gzip member per flush, which libcurl
// cannot follow: the client asks for gzip on watches itself and inflates
// every member (GzipMembers).
TEST_CASE("watch ResourceClaims from now (no resourceVersion): initial ADDED events, then changes", "[e2e][watch]") {
  auto admin = MakeClient(AdminConfig());
  auto driver = MakeClient(DriverConfig());
  const std::string ns = WatchNamespace(*admin, *driver);
  REQUIRE(admin->Create(kResourceClaims, ns, testing::NewClaimObject(ns, "a")).ok());

  EventLog log;
  auto watch = std::make_unique<WatchThread>(driver, kResourceClaims, ns, WatchOptions{},
                                             [&](const WatchEvent& e) { log.Add(e); });
  REQUIRE(PollUntil([&] { return !log.Summary().empty(); }, absl::Seconds(20)));
  REQUIRE(admin->Create(kResourceClaims, ns, testing::NewClaimObject(ns, "b")).ok());
  // (Stop waiting as soon as the watch has died.)
  const bool both = PollUntil([&] { return log.Summary().size() >= 2 || watch->Done(); }, absl::Seconds(20)) &&
                    log.Summary().size() >= 2;
  INFO(absl::StrJoin(log.Summary(), ", ")
       << "; the watch: " << (watch->Done() ? watch->Wait().ToString() : "still running"));
  CHECK(both);
  CHECK(log.Summary() == std::vector<std::string>{"ADDED a", "ADDED b"});
  CHECK_FALSE(watch->Done());
  watch.reset();  // the destructor stops and joins
}

TEST_CASE("claim status: allocation as the scheduler writes it, server-side apply of device conditions",
          "[e2e][apply]") {
  auto admin = MakeClient(AdminConfig());
  auto driver = MakeClient(DriverConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-apply");
  const std::string node = UniqueName("node");
  REQUIRE(admin->Create(kResourceClaims, ns, testing::NewClaimObject(ns, "c1")).ok());

  // The scheduler's part: status.allocation through the status subresource.
  PatchOptions status;
  status.subresource = "status";
  absl::StatusOr<json> allocated = admin->Patch(kResourceClaims, ns, "c1", PatchType::kMerge,
                                                json{{"status", {{"allocation", Allocation(node)}}}}, status);
  INFO(allocated.status().ToString());
  REQUIRE(allocated.ok());
  CHECK((*allocated)["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0");

  json condition = {{"type", "Ready"},
                    {"status", "True"},
                    {"reason", "Prepared"},
                    {"message", "ok"},
                    {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
  auto apply_body = [&](const json& cond) {
    return json{{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "c1"}, {"namespace", ns}}},
                {"status",
                 {{"devices", json::array({{{"driver", kDriverName},
                                            {"pool", node},
                                            {"device", "gpu-0"},
                                            {"conditions", json::array({cond})}}})}}}};
  };
  PatchOptions apply;
  apply.subresource = "status";
  apply.field_manager = kDriverName;

  SECTION("as the admin: apply, a conflicting manager, force") {
    absl::StatusOr<json> applied =
        admin->Patch(kResourceClaims, ns, "c1", PatchType::kApply, apply_body(condition), apply);
    INFO(applied.status().ToString());
    REQUIRE(applied.ok());
    CHECK((*applied)["status"]["devices"][0]["conditions"][0]["reason"] == "Prepared");
    CHECK((*applied)["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0");
    bool managed = false;
    for (const json& entry : (*applied)["metadata"]["managedFields"]) {
      if (entry["manager"] == kDriverName && entry["operation"] == "Apply" && entry["subresource"] == "status") {
        managed = true;
      }
    }
    CHECK(managed);

    // Another manager setting the same field differently conflicts.
    json other = condition;
    other["status"] = "False";
    PatchOptions rival = apply;
    rival.field_manager = "someone-else";
    absl::StatusOr<json> conflict =
        admin->Patch(kResourceClaims, ns, "c1", PatchType::kApply, apply_body(other), rival);
    REQUIRE_FALSE(conflict.ok());
    INFO(conflict.status().ToString());
    CHECK(IsConflict(conflict.status()));
    CHECK(absl::StrContains(conflict.status().message(), "Apply failed with 1 conflict"));
    CHECK(absl::StrContains(conflict.status().message(), kDriverName));
    rival.force = true;
    absl::StatusOr<json> forced = admin->Patch(kResourceClaims, ns, "c1", PatchType::kApply, apply_body(other), rival);
    INFO(forced.status().ToString());
    REQUIRE(forced.ok());
    CHECK((*forced)["status"]["devices"][0]["conditions"][0]["status"] == "False");

    // The typed status update keeps what the model does not know.
    absl::StatusOr<ResourceClaim> claim = admin->GetResourceClaim(ns, "c1");
    REQUIRE(claim.ok());
    claim->status.devices.at(0).conditions.at(0).status = "True";
    absl::StatusOr<ResourceClaim> written = admin->UpdateResourceClaimStatus(*claim);
    INFO(written.status().ToString());
    REQUIRE(written.ok());
    CHECK(written->status.devices.at(0).conditions.at(0).status == "True");
    CHECK(written->status.allocation->devices.results.at(0).device == "gpu-0");
    // A stale resourceVersion is a conflict.
    absl::StatusOr<ResourceClaim> stale = admin->UpdateResourceClaimStatus(*claim);
    REQUIRE_FALSE(stale.ok());
    CHECK(IsConflict(stale.status()));
  }

  SECTION("as the driver: resourceclaims/status is not enough, resourceclaims/driver is") {
    Grant(*admin, ns,
          json::array({{{"apiGroups", json::array({"resource.k8s.io"})},
                        {"resources", json::array({"resourceclaims"})},
                        {"verbs", json::array({"get", "list", "watch"})}},
                       {{"apiGroups", json::array({"resource.k8s.io"})},
                        {"resources", json::array({"resourceclaims/status"})},
                        {"verbs", json::array({"patch", "update"})}}}),
          [&] { return driver->Get(kResourceClaims, ns, "c1").ok(); });
    absl::StatusOr<json> refused =
        driver->Patch(kResourceClaims, ns, "c1", PatchType::kApply, apply_body(condition), apply);
    REQUIRE_FALSE(refused.ok());
    INFO(refused.status().ToString());
    // DRAResourceClaimGranularStatusAuthorization (beta, on in 1.37): status.devices
    // needs a per-driver verb on the synthetic resourceclaims/driver subresource.
    CHECK(absl::StrContains(refused.status().message(),
                            "changing status.devices requires resource=\"resourceclaims/driver\""));
    CHECK(absl::StrContains(refused.status().message(), "verb=\"[arbitrary-node:patch]\""));
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);  // 422, a field error

    Grant(
        *admin, ns,
        json::array({{{"apiGroups", json::array({"resource.k8s.io"})},
                      {"resources", json::array({"resourceclaims/driver"})},
                      {"resourceNames", json::array({kDriverName})},
                      {"verbs", json::array({"arbitrary-node:patch", "arbitrary-node:update"})}}}),
        [&] { return driver->Patch(kResourceClaims, ns, "c1", PatchType::kApply, apply_body(condition), apply).ok(); });
    absl::StatusOr<json> got = driver->Get(kResourceClaims, ns, "c1");
    REQUIRE(got.ok());
    CHECK((*got)["status"]["devices"][0]["conditions"][0]["reason"] == "Prepared");
    // The driver may not touch the allocation (resourceclaims/binding).
    absl::StatusOr<json> rebind = driver->Patch(kResourceClaims, ns, "c1", PatchType::kMerge,
                                                json{{"status", {{"allocation", nullptr}}}}, status);
    REQUIRE_FALSE(rebind.ok());
    INFO(rebind.status().ToString());
    CHECK(absl::StrContains(rebind.status().message(), "resourceclaims/binding"));
  }
}

TEST_CASE("TLS: the server's CA is trusted, anything else is refused", "[e2e][tls]") {
  const std::string dir = ClusterDir();
  ClientConfig config = AdminConfig();
  config.max_retries = 0;
  REQUIRE(config.ca_file == dir + "/pki/ca.crt");

  SECTION("the cluster CA, as a file and as data") {
    CHECK(MakeClient(config)->List(kResourceSlices, "", OnePage()).ok());
    config.ca_file.clear();
    config.ca_data = ReadFile(dir + "/pki/ca.crt");
    CHECK(MakeClient(config)->List(kResourceSlices, "", OnePage()).ok());
  }
  SECTION("an unrelated CA") {
    config.ca_file = dir + "/pki/other-ca.crt";
    absl::StatusOr<ListResult> got = MakeClient(config)->List(kResourceSlices, "", OnePage());
    REQUIRE_FALSE(got.ok());
    INFO(got.status().ToString());
    CHECK(got.status().code() == absl::StatusCode::kUnavailable);
    CHECK(absl::StrContains(got.status().message(), "TLS verification of the API server's certificate failed"));
    CHECK(absl::StrContains(got.status().message(), "other-ca.crt"));
    CHECK_FALSE(absl::StrContains(got.status().message(), config.bearer_token));
  }
  SECTION("the system trust store does not know the cluster CA") {
    config.ca_file.clear();
    absl::StatusOr<ListResult> got = MakeClient(config)->List(kResourceSlices, "", OnePage());
    REQUIRE_FALSE(got.ok());
    INFO(got.status().ToString());
    CHECK(absl::StrContains(got.status().message(), "the system trust store"));
  }
  SECTION("tls_server_name: a name in the certificate, then one that is not") {
    config.tls_server_name = "kubernetes.default.svc";
    CHECK(MakeClient(config)->List(kResourceSlices, "", OnePage()).ok());
    config.tls_server_name = "not-in-the-cert.example";
    absl::Status wrong = MakeClient(config)->List(kResourceSlices, "", OnePage()).status();
    INFO(wrong.ToString());
    CHECK(absl::StrContains(wrong.message(), "TLS verification"));
  }
  SECTION("a client certificate instead of a token") {
    config.bearer_token.clear();
    config.client_cert_file = dir + "/pki/admin.crt";
    config.client_key_file = dir + "/pki/admin.key";
    CHECK(MakeClient(config)->List(kResourceSlices, "", OnePage()).ok());
  }
}

TEST_CASE("RBAC: a token without rights gets PermissionDenied naming the user, verb and resource", "[e2e][auth]") {
  auto admin = MakeClient(AdminConfig());
  auto nobody = MakeClient(UnprivilegedConfig());
  const std::string ns = CreateNamespace(*admin, "e2e-rbac");
  REQUIRE(admin->Create(kResourceClaims, ns, testing::NewClaimObject(ns, "c1")).ok());
  const std::string user = "User \"system:serviceaccount:dra-system:unprivileged\"";

  absl::Status get = nobody->Get(kResourceClaims, ns, "c1").status();
  INFO(get.ToString());
  CHECK(get.code() == absl::StatusCode::kPermissionDenied);
  CHECK(HttpStatusCode(get) == 403);
  CHECK(StatusReason(get) == "Forbidden");
  CHECK(absl::StartsWith(get.message(), absl::StrCat("resourceclaims.resource.k8s.io \"c1\" is forbidden: ", user,
                                                     " cannot get resource \"resourceclaims\" in API group "
                                                     "\"resource.k8s.io\" in the namespace \"",
                                                     ns, "\"")));

  absl::Status list = nobody->List(kResourceSlices, "").status();
  INFO(list.ToString());
  CHECK(list.code() == absl::StatusCode::kPermissionDenied);
  CHECK(absl::StrContains(list.message(), user + " cannot list resource \"resourceslices\" in API group "
                                                 "\"resource.k8s.io\" at the cluster scope"));

  absl::Status create = nobody->Create(kResourceSlices, "", NewSlice(UniqueName("denied"), "p", "denied")).status();
  INFO(create.ToString());
  CHECK(create.code() == absl::StatusCode::kPermissionDenied);
  CHECK(absl::StrContains(create.message(), user + " cannot create resource \"resourceslices\""));

  PatchOptions status;
  status.subresource = "status";
  absl::Status patch =
      nobody->Patch(kResourceClaims, ns, "c1", PatchType::kMerge, json{{"status", json::object()}}, status).status();
  INFO(patch.ToString());
  CHECK(patch.code() == absl::StatusCode::kPermissionDenied);
  CHECK(absl::StrContains(patch.message(), user + " cannot patch resource \"resourceclaims/status\""));

  const auto ignore = [](const WatchEvent&) {};
  absl::Status watch = nobody->RunWatch(kResourceClaims, ns, WatchOptions{}, ignore, WatchStop());
  INFO(watch.ToString());
  CHECK(watch.code() == absl::StatusCode::kPermissionDenied);
  CHECK(absl::StrContains(watch.message(), user + " cannot watch resource \"resourceclaims\""));

  // An unknown token is 401, and the token never shows in the message.
  ClientConfig bad = UnprivilegedConfig();
  bad.bearer_token = "not-a-known-token";
  absl::Status unauthenticated = MakeClient(bad)->Get(kResourceClaims, ns, "c1").status();
  INFO(unauthenticated.ToString());
  CHECK(unauthenticated.code() == absl::StatusCode::kUnauthenticated);
  CHECK(absl::StartsWith(unauthenticated.message(), "Unauthorized"));
  CHECK_FALSE(absl::StrContains(unauthenticated.message(), "not-a-known-token"));
}

TEST_CASE("nodeAllocatableResources: the shape v1.37 stores, and what it asks of the node", "[e2e][slice]") {
  auto admin = MakeClient(AdminConfig());
  const std::string run = UniqueName("nar");
  const std::string node = "node-" + run;
  json slice = NewSlice(run, run, run, 3);
  json& devices = slice["spec"]["devices"];
  devices[0]["nodeAllocatableResources"] = {
      {"cpu", {{"mapping", {{"capacityKey", "memory"}, {"capacityMultiplier", "2"}}}}},
      {"memory", {{"overhead", {{"perPod", "1Gi"}, {"perContainer", "100Mi"}}}}}};
  devices[1]["nodeAllocatableResources"] = {{"cpu", {{"mapping", {{"deviceMultiplier", "8"}}}}}};
  // The 1.36 / 1.37.0-beta.0 shape.
  devices[2]["nodeAllocatableResourceMappings"] = {{"cpu", {{"allocationMultiplier", "8"}}}};

  // The NodeDeclaredFeatures admission plugin wants the node to exist and to
  // declare the feature (the kubelet does that) before a slice may map node
  // allocatable resources on it.
  absl::StatusOr<json> refused = admin->Create(kResourceSlices, "", slice);
  REQUIRE_FALSE(refused.ok());
  INFO(refused.status().ToString());
  CHECK(refused.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK(absl::StrContains(refused.status().message(), "node \"" + node + "\" not found for device \"gpu-0\""));

  REQUIRE(admin->Create(kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node}}}}).ok());
  // (The plugin reads nodes from an informer: wait until it has this one.)
  CHECK(Eventually([&] {
    refused = admin->Create(kResourceSlices, "", slice);
    return !refused.ok() &&
           absl::StrContains(refused.status().message(),
                             "node \"" + node + "\" does not support DRANodeAllocatableResources feature");
  }));

  PatchOptions status;
  status.subresource = "status";
  REQUIRE(admin
              ->Patch(kNodes, "", node, PatchType::kMerge,
                      json{{"status", {{"declaredFeatures", json::array({"DRANodeAllocatableResources"})}}}}, status)
              .ok());
  absl::StatusOr<json> created;
  const bool stored_ok = Eventually([&] {
    created = admin->Create(kResourceSlices, "", slice);
    return created.ok();
  });
  INFO(created.status().ToString());
  REQUIRE(stored_ok);
  const json& stored = (*created)["spec"]["devices"];
  CHECK(stored[0]["nodeAllocatableResources"] == devices[0]["nodeAllocatableResources"]);
  CHECK(stored[1]["nodeAllocatableResources"] == devices[1]["nodeAllocatableResources"]);
  // The old shape is an unknown field: dropped (with a warning header).
  CHECK_FALSE(stored[2].contains("nodeAllocatableResourceMappings"));
  CHECK_FALSE(stored[2].contains("nodeAllocatableResources"));

  // The typed codec reads it back and writes the same JSON.
  absl::StatusOr<ResourceSlice> typed = ResourceSliceFromJson(*created);
  INFO(typed.status().ToString());
  REQUIRE(typed.ok());
  const NodeAllocatableResource& cpu = typed->spec.devices.at(0).node_allocatable_resources.at("cpu");
  REQUIRE(cpu.mapping.has_value());
  CHECK(cpu.mapping->capacity_key == "memory");
  CHECK(cpu.mapping->capacity_multiplier->ToString() == "2");
  CHECK(ToJson(*typed)["spec"]["devices"] == stored);

  REQUIRE(admin->Delete(kResourceSlices, "", run).ok());
  REQUIRE(admin->Delete(kNodes, "", node).ok());
}

}  // namespace
}  // namespace dra::k8s
