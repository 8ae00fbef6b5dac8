// The SDK's API-server writers across a 30 s outage of a real kube-apiserver
// (a private cluster's, stopped: connections refused, then started again on
// the same port and etcd): the ResourceSlice publisher with a new pool to
// publish, a ClaimStatusWriter call in flight (as in a kubelet call, bounded
// by the kubelet's 45 s), and the BindingConditionReconciler with an answer
// to write. Each converges once the server is back, nothing is lost, and
// the failed requests during the outage are few (backoff, not a hot loop):
// they are what the Helper's /metrics shows as
// dra_api_requests_total{code="<error>"}.
#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "dra/k8s/client.h"
#include "dra/k8s/informer.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "dra/resourceslice/publisher.h"
#include "e2e/e2e_cluster.h"
#include "e2e/private_cluster.h"
#include "support/capturing_logger.h"
#include "support/claim_object.h"
#include "support/device_status.h"
#include "support/poll.h"
#include "support/published_devices.h"

namespace dra {
namespace {

using nlohmann::json;
using resourceclaim::BindingConditionReconciler;
using resourceclaim::BindingResult;

constexpr char kDriver[] = "outage.e2e.example.com";
constexpr char kNamespace[] = "default";
const std::string kAttached = absl::StrCat(kDriver, "/attached");

uint64_t FailedRequests(const k8s::Client& client) {
  uint64_t failed = 0;
  for (const k8s::RequestCount& count : client.RequestCounts()) {
    if (count.code == "<error>") failed += count.count;
  }
  return failed;
}

// Attaches once told to: the answer waits for the outage.
class Attacher : public resourceclaim::BindingHandler {
 public:
  std::atomic<bool> attached{false};
  BindingResult PrepareForBinding(const CallContext&, const k8s::ResourceClaim&,
                                  const k8s::DeviceRequestAllocationResult&) override {
    return attached ? BindingResult::Ready("Attached") : BindingResult::Pending(absl::Milliseconds(100));
  }
};

// Creates claim `name` allocated on `node` with device `device` of the pool
// `node`; with `binding`, the device waits for the kAttached condition.
k8s::ClaimRef CreateAllocated(k8s::Client& admin, const std::string& node, const std::string& name,
                              const std::string& device, bool binding) {
  absl::StatusOr<json> created =
      admin.Create(k8s::kResourceClaims, kNamespace, testing::NewClaimObject(kNamespace, name, kDriver));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  absl::StatusOr<k8s::ResourceClaim> claim = k8s::ResourceClaimFromJson(*created);
  REQUIRE(claim.ok());
  k8s::AllocationResult& allocation = claim->status.allocation.emplace();
  k8s::DeviceRequestAllocationResult& result = allocation.devices.results.emplace_back();
  result.request = "gpu";
  result.driver = kDriver;
  result.pool = node;
  result.device = device;
  if (binding) {
    result.binding_conditions = {kAttached};
    result.binding_failure_conditions = {absl::StrCat(kDriver, "/attach-failed")};
  }
  allocation.node_selector = k8s::NodeSelectorForName(node);
  allocation.allocation_timestamp = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  absl::StatusOr<k8s::ResourceClaim> allocated = admin.UpdateResourceClaimStatus(*claim);
  INFO(allocated.status().ToString());
  REQUIRE(allocated.ok());
  return {kNamespace, name, claim->metadata.uid};
}

bool ConditionTrue(k8s::Client& admin, const k8s::ClaimRef& ref, const std::string& device, const std::string& type) {
  absl::StatusOr<k8s::ResourceClaim> claim = admin.GetResourceClaim(ref.namespace_, ref.name);
  if (!claim.ok()) return false;
  const k8s::AllocatedDeviceStatus* entry = testing::FindDeviceStatus(*claim, kDriver, device);
  if (entry == nullptr) return false;
  for (const k8s::Condition& condition : entry->conditions) {
    if (condition.type == type) return condition.status == "True";
  }
  return false;
}

// A private cluster with a Node, and the driver's writers on it: the
// publisher (its pool of 8 devices published) and the binding reconciler
// with their own clients, so that each one's requests can be counted, and a
// ClaimStatusWriter on the publisher's.
struct Writers {
  e2e::PrivateCluster cluster;
  std::shared_ptr<k8s::Client> admin = cluster.Admin();
  const std::string node = "outage-node";
  std::shared_ptr<k8s::Client> publisher_client = cluster.Admin(absl::Seconds(5));
  std::shared_ptr<k8s::Client> reconciler_client = cluster.Admin(absl::Seconds(5));
  std::atomic<int> publish_errors{0};
  std::unique_ptr<resourceslice::Publisher> publisher;
  std::unique_ptr<resourceclaim::ClaimStatusWriter> writer;
  std::shared_ptr<testing::CapturingSink> sink = std::make_shared<testing::CapturingSink>();
  Attacher attacher;
  std::unique_ptr<BindingConditionReconciler> reconciler;

  Writers() {
    REQUIRE(admin->Create(k8s::kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node}}}})
                .ok());
    resourceslice::Options publisher_options;
    publisher_options.driver_name = kDriver;
    publisher_options.node_name = node;
    publisher_options.backoff_initial = absl::Milliseconds(100);
    publisher_options.backoff_max = absl::Seconds(2);
    auto started = resourceslice::Publisher::Start(publisher_client, publisher_options,
                                                   [this](const absl::Status&, std::string_view) { publish_errors++; });
    REQUIRE(started.ok());
    publisher = *std::move(started);
    publisher->Update(testing::GpuPool(node, 8));
    REQUIRE(testing::PollUntil([&] { return publisher->Idle(); }, absl::Seconds(30)));

    resourceclaim::ClaimStatusWriterOptions writer_options;
    writer_options.driver_name = kDriver;
    writer_options.backoff_max = absl::Seconds(2);
    auto created = resourceclaim::ClaimStatusWriter::Create(publisher_client, writer_options);
    REQUIRE(created.ok());
    writer = *std::move(created);

    resourceclaim::BindingConditionReconcilerOptions reconciler_options;
    reconciler_options.driver_name = kDriver;
    reconciler_options.node_name = node;
    reconciler_options.backoff_max = absl::Seconds(2);
    reconciler_options.logger = Logger(sink, 4);
    auto reconciling = BindingConditionReconciler::Start(reconciler_client, reconciler_options, attacher);
    REQUIRE(reconciling.ok());
    reconciler = *std::move(reconciling);
  }
  ~Writers() {
    reconciler->Stop();
    publisher->Stop();
  }

  int64_t PublisherWrites() const {
    const resourceslice::PublisherStats stats = publisher->Stats();
    return stats.creates + stats.updates + stats.deletes;
  }
};

TEST_CASE(
    "kube-apiserver stopped for 30 s with a publish, a status write and a binding answer pending: all converge "
    "after it returns, nothing lost, with backoff",
    "[e2e][down]") {
  Writers w;
  e2e::PrivateCluster& cluster = w.cluster;
  k8s::Client* admin = w.admin.get();
  const std::string& node = w.node;
  const k8s::ClaimRef prepared = CreateAllocated(*admin, node, "prepared", "gpu-0", /*binding=*/false);
  const k8s::ClaimRef fabric = CreateAllocated(*admin, node, "fabric", "gpu-1", /*binding=*/true);
  // The reconciler has seen the fabric claim and asks again every 100 ms.
  REQUIRE(testing::PollUntil([&] { return w.reconciler->Stats().pending > 0; }, absl::Seconds(30)));

  cluster.StopApiServer();
  const absl::Time stopped = absl::Now();
  const uint64_t failed_before = FailedRequests(*w.publisher_client) + FailedRequests(*w.reconciler_client);
  // Work for each writer while the server is gone: a new pool, a status
  // write in a kubelet call, an answer to write.
  const resourceslice::DriverResources grown = testing::GpuPool(node, 300);
  w.publisher->Update(grown);
  w.attacher.attached = true;
  absl::Status status_written = absl::UnknownError("not written");
  absl::Duration status_took;
  std::thread call([&] {
    const absl::Time start = absl::Now();
    status_written = w.writer->Apply(CallContext::Background(start + absl::Seconds(45)), prepared,
                                     {testing::ReadyEntry(kDriver, node, "gpu-0")});
    status_took = absl::Now() - start;
  });
  REQUIRE(testing::PollUntil([&] { return w.publish_errors >= 2; }, absl::Seconds(30)));
  CHECK_FALSE(w.publisher->Idle());
  absl::SleepFor(absl::Seconds(30) - (absl::Now() - stopped));  // the outage's length is the test's subject
  cluster.StartApiServer();
  call.join();

  INFO(status_written.ToString());
  CHECK(status_written.ok());
  CHECK(status_took < absl::Seconds(45));
  REQUIRE(testing::PollUntil([&] { return w.publisher->Idle(); }, absl::Seconds(60)));
  CHECK(testing::PollUntil([&] { return ConditionTrue(*admin, fabric, "gpu-1", kAttached); }, absl::Seconds(60),
                           absl::Milliseconds(200)));
  CHECK(ConditionTrue(*admin, prepared, "gpu-0", "Ready"));

  // Nothing lost: the whole new pool is there, in one generation.
  const std::vector<k8s::ResourceSlice> slices = testing::ListSlices(*admin, absl::StrCat("spec.nodeName=", node));
  REQUIRE_FALSE(slices.empty());
  CHECK(testing::DeviceNames(slices) == testing::DeviceNames(grown.pools.at(node)));
  for (const auto& slice : slices) CHECK(slice.spec.pool.generation == slices.front().spec.pool.generation);

  // Backoff: over 30 s the three writers and the reconciler's watch failed
  // a bounded number of requests (a loop without backoff makes thousands of
  // refused connections a second), and the reconciler logged its retries.
  const uint64_t failed = FailedRequests(*w.publisher_client) + FailedRequests(*w.reconciler_client) - failed_before;
  INFO("failed requests during the outage: " << failed);
  CHECK(failed >= 3);
  CHECK(failed <= 200);
  CHECK_FALSE(w.sink->Matching("Binding condition reconciler failed").empty());
  // Its watch broke (the retries above) and was resumed from its version,
  // or, if the restarted server's watch cache no longer had it, relisted
  // once: never more.
  CHECK(w.reconciler->Stats().lists <= 2);
}

TEST_CASE("etcd compacted under a kube-apiserver restart: the watches relist, and nothing is written twice",
          "[e2e][down]") {
  Writers w;
  const k8s::ClaimRef fabric = CreateAllocated(*w.admin, w.node, "fabric", "gpu-1", /*binding=*/true);
  w.attacher.attached = true;
  REQUIRE(testing::PollUntil([&] { return ConditionTrue(*w.admin, fabric, "gpu-1", kAttached); }, absl::Seconds(30),
                             absl::Milliseconds(100)));
  REQUIRE(testing::PollUntil([&] { return w.reconciler->Stats().writes == 1; }, absl::Seconds(30)));
  const int64_t publisher_writes = w.PublisherWrites();
  const resourceclaim::BindingConditionReconcilerStats before = w.reconciler->Stats();
  const int64_t publisher_lists = w.publisher->Stats().lists;

  // The watches' resourceVersions are compacted away while the server is
  // down; the restarted server's watch cache starts after them.
  w.cluster.StopApiServer();
  w.cluster.CompactEtcd();
  w.cluster.StartApiServer();
  REQUIRE(testing::PollUntil([&] { return w.reconciler->Stats().lists > before.lists; }, absl::Seconds(60)));
  REQUIRE(testing::PollUntil([&] { return w.publisher->Stats().lists > publisher_lists; }, absl::Seconds(60)));
  // The same pool again: the relisted cache matches it, so no write.
  w.publisher->Update(testing::GpuPool(w.node, 8));
  REQUIRE(testing::PollUntil([&] { return w.publisher->Idle(); }, absl::Seconds(30)));
  CHECK(w.PublisherWrites() == publisher_writes);
  // The reconciler's device is finished: its handler is not asked again and
  // its conditions are not written again.
  const resourceclaim::BindingConditionReconcilerStats after = w.reconciler->Stats();
  CHECK(after.handler_calls == before.handler_calls);
  CHECK(after.writes == before.writes);
  CHECK(ConditionTrue(*w.admin, fabric, "gpu-1", kAttached));
}

// What an informer's handler saw, for the test thread to read.
class InformerRecorder : public k8s::InformerHandler {
 public:
  void OnEvent(const k8s::InformerEvent& event) override {
    dra::MutexLock lock(&mu_);
    if (event.type == k8s::InformerEvent::Type::kDeleted) {
      last_.erase(k8s::Informer::Key(event.object));
    } else {
      last_[k8s::Informer::Key(event.object)] = event.object;
    }
  }
  void OnError(const absl::Status&, std::string_view) override {
    dra::MutexLock lock(&mu_);
    ++errors_;
  }
  std::optional<json> Last(const std::string& key) const {
    dra::MutexLock lock(&mu_);
    auto it = last_.find(key);
    return it == last_.end() ? std::nullopt : std::optional<json>(it->second);
  }
  std::set<std::string> Keys() const {
    dra::MutexLock lock(&mu_);
    std::set<std::string> keys;
    for (const auto& [key, object] : last_) keys.insert(key);
    return keys;
  }
  int errors() const {
    dra::MutexLock lock(&mu_);
    return errors_;
  }

 private:
  mutable dra::Mutex mu_;
  std::map<std::string, json> last_ ABSL_GUARDED_BY(mu_);
  int errors_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_CASE(
    "informer on a real kube-apiserver: metadata-only events, a restart over a compacted etcd costs one list, "
    "and the store follows the server again",
    "[e2e][down][informer]") {
  e2e::PrivateCluster cluster;
  std::shared_ptr<k8s::Client> admin = cluster.Admin();
  const auto create = [&](const std::string& name) {
    json claim = testing::NewClaimObject(kNamespace, name, kDriver);
    claim["metadata"]["labels"] = {{"informer", "yes"}};
    absl::StatusOr<json> created = admin->Create(k8s::kResourceClaims, kNamespace, claim);
    INFO(created.status().ToString());
    REQUIRE(created.ok());
  };
  create("inf-a");
  InformerRecorder recorder;
  k8s::InformerOptions options;
  options.resource = k8s::kResourceClaims;
  options.namespace_ = kNamespace;
  options.label_selector = "informer=yes";
  options.watch_metadata_only = true;
  options.backoff_initial = absl::Milliseconds(50);
  options.backoff_max = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<k8s::Informer>> informer =
      k8s::Informer::Start(cluster.Admin(absl::Seconds(5)), options, recorder);
  REQUIRE(informer.ok());
  REQUIRE(testing::PollUntil([&] { return (*informer)->Synced(); }, absl::Seconds(30)));
  CHECK(recorder.Last("default/inf-a")->contains("spec"));  // a list is whole

  create("inf-b");
  REQUIRE(testing::PollUntil([&] { return recorder.Last("default/inf-b").has_value(); }, absl::Seconds(30)));
  const json b = *recorder.Last("default/inf-b");
  CHECK(b.value("kind", "") == "PartialObjectMetadata");
  CHECK_FALSE(b.contains("spec"));

  cluster.StopApiServer();
  cluster.CompactEtcd();
  cluster.StartApiServer();
  create("inf-c");
  REQUIRE(testing::PollUntil([&] { return recorder.Last("default/inf-c").has_value(); }, absl::Seconds(60)));
  CHECK(recorder.errors() >= 1);  // the refused watch
  CHECK((*informer)->Stats().lists == 2);
  CHECK(recorder.Keys() == std::set<std::string>{"default/inf-a", "default/inf-b", "default/inf-c"});
  REQUIRE(admin->Delete(k8s::kResourceClaims, kNamespace, "inf-a").ok());
  REQUIRE(testing::PollUntil([&] { return !recorder.Last("default/inf-a").has_value(); }, absl::Seconds(30)));
  CHECK((*informer)->List().size() == 2);
}

}  // namespace
}  // namespace dra
