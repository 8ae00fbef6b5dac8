// BindingConditionReconciler against the fake API server over real HTTPS:
// which claims it acts on (this driver, binding conditions, this node by
// name or label), what it writes for Ready, Failed and Pending answers,
// that other managers' entries stay, and how it behaves around restarts,
// outages, broken watches, reallocation, the binding timeout and Stop().
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "support/capturing_logger.h"
#include "support/device_status.h"
#include "support/fake_api_claims.h"
#include "support/poll.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using nlohmann::json;
using resourceclaim::BindingConditionReconciler;
using resourceclaim::BindingConditionReconcilerOptions;
using resourceclaim::BindingResult;
using testing::FakeApiServer;
using testing::kClaimNamespace;
using testing::kTestDriverName;
using testing::PollUntil;

constexpr char kNode[] = "node-a";
const std::string kPrepared = absl::StrCat(kTestDriverName, "/is-prepared");
const std::string kAttached = absl::StrCat(kTestDriverName, "/is-attached");
const std::string kFailed = absl::StrCat(kTestDriverName, "/preparing-failed");

std::string Rfc3339(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone()); }

k8s::NodeSelector ByName(const std::string& node) { return k8s::NodeSelectorForName(node); }

k8s::NodeSelector ByLabel(const std::string& key, const std::string& value) {
  return k8s::NodeSelectorForLabel(key, {value});
}

struct Result {
  std::string device;
  std::vector<std::string> conditions = {kPrepared};
  std::string driver = kTestDriverName;
};

k8s::AllocationResult Allocation(const std::vector<Result>& results, std::optional<k8s::NodeSelector> selector,
                                 absl::Time allocated = absl::Now()) {
  k8s::AllocationResult allocation;
  for (const Result& r : results) {
    k8s::DeviceRequestAllocationResult& result = allocation.devices.results.emplace_back();
    result.request = "gpu";
    result.driver = r.driver;
    result.pool = "fabric";
    result.device = r.device;
    result.binding_conditions = r.conditions;
    if (!r.conditions.empty()) result.binding_failure_conditions = {kFailed};
  }
  allocation.node_selector = std::move(selector);
  allocation.allocation_timestamp = Rfc3339(allocated);
  return allocation;
}

// Creates claim `name` with the allocation, as the scheduler writes it.
k8s::ClaimRef CreateAllocated(k8s::Client& client, const std::string& name, k8s::AllocationResult allocation) {
  k8s::ResourceClaim claim = testing::CreateClaim(client, name);
  claim.status.allocation = std::move(allocation);
  absl::StatusOr<k8s::ResourceClaim> allocated = client.UpdateResourceClaimStatus(claim);
  INFO(allocated.status().ToString());
  REQUIRE(allocated.ok());
  return k8s::ClaimRef{kClaimNamespace, name, claim.metadata.uid};
}

k8s::ResourceClaim Get(k8s::Client& client, const k8s::ClaimRef& ref) {
  absl::StatusOr<k8s::ResourceClaim> claim = client.GetResourceClaim(ref.namespace_, ref.name);
  INFO(claim.status().ToString());
  REQUIRE(claim.ok());
  return *claim;
}

// Replaces the claim's allocation (nullopt: deallocates, as the scheduler
// does after a failure, devices included).
void Reallocate(k8s::Client& client, const k8s::ClaimRef& ref, std::optional<k8s::AllocationResult> allocation) {
  k8s::ResourceClaim claim = Get(client, ref);
  claim.status.allocation = std::move(allocation);
  claim.status.devices.clear();
  absl::StatusOr<k8s::ResourceClaim> updated = client.UpdateResourceClaimStatus(claim);
  INFO(updated.status().ToString());
  REQUIRE(updated.ok());
}

const k8s::Condition* FindCondition(const k8s::ResourceClaim& claim, const std::string& device,
                                    const std::string& type) {
  const k8s::AllocatedDeviceStatus* entry = testing::FindDeviceStatus(claim, kTestDriverName, device);
  if (entry == nullptr) return nullptr;
  for (const k8s::Condition& condition : entry->conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

bool ConditionTrue(k8s::Client& client, const k8s::ClaimRef& ref, const std::string& device, const std::string& type) {
  absl::StatusOr<k8s::ResourceClaim> claim = client.GetResourceClaim(ref.namespace_, ref.name);
  if (!claim.ok()) return false;
  const k8s::Condition* condition = FindCondition(*claim, device, type);
  return condition != nullptr && condition->status == "True";
}

// Answers from a script per device (Ready once it runs out); can hold calls
// until they are cancelled.
class ScriptedHandler : public resourceclaim::BindingHandler {
 public:
  struct Call {
    std::string claim;
    std::string device;
    absl::Time deadline;
    absl::Status cancelled;  // the context's status when the call returned
  };

  void Script(const std::string& device, std::vector<BindingResult> answers) {
    std::lock_guard<std::mutex> lock(mu_);
    scripts_[device] = std::deque<BindingResult>(answers.begin(), answers.end());
  }
  void HoldUntilCancelled(bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = hold;
  }

  BindingResult PrepareForBinding(const CallContext& ctx, const k8s::ResourceClaim& claim,
                                  const k8s::DeviceRequestAllocationResult& device) override {
    bool hold;
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold = hold_;
      ++running_;
    }
    if (hold) ctx.WaitForCancellation(absl::Seconds(60));
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    calls_.push_back(Call{claim.metadata.name, device.device, ctx.deadline(), ctx.status()});
    std::deque<BindingResult>& script = scripts_[device.device];
    if (script.empty()) return BindingResult::Ready("Attached", "attached to " + std::string(kNode));
    BindingResult answer = script.front();
    script.pop_front();
    return answer;
  }

  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int CallsFor(const std::string& device) const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const Call& call : calls_) n += call.device == device ? 1 : 0;
    return n;
  }
  int running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::deque<BindingResult>> scripts_;
  std::vector<Call> calls_;
  bool hold_ = false;
  int running_ = 0;
};

BindingConditionReconcilerOptions Options(const Logger& logger = Logger()) {
  BindingConditionReconcilerOptions options;
  options.driver_name = kTestDriverName;
  options.node_name = kNode;
  options.backoff_initial = absl::Milliseconds(10);
  options.backoff_max = absl::Milliseconds(50);
  options.logger = logger;
  return options;
}

std::unique_ptr<BindingConditionReconciler> StartReconciler(std::shared_ptr<k8s::Client> client,
                                                            ScriptedHandler& handler,
                                                            BindingConditionReconcilerOptions options = Options()) {
  auto reconciler = BindingConditionReconciler::Start(std::move(client), std::move(options), handler);
  INFO(reconciler.status().ToString());
  REQUIRE(reconciler.ok());
  return *std::move(reconciler);
}

void WaitIdle(const BindingConditionReconciler& reconciler) {
  REQUIRE(PollUntil([&] { return reconciler.Idle(); }, absl::Seconds(20)));
}

int StatusPatches(const FakeApiServer& server) {
  absl::StatusOr<std::string> body = server.Admin("GET", "/fake/requests");
  REQUIRE(body.ok());
  return json::parse(*body)["counts"].value("PATCH resourceclaims/status", 0);
}

TEST_CASE("bad options are refused naming the option", "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  ScriptedHandler handler;
  auto refused = [&](BindingConditionReconcilerOptions options) {
    return BindingConditionReconciler::Start(client, std::move(options), handler).status();
  };
  BindingConditionReconcilerOptions options = Options();
  options.driver_name = "Not_A_Driver";
  CHECK_THAT(std::string(refused(options).message()), Catch::Contains("driver_name: Invalid value"));
  options = Options();
  options.node_name = "";
  CHECK(refused(options).message() == "BindingConditionReconcilerOptions: node_name: Required value");
  options = Options();
  options.workers = 0;
  CHECK_THAT(std::string(refused(options).message()), Catch::Contains("workers: Invalid value: 0"));
  options = Options();
  options.binding_timeout = absl::ZeroDuration();
  CHECK_THAT(std::string(refused(options).message()), Catch::Contains("binding_timeout: Invalid value"));
  options = Options();
  options.backoff_max = absl::Milliseconds(1);
  CHECK_THAT(std::string(refused(options).message()), Catch::Contains("backoff_initial: Invalid value"));
  CHECK(absl::IsInvalidArgument(BindingConditionReconciler::Start(nullptr, Options(), handler).status()));
}

TEST_CASE("a ready device gets its binding conditions True with standard semantics, the driver's own entry stays",
          "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  const absl::Time allocated = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  const k8s::ClaimRef ref = CreateAllocated(
      *client, "c",
      Allocation({{"gpu-0", {kPrepared, kAttached}}, {"gpu-1", {}}, {"nic-0", {kPrepared}, "nic.example.com"}},
                 ByName(kNode), allocated));
  // The driver's own status of gpu-0, with its own field manager, before.
  resourceclaim::ClaimStatusWriterOptions writer_options;
  writer_options.driver_name = kTestDriverName;
  auto writer = resourceclaim::ClaimStatusWriter::Create(client, writer_options);
  REQUIRE(writer.ok());
  REQUIRE(
      (*writer)->Apply(CallContext::Background(), ref, {testing::ReadyEntry(kTestDriverName, "fabric", "gpu-0")}).ok());

  ScriptedHandler handler;
  auto reconciler = StartReconciler(client, handler);
  REQUIRE(PollUntil([&] { return ConditionTrue(*client, ref, "gpu-0", kAttached); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  WaitIdle(*reconciler);

  const k8s::ResourceClaim claim = Get(*client, ref);
  for (const std::string& type : {kPrepared, kAttached}) {
    const k8s::Condition* condition = FindCondition(claim, "gpu-0", type);
    REQUIRE(condition != nullptr);
    CHECK(condition->status == "True");
    CHECK(condition->reason == "Attached");
    CHECK(condition->message == "attached to node-a");
    // ResourceClaims have no metadata.generation (as on the real server):
    // there is no generation to observe.
    CHECK(claim.metadata.generation == 0);
    CHECK_FALSE(condition->observed_generation.has_value());
    CHECK_FALSE(condition->last_transition_time.empty());
  }
  const k8s::Condition* ready = FindCondition(claim, "gpu-0", "Ready");
  REQUIRE(ready != nullptr);
  CHECK(ready->reason == "Initialized");
  // Only gpu-0 has binding conditions of this driver: one call, its deadline
  // the allocation's time plus the scheduler's timeout.
  const std::vector<ScriptedHandler::Call> calls = handler.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].device == "gpu-0");
  CHECK(calls[0].deadline == allocated + absl::Seconds(600));
  CHECK(calls[0].cancelled.ok());
  CHECK(testing::FindDeviceStatus(claim, kTestDriverName, "gpu-1") == nullptr);
  CHECK(testing::FindDeviceStatus(claim, "nic.example.com", "nic-0") == nullptr);
  CHECK(reconciler->Stats().ready == 1);
  CHECK(reconciler->Stats().writes == 1);

  // The driver rewrites its own status: the binding conditions stay.
  REQUIRE(
      (*writer)
          ->Apply(CallContext::Background(), ref, {testing::ReadyEntry(kTestDriverName, "fabric", "gpu-0", "False")})
          .ok());
  const k8s::ResourceClaim rewritten = Get(*client, ref);
  CHECK(FindCondition(rewritten, "gpu-0", kPrepared)->status == "True");
  CHECK(FindCondition(rewritten, "gpu-0", "Ready")->status == "False");
  WaitIdle(*reconciler);
  CHECK(handler.calls().size() == 1);
}

TEST_CASE("pending answers are asked again after their delay, failed sets the failure condition only", "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  ScriptedHandler handler;
  handler.Script("gpu-0",
                 {BindingResult::Pending(absl::Milliseconds(20)), BindingResult::Pending(absl::Milliseconds(20))});
  handler.Script("gpu-1", {BindingResult::Failed("AttachFailed", "fabric port 3 is down")});
  auto reconciler = StartReconciler(client, handler);
  const k8s::ClaimRef ref = CreateAllocated(*client, "c", Allocation({{"gpu-0"}, {"gpu-1"}}, ByName(kNode)));

  REQUIRE(PollUntil([&] { return ConditionTrue(*client, ref, "gpu-0", kPrepared); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  REQUIRE(PollUntil([&] { return ConditionTrue(*client, ref, "gpu-1", kFailed); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  WaitIdle(*reconciler);
  CHECK(handler.CallsFor("gpu-0") == 3);
  CHECK(handler.CallsFor("gpu-1") == 1);
  const k8s::ResourceClaim claim = Get(*client, ref);
  const k8s::Condition* failed = FindCondition(claim, "gpu-1", kFailed);
  REQUIRE(failed != nullptr);
  CHECK(failed->reason == "AttachFailed");
  CHECK(failed->message == "fabric port 3 is down");
  CHECK(FindCondition(claim, "gpu-1", kPrepared) == nullptr);
  const resourceclaim::BindingConditionReconcilerStats stats = reconciler->Stats();
  CHECK(stats.pending == 2);
  CHECK(stats.failed == 1);
  CHECK(stats.ready == 1);
}

TEST_CASE("claims of other nodes, of nodes selected by other labels and without a node selector are not touched",
          "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", kNode}, {"labels", {{"accelerator-type", "high-performance"}}}}}};
  REQUIRE(client->Create(k8s::kNodes, "", node).ok());
  const k8s::ClaimRef other = CreateAllocated(*client, "other-node", Allocation({{"gpu-0"}}, ByName("node-b")));
  const k8s::ClaimRef other_label =
      CreateAllocated(*client, "other-label", Allocation({{"gpu-1"}}, ByLabel("accelerator-type", "low-power")));
  const k8s::ClaimRef everywhere = CreateAllocated(*client, "no-selector", Allocation({{"gpu-2"}}, std::nullopt));
  const k8s::ClaimRef label =
      CreateAllocated(*client, "label", Allocation({{"gpu-3"}}, ByLabel("accelerator-type", "high-performance")));

  ScriptedHandler handler;
  auto reconciler = StartReconciler(client, handler);
  REQUIRE(PollUntil([&] { return ConditionTrue(*client, label, "gpu-3", kPrepared); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  WaitIdle(*reconciler);
  const std::vector<ScriptedHandler::Call> calls = handler.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].claim == "label");
  for (const k8s::ClaimRef& ref : {other, other_label, everywhere}) {
    INFO(ref.name);
    CHECK(Get(*client, ref).status.devices.empty());
  }
}

TEST_CASE("a central reconciler (kAllNodes) handles the driver's allocations on every node and no other driver's",
          "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  const k8s::ClaimRef a = CreateAllocated(*client, "on-a", Allocation({{"gpu-0"}}, ByName("node-a")));
  const k8s::ClaimRef b = CreateAllocated(*client, "on-b", Allocation({{"gpu-1"}}, ByName("node-b")));
  const k8s::ClaimRef label =
      CreateAllocated(*client, "by-label", Allocation({{"gpu-2"}}, ByLabel("accelerator-type", "high-performance")));
  const k8s::ClaimRef everywhere = CreateAllocated(*client, "no-selector", Allocation({{"gpu-3"}}, std::nullopt));
  const k8s::ClaimRef other_driver = CreateAllocated(
      *client, "other-driver", Allocation({{"nic-0", {kPrepared}, "nic.example.com"}}, ByName("node-a")));

  BindingConditionReconcilerOptions options = Options();
  options.scope = resourceclaim::BindingScope::kAllNodes;
  options.node_name = "";
  ScriptedHandler handler;
  auto reconciler = StartReconciler(client, handler, options);
  REQUIRE(PollUntil(
      [&] {
        return ConditionTrue(*client, a, "gpu-0", kPrepared) && ConditionTrue(*client, b, "gpu-1", kPrepared) &&
               ConditionTrue(*client, label, "gpu-2", kPrepared) &&
               ConditionTrue(*client, everywhere, "gpu-3", kPrepared);
      },
      absl::Seconds(20), absl::Milliseconds(50)));
  WaitIdle(*reconciler);
  CHECK(handler.calls().size() == 4);
  CHECK(Get(*client, other_driver).status.devices.empty());
  // The server was never asked for a node: a central reconciler has none.
  absl::StatusOr<std::string> requests = server->Admin("GET", "/fake/requests");
  REQUIRE(requests.ok());
  CHECK(json::parse(*requests)["counts"].value("GET nodes", 0) == 0);
}

TEST_CASE("a central reconciler takes no node name", "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  ScriptedHandler handler;
  BindingConditionReconcilerOptions options = Options();
  options.scope = resourceclaim::BindingScope::kAllNodes;
  CHECK(BindingConditionReconciler::Start(client, options, handler).status().message() ==
        "BindingConditionReconcilerOptions: node_name: Invalid value: \"node-a\": must be empty with scope kAllNodes");
}

TEST_CASE(
    "a restarted reconciler does not repeat finished work, and a write it could not make is retried without "
    "asking again",
    "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  const k8s::ClaimRef done = CreateAllocated(*client, "done", Allocation({{"gpu-0"}}, ByName(kNode)));
  ScriptedHandler first;
  {
    auto reconciler = StartReconciler(client, first);
    REQUIRE(PollUntil([&] { return ConditionTrue(*client, done, "gpu-0", kPrepared); }, absl::Seconds(20),
                      absl::Milliseconds(50)));
  }
  REQUIRE(first.calls().size() == 1);

  // The next status writes fail as an overloaded server would.
  REQUIRE(
      server
          ->Admin("POST", "/fake/fail", R"({"verb":"PATCH","resource":"resourceclaims/status","count":3,"status":503})")
          .ok());
  const int patches = StatusPatches(*server);
  const k8s::ClaimRef fresh = CreateAllocated(*client, "fresh", Allocation({{"gpu-1"}}, ByName(kNode)));
  ScriptedHandler second;
  auto reconciler = StartReconciler(client, second);
  REQUIRE(PollUntil([&] { return ConditionTrue(*client, fresh, "gpu-1", kPrepared); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  WaitIdle(*reconciler);
  const std::vector<ScriptedHandler::Call> calls = second.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].claim == "fresh");
  CHECK(StatusPatches(*server) - patches == 4);  // three refused, one written
}

TEST_CASE("a broken watch and an expired resource version are survived by watching again and relisting", "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  // Its list is a watch-list stream: a WATCH.
  REQUIRE(server->Admin("POST", "/fake/fail", R"({"verb":"WATCH","resource":"resourceclaims","count":2,"status":503})")
              .ok());
  ScriptedHandler handler;
  auto reconciler = StartReconciler(client, handler);
  REQUIRE(PollUntil([&] { return reconciler->Synced(); }, absl::Seconds(20)));
  CHECK(reconciler->Stats().lists == 1);  // after two refused

  REQUIRE(server->Admin("POST", "/fake/closewatches").ok());
  const k8s::ClaimRef a = CreateAllocated(*client, "a", Allocation({{"gpu-0"}}, ByName(kNode)));
  REQUIRE(PollUntil([&] { return ConditionTrue(*client, a, "gpu-0", kPrepared); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  const int64_t lists = reconciler->Stats().lists;

  // The watch ends and the next one from the last version gets 410 Gone
  // (expired history): the reconciler lists again.
  REQUIRE(server->Admin("POST", "/fake/fail", R"({"verb":"WATCH","resource":"resourceclaims","count":1,"status":410})")
              .ok());
  REQUIRE(server->Admin("POST", "/fake/closewatches").ok());
  const k8s::ClaimRef b = CreateAllocated(*client, "b", Allocation({{"gpu-1"}}, ByName(kNode)));
  REQUIRE(PollUntil([&] { return ConditionTrue(*client, b, "gpu-1", kPrepared); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  WaitIdle(*reconciler);
  CHECK(reconciler->Stats().lists > lists);
  CHECK(handler.calls().size() == 2);
}

TEST_CASE("a handler call in flight is cancelled when the claim is deallocated, the new allocation is asked afresh",
          "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  ScriptedHandler handler;
  handler.HoldUntilCancelled(true);
  auto reconciler = StartReconciler(client, handler);
  const k8s::ClaimRef ref = CreateAllocated(*client, "c", Allocation({{"gpu-0"}}, ByName(kNode)));
  REQUIRE(PollUntil([&] { return handler.running() == 1; }));

  Reallocate(*client, ref, std::nullopt);
  REQUIRE(PollUntil([&] { return handler.calls().size() == 1; }));
  CHECK(absl::IsCancelled(handler.calls()[0].cancelled));
  WaitIdle(*reconciler);
  CHECK(Get(*client, ref).status.devices.empty());

  handler.HoldUntilCancelled(false);
  Reallocate(*client, ref, Allocation({{"gpu-1"}}, ByName(kNode)));
  REQUIRE(PollUntil([&] { return ConditionTrue(*client, ref, "gpu-1", kPrepared); }, absl::Seconds(20),
                    absl::Milliseconds(50)));
  CHECK(handler.calls().size() == 2);
  CHECK(handler.calls()[1].device == "gpu-1");
}

TEST_CASE(
    "Stop() cancels a hung handler call and returns, a restart asks again, past the binding timeout the "
    "handler is not asked",
    "[binding]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  auto sink = std::make_shared<testing::CapturingSink>();
  ScriptedHandler handler;
  handler.HoldUntilCancelled(true);
  auto reconciler = StartReconciler(client, handler, Options(Logger(sink)));
  CreateAllocated(*client, "hung", Allocation({{"gpu-0"}}, ByName(kNode)));
  CreateAllocated(*client, "late", Allocation({{"gpu-1"}}, ByName(kNode), absl::Now() - absl::Seconds(601)));
  REQUIRE(PollUntil([&] { return handler.running() == 1 && reconciler->Stats().timed_out == 1; }));
  reconciler->Stop();
  const std::vector<ScriptedHandler::Call> calls = handler.calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].claim == "hung");
  CHECK(absl::IsUnavailable(calls[0].cancelled));
  CHECK_FALSE(sink->Matching("Binding timeout passed").empty());
  reconciler->Stop();  // idempotent

  // Restarted mid-work: the unfinished attach is asked again, the late one not.
  handler.HoldUntilCancelled(false);
  auto restarted = StartReconciler(client, handler);
  WaitIdle(*restarted);
  const std::vector<ScriptedHandler::Call> again = handler.calls();
  REQUIRE(again.size() == 2);
  CHECK(again[1].claim == "hung");
  CHECK(again[1].cancelled.ok());
  CHECK(restarted->Stats().timed_out == 1);
}

}  // namespace
}  // namespace dra
