// dra::resourceslice::Publisher against the fake API server
// (tests/support/fakeapiserver) over HTTPS: first publish, identical
// republish (0 writes), one device changed (1 write), growth past a slice
// boundary (generation bump), pool removal, drift (a slice deleted, edited,
// all wiped as the kubelet does), dropped fields (one error, no loop),
// conflicts, a server that fails and recovers, an invalid pool (no request),
// owner references, names and order, and every device field carried intact.
//
// Nothing sleeps to wait: tests poll the publisher's Idle() and the fake's
// request counters and objects.
#include "dra/resourceslice/publisher.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_slice_json.h"
#include "dra/resourceslice/split.h"
#include "support/fake_apiserver.h"
#include "support/poll.h"
#include "support/published_devices.h"

namespace dra::resourceslice {
namespace {

using dra::testing::DeviceNames;
using dra::testing::FakeApiServer;
using dra::testing::PollUntil;
using nlohmann::json;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kNode[] = "node-1";

// Polls `condition`, which sends requests, at most every 20 ms.
bool Eventually(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(20)) {
  return PollUntil(condition, timeout, absl::Milliseconds(20));
}

// A fake API server with a Node, an admin client for the tests' own requests,
// and a publisher for node-1 whose errors are collected.
class Harness {
 public:
  explicit Harness(Options options = DefaultOptions()) {
    FakeApiServer::Options server_options;
    server_options.extra_args = {"--quiet"};
    absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(server_options);
    INFO(server.status().ToString());
    REQUIRE(server.ok());
    server_ = *std::move(server);
    admin_ = MakeClient();
    absl::StatusOr<json> node =
        admin_->Create(k8s::kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kNode}}}});
    REQUIRE(node.ok());
    node_uid_ = (*node)["metadata"]["uid"];
    StartPublisher(std::move(options));
  }

  static Options DefaultOptions() {
    Options options;
    options.driver_name = kDriver;
    options.node_name = kNode;
    options.drift_repair_delay = absl::Milliseconds(50);
    options.backoff_initial = absl::Milliseconds(20);
    options.backoff_max = absl::Milliseconds(200);
    return options;
  }

  void StartPublisher(Options options) {
    auto on_error = [this](const absl::Status& s, std::string_view) {
      std::lock_guard<std::mutex> lock(mu_);
      errors_.push_back(s);
    };
    auto publisher = Publisher::Start(MakeClient(), std::move(options), on_error);
    INFO(publisher.status().ToString());
    REQUIRE(publisher.ok());
    publisher_ = *std::move(publisher);
  }

  std::shared_ptr<k8s::Client> MakeClient() const {
    k8s::ClientConfig config;
    config.server = server_->url();
    config.ca_file = server_->ca_file();
    config.bearer_token = server_->admin_token();
    config.qps = 0;
    config.max_retries = 0;  // the publisher's own retries are under test
    config.timeout = absl::Seconds(10);
    config.protobuf = false;  // the fake speaks JSON only: its request counts stay exact
    absl::StatusOr<std::shared_ptr<k8s::Client>> client = k8s::Client::Create(config);
    REQUIRE(client.ok());
    return *client;
  }

  Publisher& publisher() { return *publisher_; }
  void StopPublisher() { publisher_.reset(); }
  k8s::Client& admin() { return *admin_; }
  FakeApiServer& server() { return *server_; }
  const std::string& node_uid() const { return node_uid_; }

  // Update and wait until the publisher has nothing left to do.
  void Publish(const DriverResources& resources) {
    publisher_->Update(resources);
    WaitIdle();
  }
  void WaitIdle() {
    REQUIRE(PollUntil([&] { return publisher_->Idle(); }, absl::Seconds(20)));
  }

  std::vector<absl::Status> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }
  void ClearErrors() {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.clear();
  }

  // This driver's slices on the server, by name (= slice order).
  std::vector<k8s::ResourceSlice> Slices() {
    return testing::ListSlices(*admin_, absl::StrCat("spec.driver=", kDriver));
  }

  json Counts() {
    absl::StatusOr<std::string> body = server_->Admin("GET", "/fake/requests");
    REQUIRE(body.ok());
    return json::parse(*body)["counts"];
  }
  int Count(const std::string& key) { return Counts().value(key, 0); }
  // Creates, updates, patches and deletes of ResourceSlices.
  int Writes() {
    json counts = Counts();
    return counts.value("CREATE resourceslices", 0) + counts.value("UPDATE resourceslices", 0) +
           counts.value("PATCH resourceslices", 0) + counts.value("DELETE resourceslices", 0) +
           counts.value("DELETECOLLECTION resourceslices", 0);
  }
  void ResetCounts() { REQUIRE(server_->Admin("POST", "/fake/reset", "{}").ok()); }

  void Fail(const std::string& verb, int status, int count) {
    json rule = {
        {"verb", verb}, {"resource", verb.empty() ? "" : "resourceslices"}, {"status", status}, {"count", count}};
    REQUIRE(server_->Admin("POST", "/fake/fail", rule.dump()).ok());
  }

 private:
  std::unique_ptr<FakeApiServer> server_;
  std::shared_ptr<k8s::Client> admin_;
  std::string node_uid_;
  std::unique_ptr<Publisher> publisher_;
  std::mutex mu_;
  std::vector<absl::Status> errors_;
};

TEST_CASE("first publish: names in slice order, owner reference, pool fields, then 0 writes to republish",
          "[publisher]") {
  Harness h;
  const DriverResources resources = testing::GpuPool(kNode, 200);  // 128 + 72
  h.Publish(resources);

  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);
  CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(kNode)));
  for (size_t i = 0; i < slices.size(); ++i) {
    const k8s::ResourceSlice& slice = slices[i];
    INFO(slice.metadata.name);
    CHECK(absl::StartsWith(slice.metadata.name, absl::StrCat("0000", i, "-gpu.example.com-node-1-")));
    CHECK(slice.spec.driver == kDriver);
    CHECK(slice.spec.node_name == kNode);
    CHECK(slice.spec.pool.name == kNode);
    CHECK(slice.spec.pool.generation == 1);
    CHECK(slice.spec.pool.resource_slice_count == 2);
    REQUIRE(slice.metadata.owner_references.size() == 1);
    const k8s::OwnerReference& owner = slice.metadata.owner_references[0];
    CHECK(owner.api_version == "v1");
    CHECK(owner.kind == "Node");
    CHECK(owner.name == kNode);
    CHECK(owner.uid == h.node_uid());
    CHECK(owner.controller == true);
  }
  CHECK(h.Count("CREATE resourceslices") == 2);
  CHECK(h.Count("GET nodes") == 1);  // the UID, looked up once
  CHECK(h.publisher().Stats().creates == 2);
  CHECK(h.errors().empty());

  h.ResetCounts();
  h.Publish(resources);
  h.Publish(resources);
  CHECK(h.Writes() == 0);
  CHECK(h.Count("GET nodes") == 0);
  CHECK(h.publisher().Stats().updates == 0);
  CHECK(h.errors().empty());
}

TEST_CASE("10000 devices: exactly ceil(10000/128) creates with writes in parallel, nothing else written",
          "[publisher]") {
  Harness h;
  h.Publish(testing::GpuPool(kNode, 10000));
  CHECK(h.Count("CREATE resourceslices") == 79);
  CHECK(h.Writes() == 79);
  CHECK(h.Slices().size() == 79);
  CHECK(h.publisher().Stats().creates == 79);
  CHECK(h.errors().empty());
}

TEST_CASE("one device changed is one update, a device past the slice boundary bumps the generation", "[publisher]") {
  Harness h;
  DriverResources resources = testing::GpuPool(kNode, 200);
  h.Publish(resources);

  h.ResetCounts();
  resources.pools[kNode].slices[1].devices[5].attributes["model"].string_value = "h100";
  h.Publish(resources);
  CHECK(h.Count("UPDATE resourceslices") == 1);
  CHECK(h.Writes() == 1);
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);
  CHECK(slices[1].spec.devices[5].attributes.at("model").string_value == "h100");
  CHECK(slices[0].spec.pool.generation == 1);
  CHECK(slices[1].spec.pool.generation == 1);

  h.ResetCounts();
  resources = testing::GpuPool(kNode, 257);  // 128 + 128 + 1
  resources.pools[kNode].slices[1].devices[5].attributes["model"].string_value = "h100";
  h.Publish(resources);
  CHECK(h.Count("UPDATE resourceslices") == 2);
  CHECK(h.Count("CREATE resourceslices") == 1);
  CHECK(h.Writes() == 3);
  slices = h.Slices();
  REQUIRE(slices.size() == 3);
  CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(kNode)));
  for (const auto& slice : slices) {
    CHECK(slice.spec.pool.generation == 2);
    CHECK(slice.spec.pool.resource_slice_count == 3);
  }
  CHECK(absl::StartsWith(slices[2].metadata.name, "00002-"));

  // Shrinking: obsolete slices go first, then the one left is updated in
  // place (one update: the generation stays, as in the Go controller).
  h.ResetCounts();
  resources = testing::GpuPool(kNode, 100);
  h.Publish(resources);
  CHECK(h.Count("DELETE resourceslices") == 2);
  CHECK(h.Count("UPDATE resourceslices") == 1);
  slices = h.Slices();
  REQUIRE(slices.size() == 1);
  CHECK(slices[0].spec.pool.generation == 2);
  CHECK(slices[0].spec.pool.resource_slice_count == 1);
  CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(kNode)));
  CHECK(h.errors().empty());
}

TEST_CASE("a pool floor generation, a removed pool, and stop without removal", "[publisher]") {
  Harness h;
  DriverResources resources = testing::GpuPool(kNode, 10);
  resources.pools[kNode].generation = 7;
  h.Publish(resources);
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 1);
  CHECK(slices[0].spec.pool.generation == 7);

  h.ResetCounts();
  h.Publish(DriverResources());
  CHECK(h.Count("DELETE resourceslices") == 1);
  CHECK(h.Slices().empty());
  CHECK(h.publisher().Stats().deletes == 1);

  h.Publish(testing::GpuPool(kNode, 10));
  REQUIRE(h.Slices().size() == 1);
  CHECK(h.Slices()[0].spec.pool.generation == 8);  // never back
  h.StopPublisher();
  CHECK(h.Slices().size() == 1);  // the kubelet removes slices, not Stop()
}

TEST_CASE("remove_on_stop deletes every slice of the publisher", "[publisher]") {
  Options options = Harness::DefaultOptions();
  options.remove_on_stop = true;
  Harness h(options);
  DriverResources resources = testing::GpuPool(kNode, 300);
  resources.pools["net-pool"].nodes = NodeSelection::kAllNodes;
  resources.pools["net-pool"].slices = SplitIntoSlices({testing::Gpu(1000)});
  h.Publish(resources);
  REQUIRE(h.Slices().size() == 4);
  h.StopPublisher();
  CHECK(h.Slices().empty());
}

TEST_CASE("drift: a slice deleted or edited by someone else is restored, as is a wiped node", "[publisher]") {
  Harness h;
  const DriverResources resources = testing::GpuPool(kNode, 200);
  h.Publish(resources);
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);

  SECTION("deleted") {
    REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", slices[1].metadata.name).ok());
    REQUIRE(Eventually([&] {
      auto now = h.Slices();
      // Recreated at the same generation: the other slice is unchanged.
      return now.size() == 2 && absl::StartsWith(now[1].metadata.name, "00001-") && now[0].spec.pool.generation == 1 &&
             now[1].spec.pool.generation == 1;
    }));
    CHECK(DeviceNames(h.Slices()) == DeviceNames(resources.pools.at(kNode)));
  }
  SECTION("edited") {
    absl::StatusOr<json> stored = h.admin().Get(k8s::kResourceSlices, "", slices[0].metadata.name);
    REQUIRE(stored.ok());
    (*stored)["spec"]["devices"][3]["attributes"]["model"]["string"] = "fake";
    (*stored)["spec"]["devices"].erase(7);
    REQUIRE(h.admin().Update(k8s::kResourceSlices, "", *stored).ok());
    REQUIRE(Eventually([&] {
      return DeviceNames(h.Slices()) == DeviceNames(resources.pools.at(kNode)) &&
             h.Slices()[0].spec.devices[3].attributes.at("model").string_value == "a100";
    }));
    CHECK(h.Slices()[0].spec.pool.generation == 1);  // one slice rewritten in place
  }
  SECTION("deleted and at once created again under its name by someone else, with other content") {
    // What client-go's mutation cache could hide (kubernetes#141736): the
    // object of that name is not the one the publisher wrote.
    absl::StatusOr<json> stored = h.admin().Get(k8s::kResourceSlices, "", slices[0].metadata.name);
    REQUIRE(stored.ok());
    REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", slices[0].metadata.name).ok());
    json other = *stored;
    for (const char* key : {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"}) {
      other["metadata"].erase(key);
    }
    other["spec"]["devices"][3]["attributes"]["model"]["string"] = "fake";
    absl::StatusOr<json> created = h.admin().Create(k8s::kResourceSlices, "", other);
    // The publisher may have written it again first: then it is edited.
    if (absl::IsAlreadyExists(created.status())) {
      absl::StatusOr<json> rewritten = h.admin().Get(k8s::kResourceSlices, "", slices[0].metadata.name);
      REQUIRE(rewritten.ok());
      (*rewritten)["spec"]["devices"][3]["attributes"]["model"]["string"] = "fake";
      created = h.admin().Update(k8s::kResourceSlices, "", *rewritten);
    }
    REQUIRE(created.ok());
    CHECK((*created)["metadata"]["uid"] != (*stored)["metadata"]["uid"]);
    REQUIRE(Eventually([&] {
      const std::vector<k8s::ResourceSlice> now = h.Slices();
      return DeviceNames(now) == DeviceNames(resources.pools.at(kNode)) &&
             now[0].spec.devices[3].attributes.at("model").string_value == "a100";
    }));
  }
  SECTION("all wiped, as the kubelet does when it starts") {
    REQUIRE(h.server()
                .Admin("DELETE",
                       absl::StrCat("/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D", kNode))
                .ok());
    REQUIRE(Eventually([&] { return h.Slices().size() == 2; }));
    h.WaitIdle();
    slices = h.Slices();
    CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(kNode)));
    // The two deletions reach the publisher as two watch events. Within the
    // drift delay of each other the pool is written anew at the next
    // generation; further apart (seen under ASan on a loaded machine) each
    // slice is recreated as it goes. Either way the slices agree.
    CHECK(slices[0].spec.pool.generation == slices[1].spec.pool.generation);
  }
  h.WaitIdle();
  h.ResetCounts();
  h.Publish(resources);
  CHECK(h.Writes() == 0);
  CHECK(h.errors().empty());
}

TEST_CASE(
    "a slice deleted by someone else before its create was answered: the watch's deletion wins over the response, "
    "and the slice is created again",
    "[publisher]") {
  Harness h;
  const DriverResources resources = testing::GpuPool(kNode, 8);
  h.Publish(resources);
  const std::string first = h.Slices().at(0).metadata.name;
  const int64_t events = h.publisher().Stats().watch_events;

  REQUIRE(h.server().Admin("POST", "/fake/hold", R"({"verb":"CREATE","resource":"resourceslices"})").ok());
  REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", first).ok());
  // The publisher creates the slice again; the server stores it and holds
  // the answer while the test deletes the new slice too.
  REQUIRE(Eventually([&] { return json::parse(*h.server().Admin("GET", "/fake/requests"))["held"] == 1; }));
  const std::vector<k8s::ResourceSlice> held = h.Slices();
  REQUIRE(held.size() == 1);
  const std::string second = held[0].metadata.name;
  REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", second).ok());
  // Deleted (the first), added and deleted (the second): the publisher has
  // seen the second slice go before the create's answer names it.
  REQUIRE(Eventually([&] { return h.publisher().Stats().watch_events >= events + 3; }));
  REQUIRE(h.server().Admin("DELETE", "/fake/hold").ok());

  REQUIRE(Eventually([&] {
    const std::vector<k8s::ResourceSlice> now = h.Slices();
    return now.size() == 1 && now[0].metadata.name != first && now[0].metadata.name != second;
  }));
  h.WaitIdle();
  CHECK(DeviceNames(h.Slices()) == DeviceNames(resources.pools.at(kNode)));
  CHECK(h.errors().empty());
}

TEST_CASE("a watch that ends or fails is resumed from its version, only 410 lists, drift seen late is repaired",
          "[publisher]") {
  Harness h;
  const DriverResources resources = testing::GpuPool(kNode, 200);
  h.Publish(resources);

  h.ResetCounts();
  REQUIRE(h.server().Admin("POST", "/fake/closewatches").ok());
  REQUIRE(Eventually([&] { return h.Count("WATCH resourceslices") == 1; }));
  CHECK(h.Count("LIST resourceslices") == 0);
  CHECK(h.publisher().Stats().lists == 1);
  REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", h.Slices()[0].metadata.name).ok());
  REQUIRE(Eventually([&] { return h.Slices().size() == 2; }));

  h.WaitIdle();
  h.ResetCounts();
  h.Fail("WATCH", 410, 1);
  REQUIRE(h.server().Admin("POST", "/fake/closewatches").ok());
  // The watch that got 410, then the list: a watch-list stream.
  REQUIRE(Eventually([&] { return h.Count("WATCH resourceslices") == 2; }));
  CHECK(h.Count("LIST resourceslices") == 0);
  REQUIRE(Eventually([&] { return h.publisher().Stats().lists == 2; }));

  // Watches keep failing (reported, retried with backoff from the same
  // version); a slice deleted meanwhile is seen once a watch gets through,
  // from the history, and restored. No list: the version is not gone.
  h.Fail("WATCH", 503, 1000000);
  REQUIRE(h.server().Admin("POST", "/fake/closewatches").ok());
  REQUIRE(Eventually([&] { return h.Count("WATCH resourceslices") >= 4; }));
  REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", h.Slices()[1].metadata.name).ok());
  CHECK_FALSE(h.errors().empty());  // the failed watches were reported
  h.ResetCounts();                  // the lists above were the test's
  const int64_t creates = h.publisher().Stats().creates;
  REQUIRE(h.server().Admin("DELETE", "/fake/fail").ok());
  REQUIRE(Eventually([&] { return h.publisher().Stats().creates == creates + 1; }));
  h.WaitIdle();
  CHECK(h.Count("LIST resourceslices") == 0);
  CHECK(DeviceNames(h.Slices()) == DeviceNames(resources.pools.at(kNode)));
}

TEST_CASE("dropped fields: one error naming the fields and gates, no update loop", "[publisher]") {
  Harness h;
  REQUIRE(h.server()
              .Admin("POST", "/fake/config",
                     R"({"dropFields":["spec.devices[].taints","spec.devices[].bindingConditions"]})")
              .ok());
  DriverResources resources = testing::GpuPool(kNode, 3);
  k8s::Device& device = resources.pools[kNode].slices[0].devices[1];
  device.taints.push_back({});
  device.taints[0].key = "example.com/unhealthy";
  device.taints[0].effect = "NoSchedule";
  device.binding_conditions = {"example.com/attached"};
  device.binding_failure_conditions = {"example.com/failed"};
  h.Publish(resources);

  std::vector<absl::Status> errors = h.errors();
  REQUIRE(errors.size() == 1);
  INFO(errors[0].ToString());
  CHECK(errors[0].code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(errors[0].message(), "pool \"node-1\", slice 0"));
  CHECK(absl::StrContains(errors[0].message(), "the API server (v1.37.0-fakeapiserver) stored less than was sent"));
  CHECK(absl::StrContains(errors[0].message(), "spec.devices[].taints"));
  CHECK(absl::StrContains(errors[0].message(), "spec.devices[].bindingConditions"));
  CHECK(absl::StrContains(errors[0].message(), "DRADeviceTaints, DRADeviceBindingConditions"));

  // Republishing, and the watch events it would cause, send nothing more.
  h.ResetCounts();
  for (int i = 0; i < 3; ++i) h.Publish(resources);
  CHECK(h.Writes() == 0);
  CHECK(h.errors().size() == 1);

  // A real change is written once (and the server drops the same again).
  resources.pools[kNode].slices[0].devices[0].attributes["model"].string_value = "h100";
  h.Publish(resources);
  CHECK(h.Writes() == 1);
  CHECK(h.Slices()[0].spec.devices[0].attributes.at("model").string_value == "h100");
}

// Which shape a pool's node allocatable resources are written in is the
// server's business (tests/e2e: what 1.36 and 1.37 store); here, what the
// 1.36 shape cannot say, and the option that overrides the server's version.
TEST_CASE("node allocatable resources on a 1.36 server: what its shape cannot say fails the pool, naming the device",
          "[publisher]") {
  k8s::Device device = testing::Gpu(0);
  device.node_allocatable_resources["cpu"].mapping.emplace().device_multiplier = *k8s::Quantity::Parse("8");
  device.node_allocatable_resources["memory"].overhead.emplace().per_pod = *k8s::Quantity::Parse("64Mi");
  DriverResources resources;
  resources.pools[kNode].slices = SplitIntoSlices({device, testing::Gpu(1)});

  SECTION("by the server's version") {
    Harness h;
    REQUIRE(h.server().Admin("POST", "/fake/config", R"({"gitVersion":"v1.36.3"})").ok());
    h.Publish(resources);
    std::vector<absl::Status> errors = h.errors();
    REQUIRE(errors.size() == 1);
    INFO(errors[0].ToString());
    CHECK(errors[0].code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(errors[0].message(),
                            "pool \"node-1\", slice 0: spec.devices[0] (device \"gpu-0\"): "
                            "nodeAllocatableResources[memory].overhead: cannot be expressed"));
    CHECK(h.Writes() == 0);
    // Not retried until the pool changes.
    h.Publish(resources);
    CHECK(h.errors().size() == 1);
    CHECK(h.Writes() == 0);
  }
  SECTION("the option overrides it") {
    Options options = Harness::DefaultOptions();
    options.node_allocatable_shape = k8s::NodeAllocatableShape::kResources;
    Harness h(options);
    REQUIRE(h.server().Admin("POST", "/fake/config", R"({"gitVersion":"v1.36.3"})").ok());
    h.Publish(resources);
    CHECK(h.errors().empty());
    CHECK(h.Writes() == 1);
    CHECK(h.Slices().at(0).spec.devices.at(0).node_allocatable_resources == device.node_allocatable_resources);
  }
}

TEST_CASE("a conflict is retried after a fresh read", "[publisher]") {
  Harness h;
  DriverResources resources = testing::GpuPool(kNode, 10);
  h.Publish(resources);
  h.ResetCounts();
  h.Fail("UPDATE", 409, 1);
  resources.pools[kNode].slices[0].devices[0].attributes["model"].string_value = "h100";
  h.Publish(resources);
  CHECK(h.Count("UPDATE resourceslices") == 2);
  CHECK(h.Count("GET resourceslices") == 1);
  REQUIRE(h.errors().size() == 1);
  CHECK(k8s::IsConflict(h.errors()[0]));
  CHECK(h.Slices()[0].spec.devices[0].attributes.at("model").string_value == "h100");
  CHECK(h.publisher().Stats().errors == 1);
}

TEST_CASE("server down, then up: converges with nothing lost", "[publisher]") {
  Harness h;
  h.Publish(testing::GpuPool(kNode, 130));
  h.Fail("", 503, 1000000);  // everything fails
  DriverResources resources = testing::GpuPool(kNode, 300);
  h.publisher().Update(resources);
  REQUIRE(PollUntil([&] { return h.errors().size() >= 3; }));
  CHECK_FALSE(h.publisher().Idle());
  REQUIRE(h.server().Admin("DELETE", "/fake/fail").ok());
  h.WaitIdle();
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(kNode)));
  for (const auto& slice : slices) {
    CHECK(slice.spec.pool.generation == 2);
    CHECK(slice.spec.pool.resource_slice_count == 3);
  }
  for (const absl::Status& error : h.errors()) CHECK(error.code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("an invalid pool is reported with field and rule, never sent, not retried until changed", "[publisher]") {
  Harness h;
  CHECK_FALSE(h.publisher().Idle());  // nothing is synced before the first Update()
  h.publisher().Update(testing::GpuPool(kNode, 1));
  h.WaitIdle();
  h.ResetCounts();
  h.ClearErrors();
  DriverResources resources = testing::GpuPool(kNode, 3);
  resources.pools[kNode].slices[0].devices[2].name = "GPU 2";
  h.Publish(resources);
  std::vector<absl::Status> errors = h.errors();
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(errors[0].message(),
                          "pool \"node-1\", slice 0 is invalid: spec.devices[2].name: Invalid value: \"GPU 2\""));
  CHECK(h.Writes() == 0);

  h.Publish(resources);
  CHECK(h.errors().size() == 1);
  CHECK(h.Writes() == 0);

  resources.pools[kNode].slices[0].devices[2].name = "gpu-2";
  h.Publish(resources);
  CHECK(h.Slices()[0].spec.devices.size() == 3);
  CHECK(h.errors().size() == 1);
}

TEST_CASE("every device field is carried intact, and network pools use the pool name", "[publisher]") {
  Harness h;
  DriverResources resources;
  Pool& pool = resources.pools["fabric/rack-1"];
  pool.nodes = NodeSelection::kNodeSelector;
  k8s::NodeSelectorRequirement requirement;
  requirement.key = "rack";
  requirement.operator_ = "In";
  requirement.values = {"rack-1"};
  pool.node_selector.node_selector_terms.emplace_back().match_expressions.push_back(requirement);

  const k8s::CounterSet counters = testing::GpuMemoryCounters();
  const k8s::Device device = testing::DeviceWithEveryField();
  pool.slices = SplitIntoSlices({device}, {counters});
  REQUIRE(pool.slices.size() == 2);
  h.Publish(resources);
  INFO((h.errors().empty() ? std::string() : h.errors()[0].ToString()));
  REQUIRE(h.errors().empty());

  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);
  CHECK(absl::StartsWith(slices[0].metadata.name, "00000-gpu.example.com-fabric.rack-1-"));
  CHECK(slices[0].spec.shared_counters == pool.slices[0].shared_counters);
  const k8s::Device& stored = slices[1].spec.devices.at(0);
  REQUIRE(device.binds_to_node == true);
  REQUIRE(device.allow_multiple_allocations == true);
  testing::CheckStoredIntact(stored, device);
  for (const auto& slice : slices) {
    CHECK_FALSE(slice.spec.node_name.has_value());
    CHECK(slice.spec.node_selector == pool.node_selector);
    CHECK(slice.metadata.owner_references.empty());
  }
  h.ResetCounts();
  h.Publish(resources);
  CHECK(h.Writes() == 0);
  CHECK(h.Count("LIST resourceslices") == 0);
}

TEST_CASE(
    "reconcile_pool: only that pool is published and owned by the Node, deleted when missing (also after a "
    "restart), other pools reported and never touched",
    "[publisher]") {
  Harness h;
  // What someone else publishes: this node's pool and another network pool.
  DriverResources others = testing::GpuPool(kNode, 2);
  others.pools["net-b"].nodes = NodeSelection::kAllNodes;
  others.pools["net-b"].slices = SplitIntoSlices({testing::Gpu(2000)});
  h.Publish(others);
  REQUIRE(h.Slices().size() == 2);
  h.StopPublisher();

  Options options = Harness::DefaultOptions();
  options.reconcile_pool = "net-a";
  h.StartPublisher(options);
  DriverResources resources;
  resources.pools["net-a"].nodes = NodeSelection::kAllNodes;
  resources.pools["net-a"].slices = SplitIntoSlices({testing::Gpu(1000)});
  resources.pools["net-c"] = resources.pools["net-a"];
  h.Publish(resources);
  REQUIRE(h.errors().size() == 1);
  CHECK(h.errors()[0].message() == "found pool \"net-c\", but reconcile_pool only allows pool \"net-a\"");
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 3);
  const auto net_a = std::find_if(slices.begin(), slices.end(),
                                  [](const k8s::ResourceSlice& slice) { return slice.spec.pool.name == "net-a"; });
  REQUIRE(net_a != slices.end());
  CHECK(net_a->spec.all_nodes == true);
  CHECK_FALSE(net_a->spec.node_name.has_value());
  REQUIRE(net_a->metadata.owner_references.size() == 1);
  CHECK(net_a->metadata.owner_references[0].uid == h.node_uid());
  h.StopPublisher();

  // A later instance whose resources lack the pool deletes what the earlier
  // one left, and nothing else.
  h.StartPublisher(options);
  h.ClearErrors();
  h.Publish(DriverResources());
  slices = h.Slices();
  CHECK(slices.size() == 2);
  for (const k8s::ResourceSlice& slice : slices) CHECK(slice.spec.pool.name != "net-a");
  CHECK(h.errors().empty());

  // A pool of this node alone is not one to reconcile.
  DriverResources node_local;
  node_local.pools["net-a"].slices = SplitIntoSlices({testing::Gpu(1000)});
  h.Publish(node_local);
  REQUIRE(h.errors().size() == 1);
  CHECK(absl::StrContains(h.errors()[0].message(), "pool \"net-a\": nodes: Invalid value: kThisNode: reconcile_pool"));
  CHECK(h.Slices().size() == 2);
}

}  // namespace
}  // namespace dra::resourceslice
