// The GPU driver binary as a process against the fake API server, with the
// test as its kubelet: /metrics shows what it published and the API requests
// it made, /healthz follows its sockets, SIGTERM ends it with status 0, and a
// kubelet that refuses the registration ends it with status 1 (so the
// DaemonSet restarts it).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dra/k8s/client.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "support/fake_apiserver.h"
#include "support/free_port.h"
#include "support/http_get.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace {

using dra::testing::ChildProcess;
using dra::testing::FreePort;
using dra::testing::HttpGet;
using dra::testing::PollUntil;
using nlohmann::json;

constexpr char kNode[] = "node-1";
constexpr char kDriver[] = "gpu.example.com";

struct Fixture {
  dra::testing::TempDir dir;
  std::unique_ptr<dra::testing::FakeApiServer> server;
  int port = FreePort();
  ChildProcess driver;

  Fixture() {
    dra::testing::FakeApiServer::Options options;
    options.extra_args = {"--quiet"};
    absl::StatusOr<std::unique_ptr<dra::testing::FakeApiServer>> started = dra::testing::FakeApiServer::Start(options);
    INFO(started.status().ToString());
    REQUIRE(started.ok());
    server = *std::move(started);
    dra::k8s::ClientConfig config;
    config.server = server->url();
    config.ca_file = server->ca_file();
    config.bearer_token = server->admin_token();
    absl::StatusOr<std::shared_ptr<dra::k8s::Client>> client = dra::k8s::Client::Create(config);
    REQUIRE(client.ok());
    const json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kNode}}}};
    REQUIRE((*client)->Create(dra::k8s::kNodes, "", node).ok());
    std::ofstream(dir.Join("kubeconfig")) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
                                          << server->url() << "\n    certificate-authority: " << server->ca_file()
                                          << "\nusers:\n- name: u\n  user:\n    token: " << server->admin_token()
                                          << "\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n"
                                          << "current-context: c\n";
    for (const char* sub : {"registry", "plugins", "cdi"}) std::filesystem::create_directories(dir.Join(sub));
    absl::StatusOr<ChildProcess> spawned = ChildProcess::Spawn(
        {DRA_GPU_DRIVER, "--node-name=" + std::string(kNode), "--kubeconfig=" + dir.Join("kubeconfig"),
         "--cdi-root=" + dir.Join("cdi"), "--kubelet-registrar-directory-path=" + dir.Join("registry"),
         "--kubelet-plugins-directory-path=" + dir.Join("plugins"),
         "--http-endpoint=127.0.0.1:" + std::to_string(port), "--num-devices=8"},
        dir.Join("driver.log"));
    REQUIRE(spawned.ok());
    driver = *std::move(spawned);
    INFO(Log());
    REQUIRE(PollUntil([&] { return std::filesystem::exists(RegistrarSocket()); }, absl::Seconds(20)));
  }

  std::string RegistrarSocket() const { return dir.Join(absl::StrCat("registry/", kDriver, "-reg.sock")); }
  std::string DraSocket() const { return dir.Join(absl::StrCat("plugins/", kDriver, "/dra.sock")); }
  std::string Log() const { return dra::testing::ReadFile(dir.Join("driver.log")); }
  std::string Metrics() const { return HttpGet(port, "/metrics").second; }

  // What the kubelet tells the plugin after GetInfo. A plugin told that it
  // is refused may be gone before it answers.
  grpc::Status NotifyRegistration(bool registered, const std::string& error) {
    auto stub = pluginregistration::Registration::NewStub(
        grpc::CreateChannel("unix:" + RegistrarSocket(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext info_context;
    pluginregistration::InfoRequest request;
    pluginregistration::PluginInfo info;
    REQUIRE(stub->GetInfo(&info_context, request, &info).ok());
    CHECK(info.name() == kDriver);
    grpc::ClientContext context;
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(registered);
    status.set_error(error);
    pluginregistration::RegistrationStatusResponse response;
    return stub->NotifyRegistrationStatus(&context, status, &response);
  }
};

TEST_CASE("the GPU driver: /metrics shows its GPUs published and its API requests, /healthz follows its sockets, "
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

}  // namespace
