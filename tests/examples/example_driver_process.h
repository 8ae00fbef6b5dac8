// An example driver binary as a process against the fake API server (with
// a Node), its sockets and CDI dir in a temp dir, and the test as its kubelet.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "dra/k8s/client.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "support/fake_api_claims.h"
#include "support/fake_apiserver.h"
#include "support/free_port.h"
#include "support/http_get.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::testing {

inline constexpr char kExampleNode[] = "node-1";

// A kubeconfig for `server`'s admin, at `path`.
inline void WriteExampleKubeconfig(const FakeApiServer& server, const std::string& path) {
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " << server.url()
                      << "\n    certificate-authority: " << server.ca_file()
                      << "\nusers:\n- name: u\n  user:\n    token: " << server.admin_token()
                      << "\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n"
                      << "current-context: c\n";
}

// The command line of example driver `binary` on kExampleNode with
// <dir>/kubeconfig, its CDI specs in <dir>/cdi, its sockets in
// <dir>/registry and <dir>/plugins, then `flags`; --driver-name with
// `name_flag` (examples/minimal has none).
inline std::vector<std::string> ExampleDriverArgv(const std::string& binary, const std::string& driver_name,
                                                  const TempDir& dir, int http_port,
                                                  const std::vector<std::string>& flags, bool name_flag = true) {
  std::vector<std::string> argv = {binary,
                                   "--node-name=" + std::string(kExampleNode),
                                   "--kubeconfig=" + dir.Join("kubeconfig"),
                                   "--cdi-root=" + dir.Join("cdi"),
                                   "--kubelet-registrar-directory-path=" + dir.Join("registry"),
                                   "--kubelet-plugins-directory-path=" + dir.Join("plugins"),
                                   "--http-endpoint=127.0.0.1:" + std::to_string(http_port)};
  if (name_flag) argv.push_back("--driver-name=" + driver_name);
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

// What the kubelet tells a plugin at `registrar_socket` after GetInfo (whose
// name must be `driver_name`). A plugin told that it is refused may be gone
// before it answers.
inline grpc::Status NotifyPluginRegistration(const std::string& registrar_socket, const std::string& driver_name,
                                             bool registered, const std::string& error) {
  auto stub = pluginregistration::Registration::NewStub(
      grpc::CreateChannel("unix:" + registrar_socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext info_context;
  pluginregistration::InfoRequest request;
  pluginregistration::PluginInfo info;
  REQUIRE(stub->GetInfo(&info_context, request, &info).ok());
  CHECK(info.name() == driver_name);
  grpc::ClientContext context;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(registered);
  status.set_error(error);
  pluginregistration::RegistrationStatusResponse response;
  return stub->NotifyRegistrationStatus(&context, status, &response);
}

struct ExampleDriverProcess {
  TempDir dir;
  std::unique_ptr<FakeApiServer> server;
  std::shared_ptr<k8s::Client> client;
  std::string driver_name;
  int port = FreePort();
  ChildProcess driver;

  // Starts `binary` as driver `driver_name` with the node's flags and `flags`
  // (and --driver-name with `name_flag`); returns once its registration
  // socket is there.
  ExampleDriverProcess(const std::string& binary, std::string name, const std::vector<std::string>& flags,
                       bool name_flag = true)
      : driver_name(std::move(name)) {
    server = StartServer();
    client = MakeClient(*server);
    const nlohmann::json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kExampleNode}}}};
    REQUIRE(client->Create(k8s::kNodes, "", node).ok());
    WriteExampleKubeconfig(*server, dir.Join("kubeconfig"));
    for (const char* sub : {"registry", "plugins", "cdi"}) std::filesystem::create_directories(dir.Join(sub));
    absl::StatusOr<ChildProcess> spawned = ChildProcess::Spawn(
        ExampleDriverArgv(binary, driver_name, dir, port, flags, name_flag), dir.Join("driver.log"));
    REQUIRE(spawned.ok());
    driver = *std::move(spawned);
    INFO(Log());
    REQUIRE(PollUntil([&] { return std::filesystem::exists(RegistrarSocket()); }, absl::Seconds(20)));
  }

  std::string RegistrarSocket() const { return dir.Join(absl::StrCat("registry/", driver_name, "-reg.sock")); }
  std::string DraSocket() const { return dir.Join(absl::StrCat("plugins/", driver_name, "/dra.sock")); }
  std::string Log() const { return ReadFile(dir.Join("driver.log")); }
  // Stops the driver, which must exit 0, and checks that its log of a
  // start-up (registered, slice created) never shows its bearer token.
  void StopAndCheckTokenNotLogged() {
    CHECK(driver.Stop() == "exited with status 0");
    const std::string log = Log();
    REQUIRE_FALSE(server->admin_token().empty());
    INFO(log);
    CHECK_THAT(log, Catch::Contains("Registered with the kubelet") && Catch::Contains("Created ResourceSlice"));
    CHECK_THAT(log, !Catch::Contains(server->admin_token()));
  }
  std::string Metrics() const { return HttpGet(port, "/metrics").second; }

  // The driver's ResourceSlices in the API server.
  std::vector<nlohmann::json> Slices() const {
    k8s::ListOptions options;
    options.field_selector = "spec.driver=" + driver_name;
    absl::StatusOr<k8s::ListResult> list = client->ListAll(k8s::kResourceSlices, "", options);
    REQUIRE(list.ok());
    return list->items;
  }

  // What the kubelet tells the plugin after GetInfo. A plugin told that it
  // is refused may be gone before it answers.
  grpc::Status NotifyRegistration(bool registered, const std::string& error) {
    return NotifyPluginRegistration(RegistrarSocket(), driver_name, registered, error);
  }
};

}  // namespace dra::testing
