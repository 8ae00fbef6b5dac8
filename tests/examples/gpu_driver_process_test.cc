// The GPU driver binary as a process against the fake API server, with the
// test as its kubelet: /metrics shows what it published and the API requests
// it made, /healthz follows its sockets, SIGTERM ends it with status 0, and a
// kubelet that refuses the registration ends it with status 1 (so the
// DaemonSet restarts it); annotations on its pod pin the health it streams
// to the kubelet; --device-profile=cpu publishes NUMA nodes.
#include <cstdio>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "dractl/kubelet_client.h"
#include "example_driver_process.h"
#include "support/http_get.h"
#include "support/poll.h"

namespace {

using dra::testing::HttpGet;
using dra::testing::PollUntil;

constexpr char kDriver[] = "gpu.example.com";

struct Fixture : dra::testing::ExampleDriverProcess {
  Fixture() : ExampleDriverProcess(DRA_GPU_DRIVER, kDriver, {"--num-devices=8"}) {}
};

TEST_CASE(
    "the GPU driver: /metrics shows its GPUs published and its API requests, /healthz follows its sockets, "
    "SIGTERM exits 0",
    "[examples][gpu][process]") {
  Fixture f;
  REQUIRE(f.NotifyRegistration(true, "").ok());
  INFO(f.Log());
  REQUIRE(PollUntil([&] { return absl::StrContains(f.Metrics(), "dra_resource_slice_published_devices 8\n"); },
                    absl::Seconds(20)));
  // The publisher's watch starts beside its first sync.
  CHECK(PollUntil(
      [&] { return absl::StrContains(f.Metrics(), "dra_api_requests_total{verb=\"WATCH\",code=\"200\"} 1\n"); }));
  const std::string metrics = f.Metrics();
  CHECK_THAT(metrics, Catch::Contains("dra_registered 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_resource_slice_writes_total{operation=\"create\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_api_requests_total{verb=\"POST\",code=\"201\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_background_errors_total{severity=\"recoverable\"} 0\n"));

  CHECK(HttpGet(f.port, "/healthz").first == "HTTP/1.1 200 OK");
  const std::string moved = f.DraSocket() + ".moved";
  REQUIRE(std::rename(f.DraSocket().c_str(), moved.c_str()) == 0);
  const auto [code, body] = HttpGet(f.port, "/healthz");
  CHECK(code == "HTTP/1.1 503 Service Unavailable");
  CHECK(body == "connect " + f.DraSocket() + ": No such file or directory\n");
  REQUIRE(std::rename(moved.c_str(), f.DraSocket().c_str()) == 0);
  CHECK(HttpGet(f.port, "/healthz").first == "HTTP/1.1 200 OK");

  CHECK(f.driver.Stop() == "exited with status 0");
  CHECK_FALSE(std::filesystem::exists(f.RegistrarSocket()));
  CHECK_FALSE(std::filesystem::exists(f.DraSocket()));
}

TEST_CASE("the GPU driver exits 1 when the kubelet refuses its registration, saying why", "[examples][gpu][process]") {
  Fixture f;
  f.NotifyRegistration(false, "no supported DRA version");
  std::string how;
  INFO(f.Log());
  REQUIRE(PollUntil([&] { return f.driver.Exited(&how); }, absl::Seconds(20)));
  CHECK(how == "exited with status 1");
  CHECK_THAT(f.Log(), Catch::Contains("no supported DRA version"));
  CHECK_THAT(f.Log(), Catch::Contains("fatal"));
}

TEST_CASE("the GPU driver at -v=10 never logs its bearer token", "[examples][gpu][process]") {
  dra::testing::ExampleDriverProcess f(DRA_GPU_DRIVER, kDriver, {"--num-devices=2", "-v=10", "--gpu-device-status"});
  REQUIRE(f.NotifyRegistration(true, "").ok());
  // Everything the driver does at start: the kubeconfig read, the client,
  // the list, watch and create of its slice, registration.
  REQUIRE(PollUntil([&] { return absl::StrContains(f.Metrics(), "dra_resource_slice_published_devices 2\n"); },
                    absl::Seconds(20)));
  f.StopAndCheckTokenNotLogged();
}

TEST_CASE("the GPU driver with --device-profile=cpu publishes made-up NUMA nodes as dra-example-driver's cpu profile",
          "[examples][gpu][process]") {
  dra::testing::ExampleDriverProcess f(DRA_GPU_DRIVER, "cpu.example.com",
                                       {"--device-profile=cpu", "--cpu-numa-nodes=2", "--cpus-per-numa-node=3"});
  REQUIRE(f.NotifyRegistration(true, "").ok());
  INFO(f.Log());
  REQUIRE(PollUntil([&] { return absl::StrContains(f.Metrics(), "dra_resource_slice_published_devices 2\n"); },
                    absl::Seconds(20)));
  const std::vector<nlohmann::json> slices = f.Slices();
  REQUIRE(slices.size() == 1);
  const nlohmann::json& devices = slices[0]["spec"]["devices"];
  REQUIRE(devices.size() == 2);
  CHECK(devices[1]["name"] == "numa-1");
  CHECK(devices[1]["capacity"]["cpu.example.com/cpu"]["value"] == "3");
  CHECK(devices[1]["allowMultipleAllocations"] == true);
  CHECK_THAT(f.Metrics(), Catch::Contains("dra_cpu_allocatable_cpus 6\n"));
  CHECK(f.driver.Stop() == "exited with status 0");
}

TEST_CASE("the GPU driver: annotations health.example.com/<device> on its pod pin what the kubelet is told",
          "[examples][gpu][process]") {
  namespace kc = dra::kubeletclient;
  const dra::k8s::ResourceRef pods{"", "v1", "pods", true};
  dra::testing::ExampleDriverProcess f(DRA_GPU_DRIVER, kDriver,
                                       {"--num-devices=2", "--pod-name=driver-pod", "--pod-namespace=drivers"});
  const nlohmann::json pod = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "driver-pod"}, {"namespace", "drivers"}}}};
  REQUIRE(f.client->Create(pods, "drivers", pod).ok());
  REQUIRE(f.NotifyRegistration(true, "").ok());
  INFO(f.Log());
  absl::StatusOr<std::unique_ptr<kc::HealthStream>> stream =
      kc::DraClient::Create(f.DraSocket())->WatchHealth(kc::HealthApi::kV1);
  REQUIRE(stream.ok());
  // Lists until one shows gpu-1 as `health`; each one's entries by device.
  auto wait_for = [&](const std::string& health) {
    std::map<std::string, kc::DeviceHealthEntry> last;
    while (!last.contains("gpu-1") || last.at("gpu-1").health != health) {
      absl::StatusOr<std::vector<kc::DeviceHealthEntry>> list = (*stream)->Next(absl::Seconds(60));
      REQUIRE(list.ok());
      last.clear();
      for (const kc::DeviceHealthEntry& entry : *list) last[entry.device_name] = entry;
    }
    return last;
  };
  CHECK(wait_for("HEALTHY").at("gpu-0").health == "HEALTHY");

  auto annotate = [&](const nlohmann::json& annotations) {
    REQUIRE(f.client
                ->Patch(pods, "drivers", "driver-pod", dra::k8s::PatchType::kMerge,
                        {{"metadata", {{"annotations", annotations}}}})
                .ok());
  };
  annotate({{"health.example.com/gpu-1", "unhealthy"}, {"health.example.com/gpu-0", "bogus"}});
  std::map<std::string, kc::DeviceHealthEntry> pinned = wait_for("UNHEALTHY");
  CHECK(pinned.at("gpu-1").message == "pinned by the driver pod's annotation health.example.com/gpu-1");
  CHECK(pinned.at("gpu-0").health == "HEALTHY");
  CHECK_THAT(f.Log(), Catch::Contains("Ignoring health pins with an invalid value") &&
                          Catch::Contains("health.example.com/gpu-0: bogus (want healthy, unhealthy or unknown)"));
  annotate({{"health.example.com/gpu-1", "unknown"}});
  wait_for("UNKNOWN");
  annotate({{"health.example.com/gpu-1", nullptr}, {"health.example.com/gpu-0", nullptr}});
  CHECK(wait_for("HEALTHY").at("gpu-1").message.empty());
  (*stream)->Cancel();
  CHECK(f.driver.Stop() == "exited with status 0");
}

}  // namespace
