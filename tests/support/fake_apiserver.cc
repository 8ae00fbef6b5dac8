#include "support/fake_apiserver.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::testing {
namespace {

#ifdef DRA_FAKEAPISERVER_PATH
constexpr const char* kDefaultBinary = DRA_FAKEAPISERVER_PATH;
#else
constexpr const char* kDefaultBinary = "";
#endif
#ifdef DRA_FAKEAPISERVER_OPENAPI_PATH
constexpr const char* kDefaultOpenAPI = DRA_FAKEAPISERVER_OPENAPI_PATH;
#else
constexpr const char* kDefaultOpenAPI = "";
#endif

CURLcode GlobalCurlInit() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return result;
}

size_t AppendToString(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

}  // namespace

FakeApiServer::FakeApiServer() = default;

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start() { return Start(Options()); }

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(Options options) {
  if (CURLcode rc = GlobalCurlInit(); rc != CURLE_OK) {
    return absl::InternalError(absl::StrCat("curl_global_init: ", curl_easy_strerror(rc)));
  }
  std::string binary = options.binary_path.empty() ? kDefaultBinary : options.binary_path;
  if (binary.empty()) {
    return absl::FailedPreconditionError(
        "FakeApiServer: no binary path (Options::binary_path empty and DRA_FAKEAPISERVER_PATH not compiled in)");
  }
  if (access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("FakeApiServer: binary ", binary, " is not executable: ",
                                            std::strerror(errno), " (build the fakeapiserver target)"));
  }
  if (options.token_lines.empty()) {
    return absl::InvalidArgumentError("FakeApiServer: token_lines must not be empty");
  }
  std::vector<std::string> first = absl::StrSplit(options.token_lines.front(), ',');
  if (first.size() < 2 || first[0].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FakeApiServer: token line \"", options.token_lines.front(), "\" is not \"token,user\""));
  }

  std::unique_ptr<FakeApiServer> server(new FakeApiServer());
  server->admin_token_ = first[0];
  try {
    server->dir_ = std::make_unique<TempDir>();
    std::string tokens;
    for (const std::string& line : options.token_lines) absl::StrAppend(&tokens, line, "\n");
    WriteFile(server->token_file(), tokens);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("FakeApiServer: ", e.what()));
  }

  std::vector<std::string> args = {binary, "--cert-dir=" + server->cert_dir(),
                                   "--port-file=" + server->dir_->Join("port"), "--token-file=" + server->token_file(),
                                   "--exit-with-parent"};
  if (options.validate_schema) {
    std::string openapi = options.openapi_path.empty() ? kDefaultOpenAPI : options.openapi_path;
    if (openapi.empty()) {
      return absl::FailedPreconditionError(
          "FakeApiServer: no OpenAPI document (Options::openapi_path empty and DRA_FAKEAPISERVER_OPENAPI_PATH not "
          "compiled in); set validate_schema = false to run without");
    }
    args.push_back("--openapi=" + openapi);
  }
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn(args, server->log_file());
  if (!child.ok()) return absl::InternalError(absl::StrCat("FakeApiServer: ", child.status().message()));
  server->process_ = *std::move(child);

  // The port file appears (atomically) once the server listens and the
  // certificates are written.
  std::string how;
  bool exited = false;
  const std::string port_file = server->dir_->Join("port");
  bool ready = PollUntil(
      [&] {
        if (server->process_.Exited(&how)) return exited = true;
        std::string text = ReadFile(port_file);
        int port = 0;
        if (absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &port) && port > 0) {
          server->port_ = port;
          return true;
        }
        return false;
      },
      options.startup_timeout);
  if (exited) {
    return absl::InternalError(
        absl::StrCat("FakeApiServer: ", binary, " ", how, " before writing its port file; log:\n", server->LogTail()));
  }
  if (!ready) {
    return absl::DeadlineExceededError(absl::StrCat("FakeApiServer: no port file after ",
                                                    absl::FormatDuration(options.startup_timeout), "; log:\n",
                                                    server->LogTail()));
  }
  absl::Status last = absl::UnknownError("no request made");
  ready = PollUntil(
      [&] {
        if (server->process_.Exited(&how)) return exited = true;
        absl::StatusOr<Response> r = server->Request("GET", "/readyz", "", "");
        if (r.ok() && r->code == 200) return true;
        last = r.ok() ? absl::UnavailableError(absl::StrCat("HTTP ", r->code, ": ", r->body)) : r.status();
        return false;
      },
      options.startup_timeout);
  if (exited) {
    return absl::InternalError(
        absl::StrCat("FakeApiServer: ", binary, " ", how, " before answering /readyz; log:\n", server->LogTail()));
  }
  if (!ready) {
    return absl::DeadlineExceededError(absl::StrCat("FakeApiServer: /readyz not ready at ", server->url(), ": ",
                                                    last.ToString(), "; log:\n", server->LogTail()));
  }
  return server;
}

FakeApiServer::~FakeApiServer() = default;

std::string FakeApiServer::url() const { return absl::StrCat("https://127.0.0.1:", port_); }
std::string FakeApiServer::cert_dir() const { return dir_->Join("certs"); }
std::string FakeApiServer::ca_file() const { return dir_->Join("certs/ca.crt"); }
std::string FakeApiServer::client_cert_file() const { return dir_->Join("certs/client.crt"); }
std::string FakeApiServer::client_key_file() const { return dir_->Join("certs/client.key"); }
std::string FakeApiServer::token_file() const { return dir_->Join("tokens.csv"); }
std::string FakeApiServer::log_file() const { return dir_->Join("fakeapiserver.log"); }

std::string FakeApiServer::LogTail() const {
  std::string log = ReadFile(log_file());
  constexpr size_t kTail = 4000;
  if (log.size() > kTail) log = "..." + log.substr(log.size() - kTail);
  return log;
}

absl::StatusOr<FakeApiServer::Response> FakeApiServer::Request(const std::string& method, const std::string& path,
                                                               const std::string& body, const std::string& token,
                                                               const std::string& content_type) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  Response response;
  char error[CURL_ERROR_SIZE] = {0};
  const std::string target = url() + path;
  const std::string ca = ca_file();
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_CAINFO, ca.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendToString);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_slist* headers = nullptr;
  const std::string auth = "Authorization: Bearer " + token;
  const std::string type = "Content-Type: " + content_type;
  if (!token.empty()) headers = curl_slist_append(headers, auth.c_str());
  if (!body.empty()) headers = curl_slist_append(headers, type.c_str());
  headers = curl_slist_append(headers, "Accept: application/json");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat(method, " ", target, ": ", error[0] != '\0' ? error : curl_easy_strerror(rc)));
  }
  return response;
}

absl::StatusOr<std::string> FakeApiServer::Admin(const std::string& method, const std::string& path,
                                                 const std::string& body) const {
  absl::StatusOr<Response> r = Request(method, path, body, admin_token_);
  if (!r.ok()) return r.status();
  if (r->code < 200 || r->code > 299) {
    return absl::FailedPreconditionError(absl::StrCat(method, " ", path, ": HTTP ", r->code, ": ", r->body));
  }
  return std::move(r->body);
}

}  // namespace dra::testing
