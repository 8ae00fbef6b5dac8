// Helper::PublishResources: the Helper's ResourceSlice publisher over
// Options::kube_client, against the fake API server. The publisher itself is
// tested in publisher_test.cc; this covers what the Helper adds: claims read
// through the same client when no claim source is given, errors routed to
// Driver::HandleError, the slices left in place when the Helper stops.
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "dra/k8s/device_attributes.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/resourceslice/split.h"
#include "dractl/kubelet_client.h"
#include "support/discard_logger.h"
#include "support/fake_apiserver.h"
#include "support/http_get.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletplugin::Helper;
using kubeletplugin::Options;
using nlohmann::json;
using testing::FakeApiServer;
using testing::PollUntil;
using testing::TestDriver;

constexpr char kNode[] = "node-1";

struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<FakeApiServer> server;
  std::shared_ptr<k8s::Client> client;
  std::string node_uid;

  Fixture() {
    FakeApiServer::Options server_options;
    server_options.extra_args = {"--quiet"};
    absl::StatusOr<std::unique_ptr<FakeApiServer>> started = FakeApiServer::Start(server_options);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    server = *std::move(started);
    k8s::ClientConfig config;
    config.server = server->url();
    config.ca_file = server->ca_file();
    config.bearer_token = server->admin_token();
    config.qps = 0;
    config.protobuf = false;  // the fake speaks JSON only: its request counts stay exact
    absl::StatusOr<std::shared_ptr<k8s::Client>> made = k8s::Client::Create(config);
    REQUIRE(made.ok());
    client = *made;
    absl::StatusOr<json> node =
        client->Create(k8s::kNodes, "", json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kNode}}}});
    REQUIRE(node.ok());
    node_uid = (*node)["metadata"]["uid"];
    std::filesystem::create_directories(dir.Join("plugins_registry"));
  }

  // No claim source: the Helper reads claims through the kube client.
  Options MakeOptions() const {
    Options options;
    options.driver_name = testing::kTestDriverName;
    options.node_name = kNode;
    options.registrar_dir = dir.Join("plugins_registry");
    options.plugin_data_dir = dir.Join("plugins/gpu.example.com");
    options.kube_client = client;
    options.cdi.enabled = false;
    options.logger = testing::DiscardLogger();
    options.resource_slices.drift_repair_delay = absl::Milliseconds(50);
    return options;
  }

  std::vector<json> Slices() {
    k8s::ListOptions options;
    options.field_selector = absl::StrCat("spec.driver=", testing::kTestDriverName);
    absl::StatusOr<k8s::ListResult> list = client->ListAll(k8s::kResourceSlices, "", options);
    REQUIRE(list.ok());
    return list->items;
  }
};

resourceslice::DriverResources TwoGpus() {
  std::vector<k8s::Device> devices(2);
  devices[0].name = "gpu-0";
  devices[1].name = "gpu-1";
  resourceslice::DriverResources resources;
  resources.pools[kNode].slices = resourceslice::SplitIntoSlices(std::move(devices));
  return resources;
}

// TwoGpus, with a device name the API refuses.
resourceslice::DriverResources InvalidGpus() {
  resourceslice::DriverResources resources = TwoGpus();
  resources.pools[kNode].slices[0].devices[1].name = "GPU_1";
  return resources;
}

TEST_CASE("PublishResources publishes through kube_client, errors reach the driver, Stop keeps the slices",
          "[helper][publish]") {
  Fixture f;
  TestDriver driver;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, f.MakeOptions());
  INFO(helper.status().ToString());
  REQUIRE(helper.ok());
  CHECK((*helper)->ResourceSliceStats().creates == 0);

  REQUIRE((*helper)->PublishResources(TwoGpus()).ok());
  REQUIRE(PollUntil([&] { return f.Slices().size() == 1; }, absl::Seconds(20)));
  const json slice = f.Slices().at(0);
  CHECK(slice["spec"]["nodeName"] == kNode);
  CHECK(slice["spec"]["devices"].size() == 2);
  CHECK(slice["metadata"]["ownerReferences"][0]["uid"] == f.node_uid);
  CHECK(absl::StartsWith(slice["metadata"]["name"].get<std::string>(), "00000-gpu.example.com-node-1-"));
  // The slice can show on the server before the publisher has counted it.
  CHECK(PollUntil([&] { return (*helper)->ResourceSliceStats().creates == 1; }));

  // An invalid pool is never sent; the driver hears why.
  REQUIRE((*helper)->PublishResources(InvalidGpus()).ok());
  REQUIRE(PollUntil([&] { return !driver.errors().empty(); }, absl::Seconds(20)));
  const std::string error = driver.errors().at(0);
  CHECK_THAT(error, Catch::StartsWith("ResourceSlice publisher: ") && Catch::Contains("(recoverable): ") &&
                        Catch::Contains("spec.devices[1].name") && Catch::Contains("GPU_1"));
  CHECK((*helper)->ResourceSliceStats().updates == 0);

  (*helper)->Stop();
  CHECK(f.Slices().size() == 1);
  CHECK(absl::IsFailedPrecondition((*helper)->PublishResources(TwoGpus())));
}

TEST_CASE(
    "Names qualified with the driver's own domain: refused by default as by the Go helper 0.38, published "
    "with kWarn",
    "[helper][publish]") {
  Fixture f;
  resourceslice::DriverResources qualified = TwoGpus();
  qualified.pools[kNode].slices[0].devices[0].attributes[absl::StrCat(testing::kTestDriverName, "/model")] =
      k8s::StringAttribute("A100");
  {
    TestDriver driver;
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, f.MakeOptions());
    REQUIRE(helper.ok());
    REQUIRE((*helper)->PublishResources(qualified).ok());
    REQUIRE(PollUntil([&] { return !driver.errors().empty(); }, absl::Seconds(20)));
    CHECK_THAT(driver.errors().at(0),
               Catch::Contains("attributes[gpu.example.com/model]") &&
                   Catch::Contains("use unqualified \"model\", the driver name is added implicitly"));
    CHECK(f.Slices().empty());
    (*helper)->Stop();
  }
  TestDriver driver;
  Options options = f.MakeOptions();
  options.resource_slices.driver_domain_names = resourceslice::DriverDomainNames::kWarn;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
  REQUIRE(helper.ok());
  REQUIRE((*helper)->PublishResources(qualified).ok());
  REQUIRE(PollUntil([&] { return f.Slices().size() == 1; }, absl::Seconds(20)));
  CHECK(f.Slices().at(0)["spec"]["devices"][0]["attributes"].contains("gpu.example.com/model"));
  CHECK(driver.errors().empty());
  (*helper)->Stop();
}

// A driver whose HandleError publishes again, as the Go helper allows from
// 1.38 (DRAPlugin.HandleError "may call PublishResources ... must not call
// Stop"): once it is given the Helper, the first publisher error makes it
// wait for `release` when `hold` is set, then publish `replacement` and keep
// what that returned.
class RepublishingDriver : public TestDriver {
 public:
  void HandleError(const absl::Status& status, kubeletplugin::ErrorSeverity severity,
                   std::string_view context) override {
    TestDriver::HandleError(status, severity, context);
    if (helper == nullptr || handled.HasBeenNotified()) return;
    in_handler.Notify();
    if (hold) release.WaitForNotification();
    republished = helper->PublishResources(replacement);
    handled.Notify();
  }

  Helper* helper = nullptr;
  resourceslice::DriverResources replacement = TwoGpus();
  bool hold = false;
  absl::Notification in_handler;
  absl::Notification release;
  absl::Notification handled;
  absl::Status republished;
};

// Starts a Helper for `driver` and publishes a pool the API refuses, so that
// the driver's HandleError runs.
std::unique_ptr<Helper> StartAndPublishInvalid(const Fixture& f, RepublishingDriver& driver) {
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, f.MakeOptions());
  REQUIRE(helper.ok());
  driver.helper = helper->get();
  REQUIRE((*helper)->PublishResources(InvalidGpus()).ok());
  return *std::move(helper);
}

TEST_CASE("HandleError may call PublishResources: the publisher's error handler publishes the pool anew",
          "[helper][publish]") {
  Fixture f;
  RepublishingDriver driver;
  const std::unique_ptr<Helper> helper = StartAndPublishInvalid(f, driver);
  driver.handled.WaitForNotification();
  CHECK(driver.republished.ok());
  REQUIRE(PollUntil([&] { return f.Slices().size() == 1; }, absl::Seconds(20)));
  CHECK(f.Slices().at(0)["spec"]["devices"].size() == 2);
  helper->Stop();
}

TEST_CASE("HandleError may call PublishResources while the Helper stops: refused, and Stop returns",
          "[helper][publish]") {
  Fixture f;
  RepublishingDriver driver;
  driver.hold = true;
  const std::unique_ptr<Helper> helper = StartAndPublishInvalid(f, driver);
  driver.in_handler.WaitForNotification();
  // Stop waits for the publisher, which waits for the handler.
  std::thread stopper([&] { helper->Stop(); });
  REQUIRE(
      PollUntil([&] { return absl::IsFailedPrecondition(helper->PublishResources(TwoGpus())); }, absl::Seconds(60)));
  driver.release.Notify();
  driver.handled.WaitForNotification();
  stopper.join();
  CHECK(absl::IsFailedPrecondition(driver.republished));
}

// This process's threads by name (/proc/self/task/*/comm).
std::map<std::string, int> ThreadsByName() {
  std::map<std::string, int> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string comm = testing::ReadFile(task.path().string() + "/comm");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    ++names[comm];
  }
  return names;
}

int Count(const std::map<std::string, int>& names) {
  int n = 0;
  for (const auto& [name, count] : names) n += count;
  return n;
}

TEST_CASE("threads at idle: a Helper serving both sockets, /metrics and a published pool runs 4 of its own",
          "[helper][publish][threads]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  options.http_endpoint = "127.0.0.1:0";
  const std::map<std::string, int> before = ThreadsByName();
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, options);
  REQUIRE(helper.ok());
  REQUIRE((*helper)->PublishResources(TwoGpus()).ok());
  REQUIRE(PollUntil([&] { return (*helper)->ResourceSliceStats().creates == 1; }, absl::Seconds(20)));
  std::map<std::string, int> own, grpc;  // the SDK's threads are named dra-*
  for (const auto& [name, count] : ThreadsByName()) {
    auto it = before.find(name);
    const int added = count - (it == before.end() ? 0 : it->second);
    if (added != 0) (absl::StartsWith(name, "dra-") ? own : grpc)[name] = added;
  }
  INFO("gRPC's threads: " << Count(grpc));
  for (const auto& [name, count] : grpc) INFO(name << ": " << count);
  // The HTTP server, the orphan check, the publisher and the informer of
  // the node's slices (the client's I/O thread was there before: the
  // test's). One slice is written without the work pool: it starts no thread.
  CHECK(own ==
        std::map<std::string, int>{{"dra-http", 1}, {"dra-informer", 1}, {"dra-orphans", 1}, {"dra-publisher", 1}});
}

TEST_CASE("/metrics: the devices published, slice writes, API requests by verb and code, background errors",
          "[helper][publish][metrics]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  options.http_endpoint = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, options);
  REQUIRE(helper.ok());
  auto metrics = [&] { return testing::HttpGet((*helper)->http_port(), "/metrics").second; };
  CHECK_THAT(metrics(), !Catch::Contains("dra_resource_slice_published_devices"));

  REQUIRE((*helper)->PublishResources(TwoGpus()).ok());
  REQUIRE(PollUntil([&] { return absl::StrContains(metrics(), "dra_resource_slice_published_devices 2\n"); }));
  const std::string published = metrics();
  CHECK_THAT(published, Catch::Contains("dra_resource_slice_writes_total{operation=\"create\"} 1\n"));
  CHECK_THAT(published, Catch::Contains("dra_resource_slice_writes_total{operation=\"update\"} 0\n"));
  // The fixture's client made the Node; the publisher read it, listed,
  // watched and created the slice.
  CHECK_THAT(published, Catch::Contains("dra_api_requests_total{verb=\"POST\",code=\"201\"} 2\n"));
  CHECK_THAT(published, Catch::Contains("dra_api_requests_total{verb=\"GET\",code=\"200\"} "));
  // The watch starts beside the first sync.
  CHECK(PollUntil(
      [&] { return absl::StrContains(metrics(), "dra_api_requests_total{verb=\"WATCH\",code=\"200\"} 1\n"); }));
  CHECK_THAT(published, Catch::Contains("dra_background_errors_total{severity=\"recoverable\"} 0\n"));

  // An invalid pool: nothing of it is published, and the error is counted.
  resourceslice::DriverResources invalid = TwoGpus();
  invalid.pools[kNode].slices[0].devices[1].name = "GPU_1";
  REQUIRE((*helper)->PublishResources(invalid).ok());
  REQUIRE(PollUntil([&] { return absl::StrContains(metrics(), "dra_resource_slice_published_devices 0\n"); }));
  CHECK(PollUntil(
      [&] { return absl::StrContains(metrics(), "dra_background_errors_total{severity=\"recoverable\"} 1\n"); }));
  CHECK_THAT(metrics(), Catch::Contains("dra_background_errors_total{severity=\"fatal\"} 0\n"));
}

TEST_CASE("PublishResources without a kube_client fails, and the Helper keeps serving", "[helper][publish]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  options.kube_client = nullptr;
  options.claim_source = std::make_shared<kubeletplugin::InMemoryClaimSource>();
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, options);
  REQUIRE(helper.ok());
  absl::Status status = (*helper)->PublishResources(TwoGpus());
  CHECK(absl::IsFailedPrecondition(status));
  CHECK_THAT(std::string(status.message()), Catch::Contains("options.kube_client"));

  options.claim_source = nullptr;
  CHECK_THAT(Helper::Start(driver, options).status().ToString(),
             Catch::Contains("options.claim_source: Required value: set it or options.kube_client"));
}

TEST_CASE("without a claim source, claims are read through kube_client", "[helper][publish]") {
  Fixture f;
  k8s::ResourceClaim claim = testing::AllocatedClaim("default", "c1", "");
  json body = k8s::ToJson(claim);
  body["metadata"].erase("uid");
  const json allocation = body["status"]["allocation"];
  body.erase("status");
  absl::StatusOr<json> created = f.client->Create(k8s::kResourceClaims, "default", body);
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  k8s::PatchOptions status;
  status.subresource = "status";
  REQUIRE(f.client
              ->Patch(k8s::kResourceClaims, "default", "c1", k8s::PatchType::kMerge,
                      json{{"status", {{"allocation", allocation}}}}, status)
              .ok());
  const std::string uid = (*created)["metadata"]["uid"];

  TestDriver driver;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, f.MakeOptions());
  REQUIRE(helper.ok());
  std::unique_ptr<kubeletclient::DraClient> kubelet = kubeletclient::DraClient::Create((*helper)->dra_socket_path());
  const std::vector<k8s::ClaimRef> claims = {{"default", "c1", uid}};
  absl::StatusOr<std::map<std::string, kubeletclient::PrepareOutcome>> prepared =
      kubelet->NodePrepareResources(kubeletclient::DraApi::kV1, claims);
  INFO(prepared.status().ToString());
  REQUIRE(prepared.ok());
  CHECK(prepared->at(uid).error.empty());
  CHECK(prepared->at(uid).devices.size() == 1);
  CHECK(driver.prepared_uids() == std::vector<std::string>{uid});
}

}  // namespace
}  // namespace dra
