// The GPU driver binary as a process against the fake API server, with the
// test as its kubelet: /metrics shows what it published and the API requests
// it made, /healthz follows its sockets, SIGTERM ends it with status 0, and a
// kubelet that refuses the registration ends it with status 1 (so the
// DaemonSet restarts it).
#include <cstdio>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
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

}  // namespace
