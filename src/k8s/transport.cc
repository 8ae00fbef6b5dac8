#include "k8s/transport.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "base/thread_name.h"
#include "k8s/curl_library.h"

namespace dra::k8s::internal {

namespace {

// The Accept headers of a request, by what it asks for.
constexpr char kAcceptJson[] = "Accept: application/json";
constexpr char kAcceptProtobuf[] = "Accept: application/vnd.kubernetes.protobuf, application/json";
constexpr char kAcceptMetadataJson[] = "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
constexpr char kAcceptMetadataProtobuf[] =
    "Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, "
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
// Idle easy handles kept for reuse. Connections belong to the multi handle,
// not to easy handles.
constexpr size_t kMaxPooledHandles = 16;
// Connections to the API server at once. Over HTTP/2 (negotiated by ALPN on
// TLS) all requests are streams on one connection; this bounds HTTP/1.1
// (plain http, or a server or proxy without h2), where further requests wait
// for a free connection.
constexpr long kMaxHostConnections = 16;
// Idle connections the multi handle keeps open.
constexpr long kMaxIdleConnections = 16;

size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  if (size * count > response->max_body - response->body.size()) {
    response->body_too_large = true;
    return 0;  // libcurl stops the transfer: CURLE_WRITE_ERROR
  }
  response->body.append(data, size * count);
  return size * count;
}

// Keeps the Retry-After header of the final response.
size_t CaptureHeader(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  absl::string_view line(data, size * count);
  if (absl::StartsWith(line, "HTTP/")) {
    response->retry_after.clear();  // a new response (after 100 Continue)
    response->content_type.clear();
  } else if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    response->retry_after = std::string(absl::StripAsciiWhitespace(line.substr(12)));
  } else if (absl::StartsWithIgnoreCase(line, "content-type:")) {
    response->content_type = std::string(absl::StripAsciiWhitespace(line.substr(13)));
  }
  return size * count;
}

void SetMethodAndBody(CURL* h, const HttpRequest& request) {
  if (request.method == "GET") {
    Curl().easy_setopt(h, CURLOPT_HTTPGET, 1L);
    return;
  }
  if (request.method != "POST") Curl().easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method == "POST") {
    Curl().easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    Curl().easy_setopt(h, CURLOPT_COPYPOSTFIELDS, request.body.c_str());
  }
}

}  // namespace

bool IsTlsAlert(const std::string& curl_error) { return absl::StrContains(curl_error, "alert"); }

CurlLists::~CurlLists() {
  Curl().slist_free_all(headers);
  Curl().slist_free_all(connect_to);
}

Transport::~Transport() {
  if (io_thread_.joinable()) {
    {
      dra::MutexLock lock(&io_mu_);
      io_stop_ = true;
    }
    Curl().multi_wakeup(multi_);
    io_thread_.join();
  }
  if (multi_ != nullptr) Curl().multi_cleanup(multi_);
  for (CURL* handle : pool_) Curl().easy_cleanup(handle);
  if (tls_sessions_ != nullptr) Curl().share_cleanup(tls_sessions_);
}

absl::Status Transport::Init() {
  if (absl::Status status = ParseServer(); !status.ok()) return status;
  user_agent_ = config_.user_agent.empty() ? DefaultUserAgent() : config_.user_agent;
  return CheckTlsConfig();
}

absl::Status Transport::ParseServer() {
  std::string server = config_.server;
  if (server.empty()) return absl::InvalidArgumentError("client config: server is empty");
  if (server.find("://") == std::string::npos) server = "https://" + server;

  CURLU* url = Curl().url();
  auto free_url = [&] { Curl().url_cleanup(url); };
  if (Curl().url_set(url, CURLUPART_URL, server.c_str(), 0) != CURLUE_OK) {
    free_url();
    return absl::InvalidArgumentError(absl::StrCat("client config: server \"", config_.server, "\" is not a URL"));
  }
  auto part = [&](CURLUPart which, unsigned flags) -> std::string {
    char* text = nullptr;
    if (Curl().url_get(url, which, &text, flags) != CURLUE_OK || text == nullptr) return "";
    std::string out(text);
    Curl().free(text);
    return out;
  };
  std::string scheme = absl::AsciiStrToLower(part(CURLUPART_SCHEME, 0));
  std::string host = part(CURLUPART_HOST, 0);
  std::string port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  std::string prefix = part(CURLUPART_PATH, 0);
  free_url();
  if (scheme != "https" && scheme != "http") {
    return absl::InvalidArgumentError(
        absl::StrCat("client config: server \"", config_.server, "\": scheme must be https or http"));
  }
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!config_.tls_server_name.empty() && scheme == "https") {
    base_url_ = absl::StrCat(scheme, "://", config_.tls_server_name, ":", port, prefix);
    connect_to_ = absl::StrCat(config_.tls_server_name, ":", port, ":", host, ":", port);
    host_header_ = absl::StrCat("Host: ", host, ":", port);
  } else {
    base_url_ = absl::StrCat(scheme, "://", host, ":", port, prefix);
  }
  return absl::OkStatus();
}

absl::Status Transport::CheckTlsConfig() const {
  if (config_.insecure_skip_tls_verify && (!config_.ca_file.empty() || !config_.ca_data.empty())) {
    return absl::InvalidArgumentError(
        "client config: specifying a root certificates file with the insecure flag is not allowed");
  }
  const bool has_cert = !config_.client_cert_file.empty() || !config_.client_cert_data.empty();
  const bool has_key = !config_.client_key_file.empty() || !config_.client_key_data.empty();
  if (has_cert != has_key) {
    return absl::InvalidArgumentError("client config: client certificate and client key must be given together");
  }
  for (const auto& [what, path] : {std::pair<const char*, const std::string&>{"ca_file", config_.ca_file},
                                   {"client_cert_file", config_.client_cert_file},
                                   {"client_key_file", config_.client_key_file}}) {
    if (!path.empty() && ::access(path.c_str(), R_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("client config: ", what, ": cannot read ", path, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::Status Transport::Start() {
  tls_sessions_ = Curl().share_init();
  if (tls_sessions_ == nullptr) return absl::ResourceExhaustedError("client: cannot allocate a curl share handle");
  Curl().share_setopt(tls_sessions_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  Curl().share_setopt(tls_sessions_, CURLSHOPT_LOCKFUNC, &Transport::LockShare);
  Curl().share_setopt(tls_sessions_, CURLSHOPT_UNLOCKFUNC, &Transport::UnlockShare);
  Curl().share_setopt(tls_sessions_, CURLSHOPT_USERDATA, this);
  multi_ = Curl().multi_init();
  if (multi_ == nullptr) return absl::ResourceExhaustedError("client: cannot allocate a curl multi handle");
  Curl().multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
  Curl().multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, kMaxHostConnections);
  Curl().multi_setopt(multi_, CURLMOPT_MAXCONNECTS, kMaxIdleConnections);
  return base::StartNamedThread(io_thread_, "dra-k8s-io", "client: cannot start the I/O thread", [this] { IoLoop(); });
}

void Transport::IoLoop() {
  std::vector<Transfer*> adding;
  std::vector<Transfer*> cancelling;
  std::set<Transfer*> running_transfers;
  long streams = 0;
  // Over HTTP/1.1 each watch holds a connection while it lasts: the bound
  // is on the connections left for requests.
  auto count_stream = [&](const Transfer* transfer, long delta) {
    if (!transfer->stream) return;
    streams += delta;
    Curl().multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, kMaxHostConnections + streams);
  };
  auto take = [&](Transfer* transfer) {
    running_transfers.erase(transfer);
    count_stream(transfer, -1);
  };
  while (true) {
    {
      dra::MutexLock lock(&io_mu_);
      // Callers hold the client while they wait, so nothing is in flight
      // when it is destroyed.
      if (io_stop_) break;
      adding.swap(io_submitted_);
      cancelling.swap(io_cancelled_);
    }
    for (Transfer* transfer : adding) {
      if (Curl().multi_add_handle(multi_, transfer->easy) != CURLM_OK) {
        transfer->Complete(CURLE_FAILED_INIT);
        continue;
      }
      running_transfers.insert(transfer);
      count_stream(transfer, +1);
    }
    adding.clear();
    // After the adds: a transfer cancelled right after it was submitted is
    // in both. Its owner keeps it until the cancel is through (Cancel()).
    for (Transfer* transfer : cancelling) {
      if (running_transfers.contains(transfer)) {  // else it completed meanwhile
        Curl().multi_remove_handle(multi_, transfer->easy);
        take(transfer);
        transfer->Complete(CURLE_ABORTED_BY_CALLBACK);
      }
      transfer->CancelDone();
    }
    cancelling.clear();
    int running = 0;
    Curl().multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = Curl().multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;  // `msg` is gone once the handle is removed
      const CURLcode result = msg->data.result;
      Transfer* transfer = nullptr;
      Curl().easy_getinfo(easy, CURLINFO_PRIVATE, &transfer);
      Curl().multi_remove_handle(multi_, easy);
      if (transfer == nullptr) continue;
      take(transfer);
      transfer->Complete(result);
    }
    // Sleeps until there is I/O, a curl timeout, or curl_multi_wakeup (a
    // new transfer, a cancelled one, or the destructor).
    Curl().multi_poll(multi_, nullptr, 0, running_transfers.empty() ? 60000 : 1000, nullptr);
  }
}

void Transport::Submit(Transfer& transfer) {
  Curl().easy_setopt(transfer.easy, CURLOPT_PRIVATE, &transfer);
  {
    dra::MutexLock lock(&io_mu_);
    io_submitted_.push_back(&transfer);
  }
  Curl().multi_wakeup(multi_);
}

void Transport::Cancel(Transfer& transfer) {
  {
    dra::MutexLock lock(&transfer.mu);
    transfer.cancelling = true;
  }
  {
    dra::MutexLock lock(&io_mu_);
    io_cancelled_.push_back(&transfer);
  }
  Curl().multi_wakeup(multi_);
}

CURLcode Transport::RunTransfer(CURL* easy) {
  Transfer transfer;
  transfer.easy = easy;
  Submit(transfer);
  CURLcode result;
  {
    dra::MutexLock lock(&transfer.mu);
    while (!transfer.done) transfer.cv.Wait(&transfer.mu);
    result = transfer.result;
  }
  Curl().easy_setopt(easy, CURLOPT_PRIVATE, nullptr);
  return result;
}

CURL* Transport::Acquire() {
  {
    dra::MutexLock lock(&pool_mu_);
    if (!pool_.empty()) {
      CURL* handle = pool_.back();
      pool_.pop_back();
      return handle;
    }
  }
  return Curl().easy_init();
}

void Transport::Release(CURL* handle) {
  Curl().easy_reset(handle);  // keeps the live connection
  dra::MutexLock lock(&pool_mu_);
  if (pool_.size() < kMaxPooledHandles) {
    pool_.push_back(handle);
  } else {
    Curl().easy_cleanup(handle);
  }
}

void Transport::Configure(CURL* h, const HttpRequest& request, const Credentials& creds, absl::Duration timeout,
                          CurlLists& lists) const {
  ConfigureConnection(h, request, timeout, lists);
  AddHeaders(h, request, creds, lists);
  ConfigureTls(h, creds);
  SetMethodAndBody(h, request);
}

void Transport::ConfigureConnection(CURL* h, const HttpRequest& request, absl::Duration timeout,
                                    CurlLists& lists) const {
  std::string url = absl::StrCat(base_url_, request.path, request.query);
  Curl().easy_setopt(h, CURLOPT_URL, url.c_str());  // curl copies strings
  Curl().easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  Curl().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  Curl().easy_setopt(h, CURLOPT_SHARE, tls_sessions_);
  Curl().easy_setopt(h, CURLOPT_USERAGENT, user_agent_.c_str());
  if (!request.stream) Curl().easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  Curl().easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  // HTTP/2 when TLS negotiates it; wait for an existing connection to say
  // whether it multiplexes rather than opening another one at once.
  Curl().easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  Curl().easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
  if (timeout > absl::ZeroDuration()) {
    Curl().easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  }
  Curl().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(config_.timeout)));
  if (!connect_to_.empty()) {
    lists.connect_to = Curl().slist_append(lists.connect_to, connect_to_.c_str());
    Curl().easy_setopt(h, CURLOPT_CONNECT_TO, lists.connect_to);
  }
  if (!config_.proxy_url.empty()) Curl().easy_setopt(h, CURLOPT_PROXY, config_.proxy_url.c_str());
}

void Transport::AddHeaders(CURL* h, const HttpRequest& request, const Credentials& creds, CurlLists& lists) const {
  const char* accept = request.metadata_only ? (request.protobuf ? kAcceptMetadataProtobuf : kAcceptMetadataJson)
                                             : (request.protobuf ? kAcceptProtobuf : kAcceptJson);
  curl_slist*& headers = lists.headers;
  headers = Curl().slist_append(headers, accept);
  headers = Curl().slist_append(headers, "Expect:");
  // A watch-list stream comes gzipped, one member per flush, which libcurl
  // cannot decode past the first: the watch decodes it (GzipMembers).
  if (request.stream) headers = Curl().slist_append(headers, "Accept-Encoding: gzip");
  if (!request.content_type.empty()) {
    headers = Curl().slist_append(headers, absl::StrCat("Content-Type: ", request.content_type).c_str());
  }
  if (!creds.bearer_token.empty()) {
    headers = Curl().slist_append(headers, absl::StrCat("Authorization: Bearer ", creds.bearer_token).c_str());
  }
  if (!host_header_.empty()) headers = Curl().slist_append(headers, host_header_.c_str());
  Curl().easy_setopt(h, CURLOPT_HTTPHEADER, headers);
}

void Transport::ConfigureTls(CURL* h, const Credentials& creds) const {
  if (config_.insecure_skip_tls_verify) {
    Curl().easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    Curl().easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!config_.ca_data.empty()) {
    curl_blob blob{const_cast<char*>(config_.ca_data.data()), config_.ca_data.size(), CURL_BLOB_COPY};
    Curl().easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    Curl().easy_setopt(h, CURLOPT_CAINFO, nullptr);  // only this CA, not the system's
    Curl().easy_setopt(h, CURLOPT_CAPATH, nullptr);
  } else if (!config_.ca_file.empty()) {
    Curl().easy_setopt(h, CURLOPT_CAINFO, config_.ca_file.c_str());
    Curl().easy_setopt(h, CURLOPT_CAPATH, nullptr);
  }
  const std::string& cert = !creds.client_cert_pem.empty() ? creds.client_cert_pem : config_.client_cert_data;
  const std::string& key = !creds.client_key_pem.empty() ? creds.client_key_pem : config_.client_key_data;
  if (!cert.empty()) {
    curl_blob blob{const_cast<char*>(cert.data()), cert.size(), CURL_BLOB_COPY};
    Curl().easy_setopt(h, CURLOPT_SSLCERT_BLOB, &blob);
    Curl().easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!config_.client_cert_file.empty()) {
    Curl().easy_setopt(h, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
    Curl().easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!key.empty()) {
    curl_blob blob{const_cast<char*>(key.data()), key.size(), CURL_BLOB_COPY};
    Curl().easy_setopt(h, CURLOPT_SSLKEY_BLOB, &blob);
    Curl().easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!config_.client_key_file.empty()) {
    Curl().easy_setopt(h, CURLOPT_SSLKEY, config_.client_key_file.c_str());
    Curl().easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

HttpResponse Transport::Perform(const HttpRequest& request, const Credentials& creds, absl::Duration timeout) {
  HttpResponse response;
  response.timeout = timeout;
  CURL* h = Acquire();
  if (h == nullptr) {
    response.curl_code = CURLE_OUT_OF_MEMORY;
    return response;
  }
  CurlLists lists;
  char error[CURL_ERROR_SIZE] = {0};
  Configure(h, request, creds, timeout, lists);
  Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  Curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, &AppendBody);
  response.max_body = config_.max_response_bytes;
  Curl().easy_setopt(h, CURLOPT_WRITEDATA, &response);
  Curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, &CaptureHeader);
  Curl().easy_setopt(h, CURLOPT_HEADERDATA, &response);
  response.curl_code = RunTransfer(h);
  response.curl_error = error[0] != '\0' ? error : Curl().easy_strerror(response.curl_code);
  Curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.http_code);
  CountRequest(request.method, response.http_code);
  curl_off_t pretransfer = 0;
  Curl().easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
  long request_size = 0;
  Curl().easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_size);
  response.request_sent = pretransfer > 0 || request_size > 0 || response.http_code != 0;
  Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  Release(h);
  return response;
}

void Transport::CountRequest(std::string verb, long http_code) {
  std::string code = http_code == 0 ? "<error>" : std::to_string(http_code);
  dra::MutexLock lock(&counts_mu_);
  ++counts_[{std::move(verb), std::move(code)}];
}

std::vector<RequestCount> Transport::RequestCounts() const {
  dra::MutexLock lock(&counts_mu_);
  std::vector<RequestCount> counts;
  counts.reserve(counts_.size());
  for (const auto& [key, count] : counts_) counts.push_back({key.first, key.second, count});
  return counts;
}

absl::Status Transport::TransportError(const HttpResponse& response, const std::string& context) const {
  const std::string where = absl::StrCat(" [", context, " to ", config_.server, "]");
  if (response.body_too_large) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the response is larger than max_response_bytes (", config_.max_response_bytes, " bytes)", where));
  }
  switch (response.curl_code) {
    case CURLE_PEER_FAILED_VERIFICATION: {
      std::string trust = !config_.ca_data.empty()   ? std::string("certificate-authority-data (ca_data)")
                          : !config_.ca_file.empty() ? absl::StrCat("CA file ", config_.ca_file)
                                                     : std::string("the system trust store");
      std::string name =
          config_.tls_server_name.empty() ? "" : absl::StrCat(", expected name ", config_.tls_server_name);
      return absl::UnavailableError(absl::StrCat("TLS verification of the API server's certificate failed (trusted: ",
                                                 trust, name, "): ", response.curl_error, where));
    }
    case CURLE_SSL_CACERT_BADFILE:
      return absl::FailedPreconditionError(
          absl::StrCat("cannot load the CA certificates for TLS verification: ", response.curl_error, where));
    case CURLE_SSL_CERTPROBLEM:
      return absl::FailedPreconditionError(
          absl::StrCat("cannot use the client certificate: ", response.curl_error, where));
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(absl::StrCat(
          "request timed out (timeout ", absl::FormatDuration(response.timeout), "): ", response.curl_error, where));
    case CURLE_SSL_CONNECT_ERROR:
      return absl::UnavailableError(
          absl::StrCat("TLS handshake with the API server failed: ", response.curl_error, where));
    default:
      if (IsTlsAlert(response.curl_error)) {
        return absl::UnavailableError(absl::StrCat(
            "the API server ended the TLS connection (was the client certificate rejected?): ", response.curl_error,
            where));
      }
      return absl::UnavailableError(absl::StrCat("cannot reach the API server: ", response.curl_error, where));
  }
}

}  // namespace dra::k8s::internal
