// Runs the fake Kubernetes API server (tests/support/fakeapiserver, a Go
// program) in a child process for integration tests.
//
//   auto server = dra::testing::FakeApiServer::Start();
//   ASSERT_TRUE(server.ok()) << server.status();
//   // point the SDK at (*server)->url() with CA (*server)->ca_file() and
//   // token (*server)->admin_token(); inject faults through Admin():
//   (*server)->Admin("POST", "/fake/fail",
//                    R"({"verb":"CREATE","resource":"resourceslices","status":429})");
//
// Each instance has its own temporary directory (token file, certificates,
// port file, log). The destructor sends SIGTERM and waits for the process.
// See tests/support/fakeapiserver/README.md for endpoints and semantics.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "support/subprocess.h"

namespace dra::testing {

class TempDir;

class FakeApiServer {
 public:
  struct Options {
    // The fakeapiserver binary. Default (empty): the one CMake builds
    // (DRA_FAKEAPISERVER_PATH).
    std::string binary_path;
    // OpenAPI v3 document that request bodies are validated against.
    // Default (empty): the reference copy of resource.k8s.io/v1.
    std::string openapi_path;
    // Default true. False starts the server without schema validation.
    bool validate_schema = true;
    // More flags, e.g. {"--readonly-users=reader", "--history=5",
    // "--drop-fields=spec.devices[].taints"}. Default: none.
    std::vector<std::string> extra_args;
    // Lines of the token file, "token,user". The first one is the admin
    // token. Default: {"admin-token,admin"}.
    std::vector<std::string> token_lines = {"admin-token,admin"};
    // How long to wait for the port file and /readyz. Default 30s.
    absl::Duration startup_timeout = absl::Seconds(30);
  };

  // An HTTP response: status code and body.
  struct Response {
    long code = 0;
    std::string body;
  };

  // Starts the server and waits until it answers /readyz.
  static absl::StatusOr<std::unique_ptr<FakeApiServer>> Start();
  static absl::StatusOr<std::unique_ptr<FakeApiServer>> Start(Options options);

  // Sends SIGTERM and waits for the process (SIGKILL after 10s).
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // "https://127.0.0.1:<port>".
  std::string url() const;
  int port() const { return port_; }
  // The CA that signed the serving certificate: cert_dir() + "/ca.crt".
  std::string ca_file() const;
  // Holds ca.crt, client-ca.crt, client.crt and client.key (a client
  // certificate whose CN is the --client-cert-user, default "cert-user").
  std::string cert_dir() const;
  std::string client_cert_file() const;
  std::string client_key_file() const;
  // The token of the first token line.
  std::string admin_token() const { return admin_token_; }
  std::string token_file() const;
  // The server's stderr (one line per request).
  std::string log_file() const;
  pid_t pid() const { return process_.pid(); }

  // Calls an endpoint with the admin token, e.g. Admin("POST", "/fake/reset", "{}")
  // or Admin("GET", "/fake/requests"). Returns the body of a 2xx response;
  // otherwise an error naming the method, path, status code and body.
  absl::StatusOr<std::string> Admin(const std::string& method, const std::string& path,
                                    const std::string& body = "") const;

  // Any request. token empty: no Authorization header. Errors only when no
  // HTTP response was received.
  absl::StatusOr<Response> Request(const std::string& method, const std::string& path, const std::string& body,
                                   const std::string& token,
                                   const std::string& content_type = "application/json") const;

 private:
  FakeApiServer();
  std::string LogTail() const;

  std::unique_ptr<TempDir> dir_;
  ChildProcess process_;
  int port_ = 0;
  std::string admin_token_;
};

}  // namespace dra::testing
