// example::HttpsServer with libcurl as the client, verifying the server's
// certificate as the API server verifies a webhook's: requests and bodies,
// refusals, a renewed certificate served without a restart, bad files at
// start, a stalled client; and the GPU example's dra-example-webhook behind
// it with the cpu profile.
#include "common/https_server.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "support/capturing_logger.h"
#include "support/certificate.h"
#include "support/free_port.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace {

using dra::testing::MakeSelfSignedCertificate;
using dra::testing::TempDir;
using example::HttpsRequest;
using example::HttpsResponse;
using example::HttpsServer;

struct Answer {
  CURLcode result = CURLE_OK;
  std::string error;
  long code = 0;
  std::string body;
};

size_t Append(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

size_t ReadNothingMore(char*, size_t, size_t, void* sent) {
  // One chunk of body, then the end, so that curl sends it chunked.
  if (*static_cast<bool*>(sent)) return 0;
  *static_cast<bool*>(sent) = true;
  return 0;
}

// A request to https://127.0.0.1:port/path trusting `ca_file`; a body POSTs
// it as JSON, `chunked` POSTs with Transfer-Encoding: chunked.
Answer Request(int port, const std::string& path, const std::string& ca_file, const std::string* body = nullptr,
               bool chunked = false) {
  CURL* curl = curl_easy_init();
  REQUIRE(curl != nullptr);
  Answer answer;
  char error[CURL_ERROR_SIZE] = {};
  const std::string url = absl::StrCat("https://127.0.0.1:", port, path);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  bool sent = false;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else if (chunked) {
    headers = curl_slist_append(headers, "Transfer-Encoding: chunked");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadNothingMore);
    curl_easy_setopt(curl, CURLOPT_READDATA, &sent);
  }
  answer.result = curl_easy_perform(curl);
  answer.error = error;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return answer;
}

HttpsResponse Echo(const HttpsRequest& request) {
  if (request.path == "/readyz") return {200, "text/plain", "ok"};
  return {
      200, "text/plain",
      absl::StrCat(request.method, " ", request.path, " ", request.content_type, " ", request.body.size(), " bytes")};
}

std::unique_ptr<HttpsServer> Start(HttpsServer::Options options) {
  options.host = "127.0.0.1";
  options.port = 0;
  absl::StatusOr<std::unique_ptr<HttpsServer>> server = HttpsServer::Start(options, Echo);
  INFO(server.status());
  REQUIRE(server.ok());
  return *std::move(server);
}

// Files laid out as a Secret volume lays them out: tls.crt and tls.key are
// symlinks through ..data, which names the current version's directory; an
// update writes a new directory and swaps ..data.
void InstallVersion(const std::string& dir, const std::string& version, const std::string& cert_file,
                    const std::string& key_file) {
  namespace fs = std::filesystem;
  const std::string versioned = dir + "/.." + version;
  fs::create_directory(versioned);
  fs::copy_file(cert_file, versioned + "/tls.crt");
  fs::copy_file(key_file, versioned + "/tls.key");
  fs::create_directory_symlink(".." + version, dir + "/..data_tmp");
  fs::rename(dir + "/..data_tmp", dir + "/..data");
  if (!fs::is_symlink(dir + "/tls.crt")) {
    fs::create_symlink("..data/tls.crt", dir + "/tls.crt");
    fs::create_symlink("..data/tls.key", dir + "/tls.key");
  }
}

TEST_CASE("dra-example-webhook with the cpu profile refuses every config of its driver, as the reference's",
          "[examples][webhook]") {
  TempDir dir;
  const dra::testing::CertificateFiles cert = MakeSelfSignedCertificate(dir.path(), "webhook");
  const std::string program = dir.Join("dra-example-webhook");
  std::filesystem::create_symlink(DRA_GPU_DRIVER, program);
  const int port = dra::testing::FreePort();
  const std::string log = dir.Join("webhook.log");
  absl::StatusOr<dra::testing::ChildProcess> webhook =
      dra::testing::ChildProcess::Spawn({program, "--tls-cert-file=" + cert.cert, "--tls-private-key-file=" + cert.key,
                                         absl::StrCat("--port=", port), "--device-profile=cpu"},
                                        log);
  REQUIRE(webhook.ok());
  INFO("the webhook's log:\n" << dra::testing::ReadFile(log));
  REQUIRE(dra::testing::PollUntil(
      [&] { return dra::testing::ReadFile(log).find("Webhook serving") != std::string::npos; }, absl::Minutes(1)));
  auto review = [&](const std::string& driver) {
    const nlohmann::json parameters = {{"apiVersion", "cpu.example.com/v1alpha1"}, {"kind", "CpuConfig"}};
    const nlohmann::json claim = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "ResourceClaim"},
        {"spec",
         {{"devices",
           {{"config", nlohmann::json::array({{{"opaque", {{"driver", driver}, {"parameters", parameters}}}}})}}}}}};
    const std::string body = nlohmann::json{
        {"apiVersion", "admission.k8s.io/v1"},
        {"kind", "AdmissionReview"},
        {"request",
         {{"uid", "u1"},
          {"kind", {{"group", "resource.k8s.io"}, {"version", "v1"}, {"kind", "ResourceClaim"}}},
          {"resource", {{"group", "resource.k8s.io"}, {"version", "v1"}, {"resource", "resourceclaims"}}},
          {"operation", "CREATE"},
          {"object", claim}}}}.dump();
    const Answer answer = Request(port, "/validate-resource-claim-parameters", cert.cert, &body);
    INFO(answer.error << answer.body);
    REQUIRE(answer.code == 200);
    return nlohmann::json::parse(answer.body)["response"];
  };
  const nlohmann::json refused = review("cpu.example.com");
  CHECK(refused["allowed"] == false);
  CHECK(refused["status"]["message"] ==
        "1 configs failed to validate: object at spec.devices.config[0].opaque.parameters is invalid: "
        "configuration not allowed");
  CHECK(review("gpu.example.com")["allowed"] == true);
}

}  // namespace

TEST_CASE("HTTPS server: GET and POST over verified TLS, and refusals of what it does not serve", "[https]") {
  TempDir dir;
  MakeSelfSignedCertificate(dir.path(), "a");
  HttpsServer::Options options;
  options.cert_file = dir.Join("a.crt");
  options.key_file = dir.Join("a.key");
  options.max_body_bytes = 2 << 20;
  std::unique_ptr<HttpsServer> server = Start(options);

  Answer ready = Request(server->port(), "/readyz?verbose", dir.Join("a.crt"));
  INFO(ready.error);
  CHECK(ready.result == CURLE_OK);
  CHECK(ready.code == 200);
  CHECK(ready.body == "ok");

  const std::string body(1 << 20, 'x');
  Answer posted = Request(server->port(), "/validate", dir.Join("a.crt"), &body);
  CHECK(posted.code == 200);
  CHECK(posted.body == "POST /validate application/json 1048576 bytes");

  const std::string too_big((2 << 20) + 1, 'x');
  CHECK(Request(server->port(), "/validate", dir.Join("a.crt"), &too_big).code == 413);
  CHECK(Request(server->port(), "/validate", dir.Join("a.crt"), nullptr, /*chunked=*/true).code == 501);

  // A client that does not trust the certificate fails its handshake; the
  // server goes on serving.
  MakeSelfSignedCertificate(dir.path(), "other");
  Answer untrusted = Request(server->port(), "/readyz", dir.Join("other.crt"));
  CHECK(untrusted.result == CURLE_PEER_FAILED_VERIFICATION);
  CHECK(Request(server->port(), "/readyz", dir.Join("a.crt")).code == 200);
}

TEST_CASE("HTTPS server: a renewed certificate is served to the next connection, a broken one is not", "[https]") {
  TempDir dir;
  const std::string volume = dir.Join("cert");
  std::filesystem::create_directory(volume);
  for (const std::string name : {"a", "b", "c"}) MakeSelfSignedCertificate(dir.path(), name);
  InstallVersion(volume, "v1", dir.Join("a.crt"), dir.Join("a.key"));
  auto log = std::make_shared<dra::testing::CapturingSink>();
  HttpsServer::Options options;
  options.cert_file = volume + "/tls.crt";
  options.key_file = volume + "/tls.key";
  options.logger = dra::Logger(log);
  std::unique_ptr<HttpsServer> server = Start(options);
  CHECK(Request(server->port(), "/readyz", dir.Join("a.crt")).code == 200);

  InstallVersion(volume, "v2", dir.Join("b.crt"), dir.Join("b.key"));
  CHECK(Request(server->port(), "/readyz", dir.Join("b.crt")).code == 200);
  CHECK(Request(server->port(), "/readyz", dir.Join("a.crt")).result == CURLE_PEER_FAILED_VERIFICATION);
  CHECK_FALSE(log->Matching("Loaded the renewed TLS certificate").empty());

  // A key that does not match: the server keeps the last good pair.
  InstallVersion(volume, "v3", dir.Join("c.crt"), dir.Join("b.key"));
  CHECK(Request(server->port(), "/readyz", dir.Join("b.crt")).code == 200);
  CHECK_FALSE(log->Matching("Keeping the previous TLS certificate").empty());
  CHECK_FALSE(log->Matching("does not match the certificate").empty());

  InstallVersion(volume, "v4", dir.Join("c.crt"), dir.Join("c.key"));
  CHECK(Request(server->port(), "/readyz", dir.Join("c.crt")).code == 200);
}

TEST_CASE("HTTPS server: start-up refuses files it cannot use, naming them", "[https]") {
  TempDir dir;
  MakeSelfSignedCertificate(dir.path(), "a");
  MakeSelfSignedCertificate(dir.path(), "b");
  const auto start_error = [](const std::string& cert, const std::string& key) {
    HttpsServer::Options options;
    options.port = 0;
    options.cert_file = cert;
    options.key_file = key;
    absl::StatusOr<std::unique_ptr<HttpsServer>> server = HttpsServer::Start(options, Echo);
    REQUIRE_FALSE(server.ok());
    CHECK(absl::IsInvalidArgument(server.status()));
    return std::string(server.status().message());
  };
  CHECK_THAT(start_error(dir.Join("none.crt"), dir.Join("a.key")),
             Catch::StartsWith("TLS certificate file \"" + dir.Join("none.crt") + "\": "));
  CHECK_THAT(start_error(dir.Join("a.crt"), dir.Join("a.crt")),
             Catch::StartsWith("TLS private key file \"" + dir.Join("a.crt") + "\": "));
  CHECK_THAT(start_error(dir.Join("a.crt"), dir.Join("b.key")),
             Catch::StartsWith("TLS private key file \"" + dir.Join("b.key") +
                               "\" does not match the certificate in \"" + dir.Join("a.crt") + "\""));

  HttpsServer::Options taken;
  taken.host = "127.0.0.1";
  taken.port = 0;
  taken.cert_file = dir.Join("a.crt");
  taken.key_file = dir.Join("a.key");
  absl::StatusOr<std::unique_ptr<HttpsServer>> first = HttpsServer::Start(taken, Echo);
  REQUIRE(first.ok());
  taken.port = (*first)->port();
  absl::StatusOr<std::unique_ptr<HttpsServer>> second = HttpsServer::Start(taken, Echo);
  CHECK(absl::IsUnavailable(second.status()));
  CHECK_THAT(std::string(second.status().message()),
             Catch::StartsWith(absl::StrCat("listen on HTTPS address 127.0.0.1:", taken.port, ": ")));
}

TEST_CASE("HTTPS server: a client that sends nothing holds one worker only, and stopping ends its connection",
          "[https]") {
  TempDir dir;
  MakeSelfSignedCertificate(dir.path(), "a");
  HttpsServer::Options options;
  options.cert_file = dir.Join("a.crt");
  options.key_file = dir.Join("a.key");
  options.workers = 2;
  std::unique_ptr<HttpsServer> server = Start(options);
  const int silent = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(silent, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  for (int i = 0; i < 3; ++i) CHECK(Request(server->port(), "/readyz", dir.Join("a.crt")).code == 200);
  server.reset();  // returns although the silent connection is still open
  close(silent);
}
