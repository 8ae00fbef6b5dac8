// dra::resourceslice::Publisher against the real kube-apiserver (v1.37, all
// DRA gates on; see README.md), publishing as a driver service account with
// only the rights it needs: first publish with owner references and names in
// slice order, identical republish (0 writes), one device changed (1 write),
// growth past a slice boundary (generation bump), pool removal, drift (a
// slice deleted, edited, all wiped as the kubelet does), a field the server
// drops (one error, no loop; also on a private kube-apiserver with DRA gates
// off, where the error names them), an invalid pool (no request), and every device
// field (binding conditions, nodeAllocatableResources, counters, taints,
// capacity policies) stored intact.
//
// Each test has its own node name (and so its own slices); write counts come
// from the publisher's Stats, since the real server has no request counters.

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_slice_json.h"
#include "dra/resourceslice/publisher.h"
#include "dra/resourceslice/split.h"
#include "e2e/e2e_cluster.h"
#include "e2e/private_cluster.h"
#include "support/poll.h"
#include "support/published_devices.h"

namespace dra::resourceslice {
namespace {

using dra::testing::DeviceNames;
using e2e::Eventually;
using nlohmann::json;

constexpr char kIdentity[] = "gpu-driver";
constexpr char kDriver[] = "publisher.e2e.example.com";

// A Node of its own, the driver identity allowed to publish, and a publisher
// for that node running as the driver (its options as `configure` leaves
// them).
class Harness {
 public:
  explicit Harness(std::function<void(Options&)> configure = nullptr)
      : admin_(e2e::MakeClient(e2e::AdminConfig())), node_(e2e::UniqueName("pub-node")) {
    absl::StatusOr<json> node =
        admin_->Create(k8s::kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node_}}}});
    INFO(node.status().ToString());
    REQUIRE(node.ok());
    node_uid_ = (*node)["metadata"]["uid"];
    driver_ = e2e::MakeClient(e2e::DriverConfig(kIdentity));
    e2e::Grant(*admin_, e2e::DriverUser(kIdentity), "", e2e::SlicePublisherRules(),
               [&] { return driver_->Get(k8s::kNodes, "", node_).ok(); });
    Options options;
    options.driver_name = kDriver;
    options.node_name = node_;
    options.drift_repair_delay = absl::Milliseconds(100);
    options.backoff_initial = absl::Milliseconds(50);
    options.backoff_max = absl::Seconds(1);
    if (configure) configure(options);
    options_ = options;
    StartPublisher();
  }

  ~Harness() {
    publisher_.reset();
    for (const auto& slice : testing::ListSlices(*admin_, absl::StrCat("spec.driver=", kDriver))) {
      if (slice.spec.node_name == node_ || slice.spec.pool.name == options_.reconcile_pool) {
        (void)admin_->Delete(k8s::kResourceSlices, "", slice.metadata.name);
      }
    }
    (void)admin_->Delete(k8s::kNodes, "", node_);
  }

  // A new publisher with the same options, as after the driver's restart.
  void StartPublisher() {
    publisher_.reset();
    auto publisher = Publisher::Start(driver_, options_, [this](const absl::Status& s, std::string_view) {
      std::lock_guard<std::mutex> lock(mu_);
      errors_.push_back(s);
    });
    REQUIRE(publisher.ok());
    publisher_ = *std::move(publisher);
  }

  const std::string& node() const { return node_; }
  const std::string& node_uid() const { return node_uid_; }
  k8s::Client& admin() { return *admin_; }
  Publisher& publisher() { return *publisher_; }

  void Publish(const DriverResources& resources) {
    publisher_->Update(resources);
    WaitIdle();
  }
  void WaitIdle() {
    REQUIRE(dra::testing::PollUntil([&] { return publisher_->Idle(); }, absl::Seconds(30)));
  }
  int64_t Writes() const {
    PublisherStats stats = publisher_->Stats();
    return stats.creates + stats.updates + stats.deletes;
  }
  std::vector<absl::Status> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

  // What the kubelet does: the Node declares DRANodeAllocatableResources,
  // which 1.37's NodeDeclaredFeatures admission plugin wants before a slice
  // may map node allocatable resources on it.
  void DeclareNodeAllocatableResources() {
    k8s::PatchOptions status;
    status.subresource = "status";
    REQUIRE(admin_
                ->Patch(k8s::kNodes, "", node_, k8s::PatchType::kMerge,
                        json{{"status", {{"declaredFeatures", json::array({"DRANodeAllocatableResources"})}}}}, status)
                .ok());
  }

  // This node's slices of the driver, by name (= slice order).
  std::vector<k8s::ResourceSlice> Slices() {
    return testing::ListSlices(*admin_, absl::StrCat("spec.driver=", kDriver, ",spec.nodeName=", node_));
  }

 private:
  std::shared_ptr<k8s::Client> admin_;
  std::string node_;
  std::string node_uid_;
  std::shared_ptr<k8s::Client> driver_;
  Options options_;
  std::unique_ptr<Publisher> publisher_;
  std::mutex mu_;
  std::vector<absl::Status> errors_;
};

TEST_CASE("publish, republish (0 writes), one device (1 write), growth (generation bump), removal",
          "[e2e][publisher]") {
  Harness h;
  DriverResources resources = testing::GpuPool(h.node(), 200);
  h.Publish(resources);
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);
  CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(h.node())));
  for (size_t i = 0; i < slices.size(); ++i) {
    INFO(slices[i].metadata.name);
    CHECK(absl::StartsWith(slices[i].metadata.name, absl::StrCat("0000", i, "-", kDriver, "-")));
    CHECK(slices[i].spec.pool.generation == 1);
    CHECK(slices[i].spec.pool.resource_slice_count == 2);
    REQUIRE(slices[i].metadata.owner_references.size() == 1);
    CHECK(slices[i].metadata.owner_references[0].kind == "Node");
    CHECK(slices[i].metadata.owner_references[0].uid == h.node_uid());
    CHECK(slices[i].metadata.owner_references[0].controller == true);
  }
  CHECK(h.publisher().Stats().creates == 2);

  h.Publish(resources);
  CHECK(h.Writes() == 2);

  resources.pools[h.node()].slices[0].devices[9].attributes["model"].string_value = "h100";
  h.Publish(resources);
  CHECK(h.publisher().Stats().updates == 1);
  CHECK(h.Writes() == 3);
  CHECK(h.Slices()[0].spec.devices[9].attributes.at("model").string_value == "h100");
  CHECK(h.Slices()[0].spec.pool.generation == 1);

  resources = testing::GpuPool(h.node(), 300);
  h.Publish(resources);
  CHECK(h.Writes() == 3 + 3);  // two updates, one create
  slices = h.Slices();
  REQUIRE(slices.size() == 3);
  CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(h.node())));
  for (const auto& slice : slices) {
    CHECK(slice.spec.pool.generation == 2);
    CHECK(slice.spec.pool.resource_slice_count == 3);
  }

  h.Publish(DriverResources());
  CHECK(h.Slices().empty());
  CHECK(h.publisher().Stats().deletes == 3);
  CHECK(h.errors().empty());
}

TEST_CASE("drift: a slice deleted, edited, or all wiped by someone else is restored", "[e2e][publisher]") {
  Harness h;
  const DriverResources resources = testing::GpuPool(h.node(), 200);
  const auto expected = DeviceNames(resources.pools.at(h.node()));
  h.Publish(resources);
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);

  REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", slices[1].metadata.name).ok());
  // Recreated at the same generation: the other slice is there, unchanged.
  REQUIRE(Eventually([&] { return h.Slices().size() == 2 && h.Slices()[1].spec.pool.generation == 1; }));
  CHECK(DeviceNames(h.Slices()) == expected);

  absl::StatusOr<json> stored = h.admin().Get(k8s::kResourceSlices, "", h.Slices()[0].metadata.name);
  REQUIRE(stored.ok());
  (*stored)["spec"]["devices"][3]["attributes"]["model"]["string"] = "edited";
  REQUIRE(h.admin().Update(k8s::kResourceSlices, "", *stored).ok());
  REQUIRE(Eventually([&] { return h.Slices()[0].spec.devices[3].attributes.at("model").string_value == "a100"; }));

  // The kubelet deletes all of a node's slices when it starts (one delete
  // each here, so a repair may come between them: each slice recreated at
  // generation 1, or both at 2 when none is left).
  for (const auto& slice : h.Slices()) REQUIRE(h.admin().Delete(k8s::kResourceSlices, "", slice.metadata.name).ok());
  REQUIRE(Eventually([&] { return DeviceNames(h.Slices()) == expected; }));
  h.WaitIdle();
  slices = h.Slices();
  REQUIRE(slices.size() == 2);
  CHECK((slices[0].spec.pool.generation == 1 || slices[0].spec.pool.generation == 2));
  CHECK(slices[1].spec.pool.generation == slices[0].spec.pool.generation);

  const int64_t writes = h.Writes();
  h.Publish(resources);
  CHECK(h.Writes() == writes);
  CHECK(h.errors().empty());
}

TEST_CASE("a field the server drops: one error, no update loop", "[e2e][publisher]") {
  Harness h;
  DriverResources resources = testing::GpuPool(h.node(), 3);
  // A field this server does not know (as a gated field on a server with the
  // gate off): stored without it, with a Warning.
  resources.pools[h.node()].slices[0].devices[1].unknown_fields = {{"futureField", "x"}};
  h.Publish(resources);
  std::vector<absl::Status> errors = h.errors();
  REQUIRE(errors.size() == 1);
  INFO(errors[0].ToString());
  CHECK(errors[0].code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(errors[0].message(), "dropped spec.devices[].futureField"));

  const int64_t writes = h.Writes();
  CHECK(writes == 1);
  for (int i = 0; i < 3; ++i) h.Publish(resources);
  // A drift repair would be the same: the stored form is what was published.
  absl::StatusOr<json> stored = h.admin().Get(k8s::kResourceSlices, "", h.Slices()[0].metadata.name);
  REQUIRE(stored.ok());
  (*stored)["metadata"]["labels"] = {{"touched", "yes"}};
  REQUIRE(h.admin().Update(k8s::kResourceSlices, "", *stored).ok());
  h.Publish(resources);
  CHECK(h.Writes() == writes);
  CHECK(h.errors().size() == 1);
}

// The version matrix's check (scripts/test-matrix.sh): on a server older
// than the field, the field is dropped with one error naming it and the
// server's version, and the rest of the pool is published; on 1.37 (gate on)
// it is stored.
TEST_CASE("a field newer than the server: one error naming it and the server's version, the rest of the pool published",
          "[e2e][publisher][skew]") {
  Harness h;
  absl::StatusOr<std::string> version = h.admin().ServerVersion();
  REQUIRE(version.ok());
  const bool served = !absl::StartsWith(*version, "v1.35.") && !absl::StartsWith(*version, "v1.36.");
  DriverResources resources = testing::GpuPool(h.node(), 4);
  // KEP-5945, alpha in 1.37.
  resources.pools[h.node()].skip_node_operations = {"*"};
  h.Publish(resources);
  std::vector<absl::Status> errors = h.errors();
  const std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 1);
  CHECK(slices[0].spec.devices.size() == 4);
  if (served) {
    CHECK(errors.empty());
    CHECK(slices[0].spec.skip_node_operations == std::vector<std::string>{"*"});
    return;
  }
  REQUIRE(errors.size() == 1);
  INFO(errors[0].ToString());
  CHECK(errors[0].code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(errors[0].message()),
             Catch::Contains("the API server (" + *version + ") stored less than was sent") &&
                 Catch::Contains("dropped spec.skipNodeOperations"));
  CHECK(slices[0].spec.skip_node_operations.empty());
  const int64_t writes = h.Writes();
  for (int i = 0; i < 3; ++i) h.Publish(resources);
  CHECK(h.Writes() == writes);
  CHECK(h.errors().size() == 1);
}

using e2e::PrivateCluster;

TEST_CASE("feature gates off: one error naming the dropped fields and the gates, no update loop",
          "[e2e][publisher][skew]") {
  PrivateCluster cluster(
      "DRAResourceClaimDeviceStatus=true,DRADeviceBindingConditions=false,DRAConsumableCapacity=false,"
      "DRAFractionalCapacityRange=false,DRAPartitionableDevices=true,DRADeviceTaints=true");
  auto admin = cluster.Admin();
  const std::string node = e2e::UniqueName("skew-node");
  REQUIRE(admin->Create(k8s::kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node}}}})
              .ok());
  Options options;
  options.driver_name = kDriver;
  options.node_name = node;
  options.drift_repair_delay = absl::Milliseconds(100);
  std::mutex mu;
  std::vector<absl::Status> errors;
  auto publisher = Publisher::Start(admin, options, [&](const absl::Status& s, std::string_view) {
    std::lock_guard<std::mutex> lock(mu);
    errors.push_back(s);
  });
  REQUIRE(publisher.ok());
  auto error_count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return errors.size();
  };

  DriverResources resources = testing::GpuPool(node, 4);
  k8s::Device& device = resources.pools[node].slices[0].devices[2];
  device.binds_to_node = true;
  device.binding_conditions = {"example.com/attached"};
  device.binding_failure_conditions = {"example.com/attach-failed"};
  device.allow_multiple_allocations = true;
  (*publisher)->Update(resources);
  REQUIRE(dra::testing::PollUntil([&] { return (*publisher)->Idle(); }, absl::Seconds(30)));
  REQUIRE(error_count() == 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    INFO(errors[0].ToString());
    CHECK(errors[0].code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(errors[0].message(), "the API server (v1."));
    CHECK(absl::StrContains(errors[0].message(), "spec.devices[].bindingConditions"));
    CHECK(absl::StrContains(errors[0].message(), "spec.devices[].allowMultipleAllocations"));
    CHECK(absl::StrContains(errors[0].message(),
                            "probably because these feature gates are off: DRADeviceBindingConditions, "
                            "DRAConsumableCapacity"));
  }
  const PublisherStats first = (*publisher)->Stats();
  CHECK(first.creates == 1);
  for (int i = 0; i < 3; ++i) {
    (*publisher)->Update(resources);
    REQUIRE(dra::testing::PollUntil([&] { return (*publisher)->Idle(); }, absl::Seconds(30)));
  }
  const PublisherStats later = (*publisher)->Stats();
  CHECK(later.creates + later.updates + later.deletes == 1);
  CHECK(error_count() == 1);
  (*publisher)->Stop();
}

TEST_CASE("kube-apiserver hung, then back: converges with nothing lost", "[e2e][publisher][down]") {
  PrivateCluster cluster;
  auto admin = cluster.Admin();
  const std::string node = e2e::UniqueName("down-node");
  REQUIRE(admin->Create(k8s::kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node}}}})
              .ok());
  Options options;
  options.driver_name = kDriver;
  options.node_name = node;
  options.backoff_initial = absl::Milliseconds(100);
  options.backoff_max = absl::Seconds(1);
  std::atomic<int> errors{0};
  auto publisher = Publisher::Start(cluster.Admin(absl::Seconds(2)), options,
                                    [&](const absl::Status&, std::string_view) { errors++; });
  REQUIRE(publisher.ok());
  (*publisher)->Update(testing::GpuPool(node, 200));
  REQUIRE(dra::testing::PollUntil([&] { return (*publisher)->Idle(); }, absl::Seconds(30)));
  REQUIRE(errors == 0);

  cluster.Freeze();
  const DriverResources resources = testing::GpuPool(node, 300);
  (*publisher)->Update(resources);
  REQUIRE(dra::testing::PollUntil([&] { return errors >= 2; }, absl::Seconds(30)));
  CHECK_FALSE((*publisher)->Idle());
  cluster.Thaw();
  REQUIRE(dra::testing::PollUntil([&] { return (*publisher)->Idle(); }, absl::Seconds(60)));

  k8s::ListOptions list_options;
  list_options.field_selector = absl::StrCat("spec.nodeName=", node);
  absl::StatusOr<k8s::ListResult> list = admin->ListAll(k8s::kResourceSlices, "", list_options);
  REQUIRE(list.ok());
  std::vector<k8s::ResourceSlice> slices;
  for (const json& item : list->items) slices.push_back(*k8s::ResourceSliceFromJson(item));
  std::sort(slices.begin(), slices.end(),
            [](const auto& a, const auto& b) { return a.metadata.name < b.metadata.name; });
  CHECK(DeviceNames(slices) == DeviceNames(resources.pools.at(node)));
  // One complete pool above the first publish's generation: 2, or 3 when
  // writes that timed out while the server hung landed after it came back and
  // the retry found the pool half-written (up to 8 writes are in flight).
  REQUIRE_FALSE(slices.empty());
  const int64_t generation = slices.front().spec.pool.generation;
  CHECK(generation >= 2);
  for (const auto& slice : slices) {
    CHECK(slice.spec.pool.generation == generation);
    CHECK(slice.spec.pool.resource_slice_count == 3);
  }
  (*publisher)->Stop();
}

TEST_CASE("an invalid pool is reported and never sent", "[e2e][publisher]") {
  Harness h;
  DriverResources resources = testing::GpuPool(h.node(), 2);
  resources.pools[h.node()].slices[0].devices[0].attributes["model"].string_value = std::string(65, 'x');
  h.Publish(resources);
  std::vector<absl::Status> errors = h.errors();
  REQUIRE(errors.size() == 1);
  CHECK(absl::StrContains(errors[0].message(),
                          "spec.devices[0].attributes[model].string: Too long: may not be more than 64 bytes"));
  CHECK(h.Writes() == 0);
  CHECK(h.Slices().empty());
}

// Go's ReconcilePoolWithName: a pool that every node sees, owned by the
// node that publishes it, watched by spec.pool.name (by spec.driver before
// 1.37, which has no such field label) from the publisher's start.
TEST_CASE("reconcile_pool: the one pool, owned by the Node, deleted by a restarted publisher whose resources lack it",
          "[e2e][publisher]") {
  const std::string pool = e2e::UniqueName("reconciled");
  Harness h([&](Options& options) { options.reconcile_pool = pool; });
  auto pool_slices = [&] {
    std::vector<k8s::ResourceSlice> slices;
    for (auto& slice : testing::ListSlices(h.admin(), absl::StrCat("spec.driver=", kDriver))) {
      if (slice.spec.pool.name == pool) slices.push_back(std::move(slice));
    }
    return slices;
  };
  DriverResources resources;
  resources.pools[pool].nodes = NodeSelection::kAllNodes;
  resources.pools[pool].slices = SplitIntoSlices({testing::Gpu(0), testing::Gpu(1)});
  resources.pools[h.node()] = testing::GpuPool(h.node(), 1).pools[h.node()];
  h.Publish(resources);
  std::vector<absl::Status> errors = h.errors();
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message() ==
        absl::StrCat("found pool \"", h.node(), "\", but reconcile_pool only allows pool \"", pool, "\""));
  CHECK(h.Slices().empty());
  std::vector<k8s::ResourceSlice> slices = pool_slices();
  REQUIRE(slices.size() == 1);
  CHECK(slices[0].spec.all_nodes == true);
  CHECK(DeviceNames(slices) == std::vector<std::vector<std::string>>{{"gpu-0", "gpu-1"}});
  REQUIRE(slices[0].metadata.owner_references.size() == 1);
  CHECK(slices[0].metadata.owner_references[0].uid == h.node_uid());

  h.StartPublisher();
  h.Publish(DriverResources());
  CHECK(pool_slices().empty());
  CHECK(h.errors().size() == 1);
}

// The version matrix's check of node allocatable resources (KEP-5517,
// alpha): 1.36 serves them as nodeAllocatableResourceMappings, 1.37 as
// nodeAllocatableResources, and each drops the other's. The publisher
// writes the server's shape; what the 1.36 shape cannot say fails the pool,
// naming the device.
TEST_CASE("node allocatable resources in the shape of the server's release, stored intact and not rewritten",
          "[e2e][publisher][skew]") {
  Harness h;
  absl::StatusOr<std::string> version = h.admin().ServerVersion();
  REQUIRE(version.ok());
  const bool mappings = absl::StartsWith(*version, "v1.36.");
  h.DeclareNodeAllocatableResources();

  DriverResources resources = testing::GpuPool(h.node(), 2);
  k8s::Device& device = resources.pools[h.node()].slices[0].devices[0];
  device.node_allocatable_resources["cpu"].mapping.emplace().device_multiplier = *k8s::Quantity::Parse("8");
  device.node_allocatable_resources["memory"].mapping.emplace().capacity_key = "memory";
  device.node_allocatable_resources["memory"].mapping->capacity_multiplier = *k8s::Quantity::Parse("2");
  h.Publish(resources);
  k8s::ListOptions mine;
  mine.field_selector = absl::StrCat("spec.driver=", kDriver, ",spec.nodeName=", h.node());
  absl::StatusOr<k8s::ListResult> raw = h.admin().List(k8s::kResourceSlices, "", mine);
  REQUIRE(raw.ok());
  REQUIRE(raw->items.size() == 1);
  const json& stored = raw->items[0]["spec"]["devices"][0];
  INFO(*version << ": " << stored.dump());
  INFO((h.errors().empty() ? std::string() : h.errors()[0].ToString()));
  REQUIRE(h.errors().empty());
  if (mappings) {
    CHECK(stored["nodeAllocatableResourceMappings"] ==
          json({{"cpu", {{"allocationMultiplier", "8"}}},
                {"memory", {{"capacityKey", "memory"}, {"allocationMultiplier", "2"}}}}));
  } else {
    CHECK(stored.contains("nodeAllocatableResources"));
  }
  CHECK(h.Slices().at(0).spec.devices.at(0).node_allocatable_resources == device.node_allocatable_resources);
  const int64_t writes = h.Writes();
  h.Publish(resources);
  CHECK(h.Writes() == writes);

  // Overhead has no 1.36 form.
  device.node_allocatable_resources["memory"].overhead.emplace().per_pod = *k8s::Quantity::Parse("64Mi");
  h.Publish(resources);
  if (!mappings) {
    CHECK(h.errors().empty());
    CHECK(h.Writes() == writes + 1);
    return;
  }
  REQUIRE(h.errors().size() == 1);
  INFO(h.errors()[0].ToString());
  CHECK(h.errors()[0].code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(h.errors()[0].message(), "device \"gpu-0\""));
  CHECK(absl::StrContains(h.errors()[0].message(), "overhead"));
  CHECK(h.Writes() == writes);
}

// KEP-5963 (alpha in 1.37, gate DRADeviceCompatibilityGroups, on in the
// suite's 1.37 cluster): two partitions of one counter set that may share
// it only within a group. The fake API server's OpenAPI document predates
// the field, so this is its one test against a server.
TEST_CASE("counter consumption with compatibility groups stored intact, republished with 0 writes",
          "[e2e][publisher]") {
  Harness h;
  std::vector<k8s::Device> devices = {testing::Gpu(0), testing::Gpu(1)};
  for (size_t i = 0; i < devices.size(); ++i) {
    k8s::DeviceCounterConsumption& consumption = devices[i].consumes_counters.emplace_back();
    consumption.counter_set = testing::GpuMemoryCounters().name;
    consumption.counters["memory"].value = *k8s::Quantity::Parse("40Gi");
    consumption.compatibility_groups = {"half", i == 0 ? "first" : "second"};
  }
  DriverResources resources;
  resources.pools[h.node()].slices = SplitIntoSlices(devices, {testing::GpuMemoryCounters()});
  h.Publish(resources);
  INFO((h.errors().empty() ? std::string() : h.errors()[0].ToString()));
  REQUIRE(h.errors().empty());
  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);
  REQUIRE(slices[1].spec.devices.size() == 2);
  for (size_t i = 0; i < devices.size(); ++i) {
    CHECK(slices[1].spec.devices[i].consumes_counters == devices[i].consumes_counters);
  }
  const int64_t writes = h.Writes();
  h.Publish(resources);
  CHECK(h.Writes() == writes);
}

TEST_CASE("binding conditions, nodeAllocatableResources, counters, taints and capacity policies stored intact",
          "[e2e][publisher]") {
  Harness h;
  h.DeclareNodeAllocatableResources();

  const k8s::CounterSet counters = testing::GpuMemoryCounters();
  const k8s::Device device = testing::DeviceWithEveryField();
  DriverResources resources;
  resources.pools[h.node()].slices = SplitIntoSlices({device}, {counters});
  h.Publish(resources);
  INFO((h.errors().empty() ? std::string() : h.errors()[0].ToString()));
  REQUIRE(h.errors().empty());

  std::vector<k8s::ResourceSlice> slices = h.Slices();
  REQUIRE(slices.size() == 2);
  CHECK(slices[0].spec.shared_counters == resources.pools[h.node()].slices[0].shared_counters);
  const k8s::Device& stored = slices[1].spec.devices.at(0);
  REQUIRE(device.binds_to_node == true);
  REQUIRE(device.allow_multiple_allocations == true);
  testing::CheckStoredIntact(stored, device);
  CHECK(stored.taints.at(0).time_added.has_value());  // set by the server, not a difference

  const int64_t writes = h.Writes();
  h.Publish(resources);
  CHECK(h.Writes() == writes);
}

}  // namespace
}  // namespace dra::resourceslice
