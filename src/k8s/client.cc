#include "dra/k8s/client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "base/thread_name.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/mutex.h"
#include "k8s/auth.h"
#include "k8s/curl_library.h"
#include "k8s/gzip_members.h"
#include "k8s/http_util.h"
#include "k8s/protobuf_codec.h"

namespace dra::k8s {

using nlohmann::json;

namespace {

// Retry-After beyond this is cut short: a node agent should rather fail and
// let its caller decide.
constexpr absl::Duration kMaxRetryAfter = absl::Seconds(60);
// The Accept headers of a request, by what it asks for.
constexpr char kAcceptJson[] = "Accept: application/json";
constexpr char kAcceptProtobuf[] = "Accept: application/vnd.kubernetes.protobuf, application/json";
constexpr char kAcceptMetadataJson[] = "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
constexpr char kAcceptMetadataProtobuf[] =
    "Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, "
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
// Idle easy handles kept for reuse. Connections belong to the client's multi
// handle, not to easy handles.
constexpr size_t kMaxPooledHandles = 16;
// Connections to the API server at once. Over HTTP/2 (negotiated by ALPN on
// TLS) all requests are streams on one connection; this bounds HTTP/1.1
// (plain http, or a server or proxy without h2), where further requests wait
// for a free connection.
constexpr long kMaxHostConnections = 16;
// Idle connections the multi handle keeps open.
constexpr long kMaxIdleConnections = 16;
// Error bodies beyond this are cut.
constexpr size_t kMaxErrorBody = 1 << 20;
// A watch's bytes received and not yet handled beyond this end the watch
// (its informer starts another): a handler stuck that long must not hold
// the stream's bytes in memory without end.
constexpr size_t kMaxWatchBacklog = 64 << 20;

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // from the API root, without the query
  std::string query;   // "" or "?..."
  std::string body;
  std::string content_type;
  // A watch stream. It is never asked to be compressed: the API server
  // closes one gzip member per flush, and libcurl decodes only the first.
  bool stream = false;
  // Accept the protobuf wire format (the resource has a schema in
  // protobuf_codec.h and the config allows it); JSON otherwise.
  bool protobuf = false;
  // Its protobuf body is the one that finds out whether the server takes
  // protobuf bodies (Impl::body_format).
  bool body_probe = false;
  // Ask for PartialObjectMetadata instead of the objects.
  bool metadata_only = false;
  // The caller's deadline (a kubelet call's): the request is not throttled,
  // sent or retried past it, and each attempt's timeout ends by then.
  absl::Time deadline = absl::InfiniteFuture();

  std::string Context() const { return absl::StrCat(method, " ", path); }
};

struct HttpResponse {
  CURLcode curl_code = CURLE_OK;
  std::string curl_error;
  long http_code = 0;
  std::string body;
  size_t max_body = 0;
  bool body_too_large = false;  // the transfer stopped at max_body
  std::string retry_after;
  std::string content_type;
  bool request_sent = false;
  absl::Duration timeout;  // of this transfer
};

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

bool IsTlsAlert(const std::string& curl_error) { return absl::StrContains(curl_error, "alert"); }

// Transport errors worth retrying for idempotent requests.
bool RetriableTransport(CURLcode code, const std::string& curl_error) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return !IsTlsAlert(curl_error);  // the server rejected our client certificate
    default:
      return false;
  }
}

// Transport errors after which a POST certainly did not reach the server.
bool NotSent(CURLcode code) {
  return code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_COULDNT_CONNECT;
}

bool RetriableHttp(long code) { return code == 429 || (code >= 500 && code <= 599 && code != 501 && code != 505); }

std::string StringAt(const json& object, const char* a, const char* b) {
  if (!object.is_object()) return "";
  auto it = object.find(a);
  if (it == object.end() || !it->is_object()) return "";
  auto jt = it->find(b);
  return jt != it->end() && jt->is_string() ? jt->get<std::string>() : std::string();
}

absl::Status CheckScope(const ResourceRef& ref, const std::string& ns, bool all_namespaces_allowed) {
  if (!ref.namespaced && !ns.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ref.resource, " are cluster-scoped: namespace must be empty, got \"", ns, "\""));
  }
  if (ref.namespaced && ns.empty() && !all_namespaces_allowed) {
    return absl::InvalidArgumentError(absl::StrCat(ref.resource, " are namespaced: a namespace is required"));
  }
  return absl::OkStatus();
}

absl::Status CheckName(const ResourceRef& ref, const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(ref.resource, ": a name is required"));
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------
// WatchHandle

// One request's transfer on the client's multi handle: the requesting thread
// submits it and waits; the I/O thread runs it and completes it.
struct Transfer {
  CURL* easy = nullptr;
  bool stream = false;  // a watch: holds a connection of its own over HTTP/1.1
  dra::Mutex mu;
  dra::CondVar cv;
  bool done ABSL_GUARDED_BY(mu) = false;
  CURLcode result ABSL_GUARDED_BY(mu) = CURLE_OK;
  bool cancelling ABSL_GUARDED_BY(mu) = false;  // Cancel() asked, the I/O thread not through with it

  void Complete(CURLcode code) {
    dra::MutexLock lock(&mu);
    result = code;
    done = true;
    cv.Signal();  // under the lock: the waiter frees this right after
  }
  void CancelDone() {
    dra::MutexLock lock(&mu);
    cancelling = false;
    cv.Signal();
  }
};

// A watch's transfer: the I/O thread appends what arrives, the watch's own
// thread takes it and runs the handlers, which may make requests on the same
// multi handle (so they must not run on the I/O thread).
struct StreamTransfer : Transfer {
  std::string received ABSL_GUARDED_BY(mu);
  bool overrun ABSL_GUARDED_BY(mu) = false;  // the watch's thread fell kMaxWatchBacklog behind

  static size_t Write(char* data, size_t size, size_t count, void* user) {
    auto* self = static_cast<StreamTransfer*>(user);
    const size_t n = size * count;
    dra::MutexLock lock(&self->mu);
    // No CURL_WRITEFUNC_PAUSE: libcurl 7.88 pauses an HTTP/2 stream by
    // stopping the whole connection, the requests of the handlers included.
    if (self->received.size() + n > kMaxWatchBacklog) {
      self->overrun = true;
      return 0;
    }
    self->received.append(data, n);
    self->cv.Signal();
    return n;
  }
};

struct WatchHandle::State {
  std::atomic<bool> stop{false};
  mutable dra::Mutex mu;
  dra::CondVar cv;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  StreamTransfer* transfer ABSL_GUARDED_BY(mu) = nullptr;  // while one runs

  void Stop();
  void Finish(absl::Status s) {
    dra::MutexLock lock(&mu);
    status = std::move(s);
    done = true;
    cv.SignalAll();
  }
};

WatchHandle::WatchHandle(std::shared_ptr<State> state, std::thread thread)
    : state_(std::move(state)), thread_(std::move(thread)) {}

WatchHandle::~WatchHandle() {
  Stop();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();  // destroyed from its own callback: let it wind down
    } else {
      thread_.join();
    }
  }
}

void WatchHandle::State::Stop() {
  stop = true;
  dra::MutexLock lock(&mu);
  if (transfer != nullptr) {
    dra::MutexLock transfer_lock(&transfer->mu);
    transfer->cv.SignalAll();
  }
  cv.SignalAll();
}

void WatchHandle::Stop() { state_->Stop(); }

absl::Status WatchHandle::Wait() {
  dra::MutexLock lock(&state_->mu);
  while (!state_->done) state_->cv.Wait(&state_->mu);
  return state_->status;
}

bool WatchHandle::Done() const {
  dra::MutexLock lock(&state_->mu);
  return state_->done;
}

bool WatchHandle::Stopped() const { return state_->stop; }

// ---------------------------------------------------------------------------
// Client::Impl

struct Client::Impl : std::enable_shared_from_this<Client::Impl> {
  explicit Impl(ClientConfig c) : config(std::move(c)), auth(config), limiter(config.qps, config.burst) {}
  ~Impl() {
    if (io_thread.joinable()) {
      {
        dra::MutexLock lock(&io_mu);
        io_stop = true;
      }
      internal::Curl().multi_wakeup(multi);
      io_thread.join();
    }
    if (multi != nullptr) internal::Curl().multi_cleanup(multi);
    for (CURL* handle : pool) internal::Curl().easy_cleanup(handle);
    if (tls_sessions != nullptr) internal::Curl().share_cleanup(tls_sessions);
  }

  absl::Status Init();
  // Creates the multi handle and starts the I/O thread.
  absl::Status StartIo();
  // The I/O thread: adds submitted transfers, drives the multi handle and
  // completes finished transfers.
  void IoLoop();
  // Hands `transfer` (its handle fully configured) to the I/O thread, which
  // completes it.
  void Submit(Transfer& transfer);
  // Ends a submitted transfer early: the I/O thread completes it with
  // CURLE_ABORTED_BY_CALLBACK unless it completed already. The transfer
  // must live until `cancelling` is false again, not only until `done`.
  void Cancel(Transfer& transfer);
  // Runs `easy` (fully configured) on the multi handle; returns its result.
  CURLcode RunTransfer(CURL* easy);
  CURL* Acquire();
  void Release(CURL* handle);
  // Sets every option but the write target for one request.
  void Configure(CURL* handle, const HttpRequest& request, const internal::Credentials& creds, curl_slist** headers,
                 curl_slist** connect_to, absl::Duration timeout);
  HttpResponse Perform(const HttpRequest& request, const internal::Credentials& creds, absl::Duration timeout);
  absl::Status TransportError(const HttpResponse& response, const std::string& context) const;
  // Waits for the client-side rate limit; DeadlineExceeded when the wait
  // would end past `deadline`.
  absl::Status Throttle(absl::Time deadline) {
    const absl::Time now = absl::Now();
    const absl::Duration wait = limiter.Reserve(now);
    if (wait <= absl::ZeroDuration()) return absl::OkStatus();
    if (now + wait >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("client-side rate limit (qps ", config.qps,
                                                      "): the next request ",
                                                      "would be sent after the call's deadline"));
    }
    absl::SleepFor(wait);
    return absl::OkStatus();
  }

  struct Result {
    absl::StatusOr<json> value;
    bool uncertain = false;  // a POST that may have reached the server
  };
  Result Execute(const HttpRequest& request);
  absl::StatusOr<json> Run(const HttpRequest& request) { return Execute(request).value; }
  // A request about `ref`: it accepts protobuf when the codec has a schema
  // for it and the config does not turn that off.
  HttpRequest Request(const ResourceRef& ref, std::string method, std::string path, std::string query = "") const {
    HttpRequest request{std::move(method), std::move(path), std::move(query), "", ""};
    request.protobuf = config.protobuf && internal::HasProtobufSchema(ref);
    return request;
  }
  enum BodyFormat { kBodyUnknown, kBodyProbing, kBodyProtobuf, kBodyJson };  // see body_format
  static constexpr absl::Duration kBodyProbeWait = absl::Seconds(10);

  // Sets `object` as the body: protobuf when the request accepts it and the
  // codec can carry every field of the object, JSON otherwise.
  void SetBody(HttpRequest& request, const json& object) const {
    request.body_probe = false;
    bool probe = false;
    BodyFormat format = kBodyJson;
    if (request.protobuf) {
      dra::MutexLock lock(&body_format_mu);
      const absl::Time until = absl::Now() + kBodyProbeWait;
      while (body_format == kBodyProbing && !body_format_cv.WaitWithDeadline(&body_format_mu, until)) {
      }
      probe = body_format == kBodyUnknown;
      if (probe) body_format = kBodyProbing;
      format = body_format;
    }
    if (format == kBodyProtobuf || probe) {
      absl::StatusOr<std::string> encoded = internal::EncodeProtobuf(object);
      if (encoded.ok()) {
        request.body = *std::move(encoded);
        request.content_type = std::string(internal::kProtobufContentType);
        request.body_probe = probe;
        return;
      }
    }
    if (probe) SetBodyFormat(kBodyUnknown);  // a later body finds out
    request.body = object.dump();
    request.content_type = "application/json";
  }
  // Execute() of a request whose body is `object`: a server that refuses
  // protobuf bodies (415: an aggregated API server, a test double) gets JSON
  // from then on.
  Result ExecuteWithBody(HttpRequest& request, const json& object) {
    Result result = Execute(request);
    const std::optional<int> code = HttpStatusCode(result.value.status());
    if (request.body_probe) {
      request.body_probe = false;
      // Answered other than 415: protobuf it is. No answer: the next one asks.
      SetBodyFormat(code == 415 ? kBodyJson : result.value.ok() || code.has_value() ? kBodyProtobuf : kBodyUnknown);
    }
    if (result.value.ok() || request.content_type != internal::kProtobufContentType || code != 415) return result;
    SetBodyFormat(kBodyJson);
    SetBody(request, object);
    return Execute(request);
  }
  void SetBodyFormat(BodyFormat format) const {
    dra::MutexLock lock(&body_format_mu);
    body_format = format;
    body_format_cv.SignalAll();
  }
  absl::StatusOr<json> CreateObject(const ResourceRef& ref, const std::string& ns, const json& object);
  absl::StatusOr<HttpRequest> WatchRequest(const ResourceRef& ref, const std::string& ns,
                                           const WatchOptions& options) const;
  absl::Status RunWatch(WatchHandle::State& state, HttpRequest request, int64_t timeout_seconds,
                        const std::function<void(const WatchEvent&)>& on_event);

  void CountRequest(std::string verb, long http_code) {
    std::string code = http_code == 0 ? "<error>" : std::to_string(http_code);
    dra::MutexLock lock(&counts_mu);
    ++counts[{std::move(verb), std::move(code)}];
  }

  ClientConfig config;
  // Whether the server takes protobuf bodies: unknown until the first
  // request with one is answered. The others wait for that answer (one round
  // trip, once; at most kBodyProbeWait, then JSON), so that a server refusing
  // protobuf refuses one request, not one per parallel writer, and one taking
  // it gets protobuf from all of them.
  mutable dra::Mutex body_format_mu;
  mutable dra::CondVar body_format_cv;
  mutable BodyFormat body_format ABSL_GUARDED_BY(body_format_mu) = kBodyUnknown;
  internal::Authenticator auth;
  internal::TokenBucket limiter;
  std::string base_url;     // scheme://host:port[/prefix], host replaced by tls_server_name
  std::string connect_to;   // "tls_server_name:port:host:port" when tls_server_name is set
  std::string host_header;  // "Host: host:port" when tls_server_name is set
  std::string user_agent;

  dra::Mutex pool_mu;
  std::vector<CURL*> pool ABSL_GUARDED_BY(pool_mu);

  dra::Mutex counts_mu;
  std::map<std::pair<std::string, std::string>, uint64_t> counts ABSL_GUARDED_BY(counts_mu);  // by verb and code

  // TLS sessions, shared by every handle of the client: where it has more
  // than one connection (HTTP/1.1, one per watch and busy request; HTTP/2
  // beyond the server's stream limit), resuming the session spares
  // kube-apiserver a full handshake (its certificate signature) for each.
  CURLSH* tls_sessions = nullptr;
  dra::Mutex tls_sessions_mu;
  static void LockShare(CURL*, curl_lock_data, curl_lock_access, void* impl) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Impl*>(impl)->tls_sessions_mu.Lock();
  }
  static void UnlockShare(CURL*, curl_lock_data, void* impl) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Impl*>(impl)->tls_sessions_mu.Unlock();
  }

  // Every request and watch runs on `multi`, driven by `io_thread` alone, so
  // that they share connections: as HTTP/2 streams on one TLS connection when
  // the server speaks h2 (as client-go's do), else over HTTP/1.1 connections.
  CURLM* multi = nullptr;
  std::thread io_thread;
  dra::Mutex io_mu;
  bool io_stop ABSL_GUARDED_BY(io_mu) = false;
  std::vector<Transfer*> io_submitted ABSL_GUARDED_BY(io_mu);  // not yet on `multi`
  std::vector<Transfer*> io_cancelled ABSL_GUARDED_BY(io_mu);
};

absl::Status Client::Impl::StartIo() {
  tls_sessions = internal::Curl().share_init();
  if (tls_sessions == nullptr) return absl::ResourceExhaustedError("client: cannot allocate a curl share handle");
  internal::Curl().share_setopt(tls_sessions, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  internal::Curl().share_setopt(tls_sessions, CURLSHOPT_LOCKFUNC, &Impl::LockShare);
  internal::Curl().share_setopt(tls_sessions, CURLSHOPT_UNLOCKFUNC, &Impl::UnlockShare);
  internal::Curl().share_setopt(tls_sessions, CURLSHOPT_USERDATA, this);
  multi = internal::Curl().multi_init();
  if (multi == nullptr) return absl::ResourceExhaustedError("client: cannot allocate a curl multi handle");
  internal::Curl().multi_setopt(multi, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
  internal::Curl().multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, kMaxHostConnections);
  internal::Curl().multi_setopt(multi, CURLMOPT_MAXCONNECTS, kMaxIdleConnections);
  return base::StartNamedThread(io_thread, "dra-k8s-io", "client: cannot start the I/O thread", [this] { IoLoop(); });
}

void Client::Impl::IoLoop() {
  std::vector<Transfer*> adding;
  std::vector<Transfer*> cancelling;
  std::set<Transfer*> running_transfers;
  long streams = 0;
  // Over HTTP/1.1 each watch holds a connection while it lasts: the bound
  // is on the connections left for requests.
  auto count_stream = [&](const Transfer* transfer, long delta) {
    if (!transfer->stream) return;
    streams += delta;
    internal::Curl().multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, kMaxHostConnections + streams);
  };
  auto take = [&](Transfer* transfer) {
    running_transfers.erase(transfer);
    count_stream(transfer, -1);
  };
  while (true) {
    {
      dra::MutexLock lock(&io_mu);
      // Callers hold the client while they wait, so nothing is in flight
      // when it is destroyed.
      if (io_stop) break;
      adding.swap(io_submitted);
      cancelling.swap(io_cancelled);
    }
    for (Transfer* transfer : adding) {
      if (internal::Curl().multi_add_handle(multi, transfer->easy) != CURLM_OK) {
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
        internal::Curl().multi_remove_handle(multi, transfer->easy);
        take(transfer);
        transfer->Complete(CURLE_ABORTED_BY_CALLBACK);
      }
      transfer->CancelDone();
    }
    cancelling.clear();
    int running = 0;
    internal::Curl().multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = internal::Curl().multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;  // `msg` is gone once the handle is removed
      const CURLcode result = msg->data.result;
      Transfer* transfer = nullptr;
      internal::Curl().easy_getinfo(easy, CURLINFO_PRIVATE, &transfer);
      internal::Curl().multi_remove_handle(multi, easy);
      if (transfer == nullptr) continue;
      take(transfer);
      transfer->Complete(result);
    }
    // Sleeps until there is I/O, a curl timeout, or curl_multi_wakeup (a
    // new transfer, a cancelled one, or the destructor).
    internal::Curl().multi_poll(multi, nullptr, 0, running_transfers.empty() ? 60000 : 1000, nullptr);
  }
}

void Client::Impl::Submit(Transfer& transfer) {
  internal::Curl().easy_setopt(transfer.easy, CURLOPT_PRIVATE, &transfer);
  {
    dra::MutexLock lock(&io_mu);
    io_submitted.push_back(&transfer);
  }
  internal::Curl().multi_wakeup(multi);
}

void Client::Impl::Cancel(Transfer& transfer) {
  {
    dra::MutexLock lock(&transfer.mu);
    transfer.cancelling = true;
  }
  {
    dra::MutexLock lock(&io_mu);
    io_cancelled.push_back(&transfer);
  }
  internal::Curl().multi_wakeup(multi);
}

CURLcode Client::Impl::RunTransfer(CURL* easy) {
  Transfer transfer;
  transfer.easy = easy;
  Submit(transfer);
  CURLcode result;
  {
    dra::MutexLock lock(&transfer.mu);
    while (!transfer.done) transfer.cv.Wait(&transfer.mu);
    result = transfer.result;
  }
  internal::Curl().easy_setopt(easy, CURLOPT_PRIVATE, nullptr);
  return result;
}

absl::Status Client::Impl::Init() {
  std::string server = config.server;
  if (server.empty()) return absl::InvalidArgumentError("client config: server is empty");
  if (server.find("://") == std::string::npos) server = "https://" + server;

  CURLU* url = internal::Curl().url();
  auto free_url = [&] { internal::Curl().url_cleanup(url); };
  if (internal::Curl().url_set(url, CURLUPART_URL, server.c_str(), 0) != CURLUE_OK) {
    free_url();
    return absl::InvalidArgumentError(absl::StrCat("client config: server \"", config.server, "\" is not a URL"));
  }
  auto part = [&](CURLUPart which, unsigned flags) -> std::string {
    char* text = nullptr;
    if (internal::Curl().url_get(url, which, &text, flags) != CURLUE_OK || text == nullptr) return "";
    std::string out(text);
    internal::Curl().free(text);
    return out;
  };
  std::string scheme = absl::AsciiStrToLower(part(CURLUPART_SCHEME, 0));
  std::string host = part(CURLUPART_HOST, 0);
  std::string port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  std::string prefix = part(CURLUPART_PATH, 0);
  free_url();
  if (scheme != "https" && scheme != "http") {
    return absl::InvalidArgumentError(
        absl::StrCat("client config: server \"", config.server, "\": scheme must be https or http"));
  }
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!config.tls_server_name.empty() && scheme == "https") {
    base_url = absl::StrCat(scheme, "://", config.tls_server_name, ":", port, prefix);
    connect_to = absl::StrCat(config.tls_server_name, ":", port, ":", host, ":", port);
    host_header = absl::StrCat("Host: ", host, ":", port);
  } else {
    base_url = absl::StrCat(scheme, "://", host, ":", port, prefix);
  }
  user_agent = config.user_agent.empty() ? DefaultUserAgent() : config.user_agent;

  if (config.insecure_skip_tls_verify && (!config.ca_file.empty() || !config.ca_data.empty())) {
    return absl::InvalidArgumentError(
        "client config: specifying a root certificates file with the insecure flag is not allowed");
  }
  const bool has_cert = !config.client_cert_file.empty() || !config.client_cert_data.empty();
  const bool has_key = !config.client_key_file.empty() || !config.client_key_data.empty();
  if (has_cert != has_key) {
    return absl::InvalidArgumentError("client config: client certificate and client key must be given together");
  }
  for (const auto& [what, path] : {std::pair<const char*, const std::string&>{"ca_file", config.ca_file},
                                   {"client_cert_file", config.client_cert_file},
                                   {"client_key_file", config.client_key_file}}) {
    if (!path.empty() && ::access(path.c_str(), R_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("client config: ", what, ": cannot read ", path, ": ", std::strerror(errno)));
    }
  }
  if (config.max_retries < 0) config.max_retries = 0;
  if (auth.token_file() != nullptr) {
    if (absl::StatusOr<std::string> token = auth.token_file()->Token(); !token.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("client config: ", token.status().message()));
    }
  }
  return StartIo();
}

CURL* Client::Impl::Acquire() {
  {
    dra::MutexLock lock(&pool_mu);
    if (!pool.empty()) {
      CURL* handle = pool.back();
      pool.pop_back();
      return handle;
    }
  }
  return internal::Curl().easy_init();
}

void Client::Impl::Release(CURL* handle) {
  internal::Curl().easy_reset(handle);  // keeps the live connection
  dra::MutexLock lock(&pool_mu);
  if (pool.size() < kMaxPooledHandles) {
    pool.push_back(handle);
  } else {
    internal::Curl().easy_cleanup(handle);
  }
}

void Client::Impl::Configure(CURL* h, const HttpRequest& request, const internal::Credentials& creds,
                             curl_slist** headers, curl_slist** connect_to_list, absl::Duration timeout) {
  std::string url = absl::StrCat(base_url, request.path, request.query);
  internal::Curl().easy_setopt(h, CURLOPT_URL, url.c_str());  // curl copies strings
  internal::Curl().easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  internal::Curl().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  internal::Curl().easy_setopt(h, CURLOPT_SHARE, tls_sessions);
  internal::Curl().easy_setopt(h, CURLOPT_USERAGENT, user_agent.c_str());
  if (!request.stream) internal::Curl().easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  internal::Curl().easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  // HTTP/2 when TLS negotiates it; wait for an existing connection to say
  // whether it multiplexes rather than opening another one at once.
  internal::Curl().easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  internal::Curl().easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
  if (timeout > absl::ZeroDuration()) {
    internal::Curl().easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  }
  internal::Curl().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                               static_cast<long>(absl::ToInt64Milliseconds(config.timeout)));

  const char* accept = request.metadata_only ? (request.protobuf ? kAcceptMetadataProtobuf : kAcceptMetadataJson)
                                             : (request.protobuf ? kAcceptProtobuf : kAcceptJson);
  *headers = internal::Curl().slist_append(*headers, accept);
  *headers = internal::Curl().slist_append(*headers, "Expect:");
  // A watch-list stream comes gzipped, one member per flush, which libcurl
  // cannot decode past the first: the watch decodes it (GzipMembers).
  if (request.stream) *headers = internal::Curl().slist_append(*headers, "Accept-Encoding: gzip");
  if (!request.content_type.empty()) {
    *headers = internal::Curl().slist_append(*headers, absl::StrCat("Content-Type: ", request.content_type).c_str());
  }
  if (!creds.bearer_token.empty()) {
    *headers =
        internal::Curl().slist_append(*headers, absl::StrCat("Authorization: Bearer ", creds.bearer_token).c_str());
  }
  if (!host_header.empty()) *headers = internal::Curl().slist_append(*headers, host_header.c_str());
  internal::Curl().easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
  if (!connect_to.empty()) {
    *connect_to_list = internal::Curl().slist_append(*connect_to_list, connect_to.c_str());
    internal::Curl().easy_setopt(h, CURLOPT_CONNECT_TO, *connect_to_list);
  }
  if (!config.proxy_url.empty()) internal::Curl().easy_setopt(h, CURLOPT_PROXY, config.proxy_url.c_str());

  // TLS.
  if (config.insecure_skip_tls_verify) {
    internal::Curl().easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    internal::Curl().easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!config.ca_data.empty()) {
    curl_blob blob{const_cast<char*>(config.ca_data.data()), config.ca_data.size(), CURL_BLOB_COPY};
    internal::Curl().easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    internal::Curl().easy_setopt(h, CURLOPT_CAINFO, nullptr);  // only this CA, not the system's
    internal::Curl().easy_setopt(h, CURLOPT_CAPATH, nullptr);
  } else if (!config.ca_file.empty()) {
    internal::Curl().easy_setopt(h, CURLOPT_CAINFO, config.ca_file.c_str());
    internal::Curl().easy_setopt(h, CURLOPT_CAPATH, nullptr);
  }
  const std::string& cert = !creds.client_cert_pem.empty() ? creds.client_cert_pem : config.client_cert_data;
  const std::string& key = !creds.client_key_pem.empty() ? creds.client_key_pem : config.client_key_data;
  if (!cert.empty()) {
    curl_blob blob{const_cast<char*>(cert.data()), cert.size(), CURL_BLOB_COPY};
    internal::Curl().easy_setopt(h, CURLOPT_SSLCERT_BLOB, &blob);
    internal::Curl().easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!config.client_cert_file.empty()) {
    internal::Curl().easy_setopt(h, CURLOPT_SSLCERT, config.client_cert_file.c_str());
    internal::Curl().easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!key.empty()) {
    curl_blob blob{const_cast<char*>(key.data()), key.size(), CURL_BLOB_COPY};
    internal::Curl().easy_setopt(h, CURLOPT_SSLKEY_BLOB, &blob);
    internal::Curl().easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!config.client_key_file.empty()) {
    internal::Curl().easy_setopt(h, CURLOPT_SSLKEY, config.client_key_file.c_str());
    internal::Curl().easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }

  // Method and body.
  if (request.method == "GET") {
    internal::Curl().easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    if (request.method != "POST") internal::Curl().easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (!request.body.empty() || request.method == "POST") {
      internal::Curl().easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
      internal::Curl().easy_setopt(h, CURLOPT_COPYPOSTFIELDS, request.body.c_str());
    }
  }
}

HttpResponse Client::Impl::Perform(const HttpRequest& request, const internal::Credentials& creds,
                                   absl::Duration timeout) {
  HttpResponse response;
  response.timeout = timeout;
  CURL* h = Acquire();
  if (h == nullptr) {
    response.curl_code = CURLE_OUT_OF_MEMORY;
    return response;
  }
  curl_slist* headers = nullptr;
  curl_slist* connect_to_list = nullptr;
  char error[CURL_ERROR_SIZE] = {0};
  Configure(h, request, creds, &headers, &connect_to_list, timeout);
  internal::Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  internal::Curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, &AppendBody);
  response.max_body = config.max_response_bytes;
  internal::Curl().easy_setopt(h, CURLOPT_WRITEDATA, &response);
  internal::Curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, &CaptureHeader);
  internal::Curl().easy_setopt(h, CURLOPT_HEADERDATA, &response);
  response.curl_code = RunTransfer(h);
  response.curl_error = error[0] != '\0' ? error : internal::Curl().easy_strerror(response.curl_code);
  internal::Curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.http_code);
  CountRequest(request.method, response.http_code);
  curl_off_t pretransfer = 0;
  internal::Curl().easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
  long request_size = 0;
  internal::Curl().easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_size);
  response.request_sent = pretransfer > 0 || request_size > 0 || response.http_code != 0;
  internal::Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  Release(h);
  internal::Curl().slist_free_all(headers);
  internal::Curl().slist_free_all(connect_to_list);
  return response;
}

absl::Status Client::Impl::TransportError(const HttpResponse& response, const std::string& context) const {
  const std::string where = absl::StrCat(" [", context, " to ", config.server, "]");
  if (response.body_too_large) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the response is larger than max_response_bytes (", config.max_response_bytes, " bytes)", where));
  }
  switch (response.curl_code) {
    case CURLE_PEER_FAILED_VERIFICATION: {
      std::string trust = !config.ca_data.empty()   ? std::string("certificate-authority-data (ca_data)")
                          : !config.ca_file.empty() ? absl::StrCat("CA file ", config.ca_file)
                                                    : std::string("the system trust store");
      std::string name = config.tls_server_name.empty() ? "" : absl::StrCat(", expected name ", config.tls_server_name);
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

namespace {

// The last attempt's error, when waiting `wait` for the next would pass the
// call's deadline.
absl::Status NotRetried(const absl::Status& status, absl::Duration wait) {
  return internal::Rewrap(status, status.code(),
                          absl::StrCat(status.message(), " (not retried: the retry in ", absl::FormatDuration(wait),
                                       " would come after the call's deadline)"));
}

}  // namespace

Client::Impl::Result Client::Impl::Execute(const HttpRequest& request) {
  const bool is_post = request.method == "POST";
  const std::string context = request.Context();
  bool refreshed = false;
  for (int attempt = 0;; ++attempt) {
    if (absl::Status throttled = Throttle(request.deadline); !throttled.ok()) {
      return {internal::Rewrap(throttled, throttled.code(), absl::StrCat(throttled.message(), " [", context, "]")),
              false};
    }
    absl::StatusOr<internal::Credentials> creds = auth.Get();
    if (!creds.ok()) {
      return {internal::Rewrap(creds.status(), creds.status().code(),
                               absl::StrCat("getting credentials: ", creds.status().message(), " [", context, "]")),
              false};
    }
    const absl::Duration left = request.deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return {
          absl::DeadlineExceededError(absl::StrCat("the call's deadline passed before the request [", context, "]")),
          false};
    }
    absl::Duration timeout = config.timeout;
    if (left != absl::InfiniteDuration() && (timeout <= absl::ZeroDuration() || left < timeout)) timeout = left;
    HttpResponse response = Perform(request, *creds, timeout);
    const bool more = attempt < config.max_retries;

    if (response.curl_code != CURLE_OK) {
      absl::Status status = TransportError(response, context);
      if (!RetriableTransport(response.curl_code, response.curl_error)) return {status, false};
      if (is_post && !NotSent(response.curl_code) && response.request_sent) return {status, true};
      if (!more) return {status, false};
      const absl::Duration wait = base::Backoff(attempt);
      if (absl::Now() + wait >= request.deadline) return {NotRetried(status, wait), false};
      absl::SleepFor(wait);
      continue;
    }
    const long code = response.http_code;
    if (internal::IsProtobufContentType(response.content_type)) {
      absl::StatusOr<json> decoded = internal::DecodeProtobuf(response.body);
      if (!decoded.ok()) {
        return {internal::Rewrap(decoded.status(), absl::StatusCode::kInternal,
                                 absl::StrCat(decoded.status().message(), " [", context, ": HTTP ", code, "]")),
                false};
      }
      if (code >= 200 && code < 300) return {*std::move(decoded), false};
      response.body = decoded->dump();
    }
    if (code >= 200 && code < 300) {
      if (response.body.empty()) return {json::object(), false};
      json doc = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded()) {
        return {absl::InternalError(absl::StrCat("response is not JSON [", context, ": HTTP ", code, "]")), false};
      }
      return {std::move(doc), false};
    }
    if (code == 401 && !refreshed && auth.Refresh()) {
      refreshed = true;  // new credentials get one more try, not counted as a retry
      --attempt;
      continue;
    }
    absl::Status status = internal::StatusFromResponse(static_cast<int>(code), response.body, context);
    if (RetriableHttp(code)) {
      if (is_post && code != 429) return {status, true};
      if (!more) return {status, false};
      std::optional<absl::Duration> after = internal::ParseRetryAfter(response.retry_after, absl::Now());
      const absl::Duration wait = after.has_value() ? std::min(*after, kMaxRetryAfter) : base::Backoff(attempt);
      if (absl::Now() + wait >= request.deadline) return {NotRetried(status, wait), false};
      absl::SleepFor(wait);
      continue;
    }
    return {status, false};
  }
}

absl::StatusOr<json> Client::Impl::CreateObject(const ResourceRef& ref, const std::string& ns, const json& object) {
  HttpRequest request = Request(ref, "POST", internal::ResourcePath(ref, ns));
  SetBody(request, object);
  const std::string name = StringAt(object, "metadata", "name");
  for (int round = 0;; ++round) {
    Result result = ExecuteWithBody(request, object);
    if (!result.uncertain) return std::move(result.value);
    const absl::Status& cause = result.value.status();
    if (name.empty()) {
      return internal::Rewrap(
          cause, absl::StatusCode::kUnavailable,
          absl::StrCat("create with generateName may have happened; not retried to avoid a duplicate: ",
                       cause.message()));
    }
    // Did it land? A GET settles it for a fixed name.
    absl::StatusOr<json> existing = Run(Request(ref, "GET", internal::ResourcePath(ref, ns, name)));
    if (existing.ok()) return existing;
    if (!absl::IsNotFound(existing.status())) {
      return internal::Rewrap(cause, absl::StatusCode::kUnavailable,
                              absl::StrCat("create of \"", name, "\" may have happened, and checking failed (",
                                           existing.status().message(), "): ", cause.message()));
    }
    if (round >= config.max_retries) return internal::Rewrap(cause, cause.code(), std::string(cause.message()));
    absl::SleepFor(base::Backoff(round));
  }
}

// Watch: a stream transfer on the client's multi handle; the watch's thread
// decodes what arrives and runs the handler.
namespace {

// Decodes one watch response. Header() runs on the I/O thread, before any of
// the body reaches Consume() on the watch's thread through the transfer's
// lock.
struct WatchWriter {
  CURL* handle = nullptr;
  WatchHandle::State* state = nullptr;
  const std::function<void(const WatchEvent&)>* on_event = nullptr;
  std::function<void(long)> count;  // once: when the headers are in, or when the transfer ended without them
  std::string context;
  long http_code = 0;
  std::string error_body;
  bool protobuf = false;                        // the stream's format, from its Content-Type
  std::unique_ptr<internal::GzipMembers> gzip;  // Content-Encoding: gzip
  internal::LineDecoder lines;
  internal::FrameDecoder frames;
  std::optional<absl::Status> error;  // ends the watch with this

  absl::Status OnLine(std::string_view line) {
    if (state->stop) return absl::CancelledError("watch stopped");  // no events after Stop()
    json doc = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) {
      return absl::InternalError(absl::StrCat("watch stream: an event is not a JSON object [", context, "]"));
    }
    return OnEvent(std::move(doc));
  }

  absl::Status OnFrame(std::string_view frame) {
    if (state->stop) return absl::CancelledError("watch stopped");
    absl::StatusOr<json> doc = internal::DecodeProtobufWatchEvent(frame);
    if (!doc.ok())
      return internal::Rewrap(doc.status(), doc.status().code(),
                              absl::StrCat(doc.status().message(), " [", context, "]"));
    return OnEvent(*std::move(doc));
  }

  absl::Status OnEvent(json doc) {
    WatchEvent event;
    if (auto it = doc.find("type"); it != doc.end() && it->is_string()) event.type = it->get<std::string>();
    if (auto it = doc.find("object"); it != doc.end()) event.object = std::move(*it);
    if (event.type == "ERROR") return internal::StatusFromMetaStatus(event.object, 500, context);
    try {
      (*on_event)(event);
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("watch callback threw: ", e.what()));
    } catch (...) {
      return absl::InternalError("watch callback threw");
    }
    return absl::OkStatus();
  }

  void Count() {
    if (count) std::exchange(count, nullptr)(http_code);
  }

  // A watch may send no body for minutes: count it once its headers are in.
  static size_t Header(char* data, size_t size, size_t count, void* user) {
    auto* self = static_cast<WatchWriter*>(user);
    const std::string_view line(data, size * count);
    const std::string lower = absl::AsciiStrToLower(absl::string_view(line.data(), line.size()));
    if (absl::StartsWith(lower, "content-encoding:") && lower.find("gzip", 17) != std::string::npos) {
      self->gzip = std::make_unique<internal::GzipMembers>();
    }
    if (line == "\r\n" || line == "\n") {
      long code = 0;
      internal::Curl().easy_getinfo(self->handle, CURLINFO_RESPONSE_CODE, &code);
      if (code >= 200) {
        self->http_code = code;
        char* type = nullptr;
        internal::Curl().easy_getinfo(self->handle, CURLINFO_CONTENT_TYPE, &type);
        self->protobuf = type != nullptr && internal::IsProtobufContentType(type);
        self->Count();
      }
    }
    return size * count;
  }

  // False once the watch is to end (an error, or Stop()).
  bool Consume(std::string_view body) {
    std::string inflated;
    if (gzip != nullptr) {
      if (absl::Status status = gzip->Inflate(body, inflated); !status.ok()) {
        error = internal::Rewrap(status, absl::StatusCode::kInternal,
                                 absl::StrCat("watch stream: ", status.message(), " [", context, "]"));
        return false;
      }
      body = inflated;
    }
    if (http_code != 200) {
      if (error_body.size() < kMaxErrorBody) error_body.append(body);
      return true;
    }
    absl::Status status = protobuf ? frames.Feed(body, [this](std::string_view f) { return OnFrame(f); })
                                   : lines.Feed(body, [this](std::string_view l) { return OnLine(l); });
    if (!status.ok()) {
      error = std::move(status);
      return false;
    }
    return !state->stop;
  }
};

}  // namespace

absl::Status Client::Impl::RunWatch(WatchHandle::State& state, HttpRequest request, int64_t timeout_seconds,
                                    const std::function<void(const WatchEvent&)>& on_event) {
  const std::string context = request.Context();
  {
    absl::Duration wait = limiter.Reserve(absl::Now());
    const absl::Time until = absl::Now() + wait;
    dra::MutexLock lock(&state.mu);
    while (!state.stop && !state.cv.WaitWithDeadline(&state.mu, until)) {
    }
  }
  bool refreshed = false;
  while (true) {
    if (state.stop) return absl::OkStatus();
    absl::StatusOr<internal::Credentials> creds = auth.Get();
    if (!creds.ok()) {
      return internal::Rewrap(creds.status(), creds.status().code(),
                              absl::StrCat("getting credentials: ", creds.status().message(), " [", context, "]"));
    }
    CURL* h = internal::Curl().easy_init();
    if (h == nullptr) return absl::ResourceExhaustedError("watch: cannot allocate a curl handle");
    curl_slist* headers = nullptr;
    curl_slist* connect_to_list = nullptr;
    char error[CURL_ERROR_SIZE] = {0};
    const absl::Duration timeout =
        timeout_seconds > 0 ? absl::Seconds(timeout_seconds) + absl::Seconds(60) : absl::ZeroDuration();
    Configure(h, request, *creds, &headers, &connect_to_list, timeout);
    WatchWriter writer;
    writer.handle = h;
    writer.state = &state;
    writer.on_event = &on_event;
    writer.context = context;
    writer.count = [this](long code) { CountRequest("WATCH", code); };
    StreamTransfer transfer;
    transfer.easy = h;
    transfer.stream = true;
    internal::Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    internal::Curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, &StreamTransfer::Write);
    internal::Curl().easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
    internal::Curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, &WatchWriter::Header);
    internal::Curl().easy_setopt(h, CURLOPT_HEADERDATA, &writer);
    {
      dra::MutexLock lock(&state.mu);
      state.transfer = &transfer;
    }
    Submit(transfer);
    // Takes what arrives until the transfer completes; ends it early on
    // Stop() or an error. A handler too far behind fails the transfer
    // itself (StreamTransfer::Write).
    bool cancelled = false;
    std::string chunk;
    while (true) {
      bool done = false;
      {
        dra::MutexLock lock(&transfer.mu);
        while (transfer.received.empty() && !transfer.done && !(state.stop && !cancelled)) {
          transfer.cv.Wait(&transfer.mu);
        }
        chunk.clear();
        chunk.swap(transfer.received);
        done = transfer.done;
      }
      if (!cancelled && (state.stop || (!chunk.empty() && !writer.Consume(chunk)))) {
        Cancel(transfer);
        cancelled = true;
      }
      if (done && chunk.empty()) break;
    }
    {
      dra::MutexLock lock(&state.mu);
      state.transfer = nullptr;
    }
    CURLcode result;
    {
      dra::MutexLock lock(&transfer.mu);
      while (transfer.cancelling) transfer.cv.Wait(&transfer.mu);
      result = transfer.result;
      if (transfer.overrun && !writer.error.has_value()) {
        writer.error = absl::ResourceExhaustedError(
            absl::StrCat("watch: the handler fell ", kMaxWatchBacklog >> 20, " MiB behind the stream [", context, "]"));
      }
    }
    if (writer.http_code == 0) internal::Curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &writer.http_code);
    writer.Count();
    HttpResponse transport;
    transport.curl_code = result;
    transport.curl_error = error[0] != '\0' ? error : internal::Curl().easy_strerror(result);
    internal::Curl().easy_cleanup(h);
    internal::Curl().slist_free_all(headers);
    internal::Curl().slist_free_all(connect_to_list);

    if (state.stop) return absl::OkStatus();
    if (writer.error.has_value()) return *writer.error;
    if (writer.http_code == 401 && !refreshed && auth.Refresh()) {
      refreshed = true;
      continue;
    }
    if (writer.http_code != 0 && writer.http_code != 200) {
      if (writer.protobuf) {
        absl::StatusOr<json> decoded = internal::DecodeProtobuf(writer.error_body);
        if (decoded.ok()) writer.error_body = decoded->dump();
      }
      return internal::StatusFromResponse(static_cast<int>(writer.http_code), writer.error_body, context);
    }
    if (result != CURLE_OK) return TransportError(transport, context);
    return absl::OkStatus();  // the server ended the stream
  }
}

// ---------------------------------------------------------------------------
// Client

Client::Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

absl::StatusOr<std::shared_ptr<Client>> Client::Create(ClientConfig config) {
  if (absl::Status status = internal::LoadCurl(); !status.ok()) return status;
  auto impl = std::make_shared<Impl>(std::move(config));
  if (absl::Status status = impl->Init(); !status.ok()) return status;
  return std::shared_ptr<Client>(new Client(std::move(impl)));
}

const ClientConfig& Client::config() const { return impl_->config; }

std::vector<RequestCount> Client::RequestCounts() const {
  dra::MutexLock lock(&impl_->counts_mu);
  std::vector<RequestCount> counts;
  counts.reserve(impl_->counts.size());
  for (const auto& [key, count] : impl_->counts) counts.push_back({key.first, key.second, count});
  return counts;
}

absl::StatusOr<json> Client::Get(const ResourceRef& ref, const std::string& ns, const std::string& name,
                                 absl::Time deadline) {
  if (absl::Status s = CheckScope(ref, ns, false); !s.ok()) return s;
  if (absl::Status s = CheckName(ref, name); !s.ok()) return s;
  HttpRequest request = impl_->Request(ref, "GET", internal::ResourcePath(ref, ns, name));
  request.deadline = deadline;
  return impl_->Run(request);
}

absl::StatusOr<std::string> Client::ServerVersion() {
  absl::StatusOr<json> doc = impl_->Run(HttpRequest{"GET", "/version", "", "", ""});
  if (!doc.ok()) return doc.status();
  auto version = doc->find("gitVersion");
  if (!doc->is_object() || version == doc->end() || !version->is_string() || version->get<std::string>().empty()) {
    return absl::InternalError("GET /version: the answer has no gitVersion");
  }
  return version->get<std::string>();
}

absl::StatusOr<ListResult> Client::List(const ResourceRef& ref, const std::string& ns, const ListOptions& options) {
  if (absl::Status s = CheckScope(ref, ns, true); !s.ok()) return s;
  std::string query = internal::Query({
      {"labelSelector", options.label_selector},
      {"fieldSelector", options.field_selector},
      {"limit", options.limit > 0 ? std::to_string(options.limit) : ""},
      {"continue", options.continue_token},
      {"resourceVersion", options.resource_version},
  });
  absl::StatusOr<json> doc = impl_->Run(impl_->Request(ref, "GET", internal::ResourcePath(ref, ns), query));
  if (!doc.ok()) return doc.status();
  ListResult result;
  result.resource_version = StringAt(*doc, "metadata", "resourceVersion");
  result.continue_token = StringAt(*doc, "metadata", "continue");
  std::string kind = doc->value("kind", "");
  if (absl::EndsWith(kind, "List")) kind.resize(kind.size() - 4);
  std::string api_version = doc->value("apiVersion", "");
  auto items = doc->find("items");
  if (items != doc->end() && items->is_array()) {
    result.items.reserve(items->size());
    for (json& item : *items) {
      if (item.is_object()) {
        if (!item.contains("kind") && !kind.empty()) item["kind"] = kind;
        if (!item.contains("apiVersion") && !api_version.empty()) item["apiVersion"] = api_version;
      }
      result.items.push_back(std::move(item));
    }
  }
  return result;
}

absl::StatusOr<ListResult> Client::ListAll(const ResourceRef& ref, const std::string& ns, ListOptions options) {
  if (options.limit <= 0) options.limit = 500;
  ListResult all;
  while (true) {
    absl::StatusOr<ListResult> page = List(ref, ns, options);
    if (!page.ok()) {
      if (IsGone(page.status()) && !options.continue_token.empty()) {
        // The continue token expired: one consistent list without paging.
        options.continue_token.clear();
        options.limit = 0;
        return List(ref, ns, options);
      }
      return page.status();
    }
    for (json& item : page->items) all.items.push_back(std::move(item));
    all.resource_version = page->resource_version;
    if (page->continue_token.empty()) break;
    options.continue_token = page->continue_token;
    options.resource_version.clear();  // not allowed together with continue
  }
  return all;
}

absl::StatusOr<json> Client::Create(const ResourceRef& ref, const std::string& ns, const json& object) {
  std::string namespace_ = ns.empty() && ref.namespaced ? StringAt(object, "metadata", "namespace") : ns;
  if (absl::Status s = CheckScope(ref, namespace_, false); !s.ok()) return s;
  return impl_->CreateObject(ref, namespace_, object);
}

absl::StatusOr<json> Client::Update(const ResourceRef& ref, const std::string& ns, const json& object) {
  std::string namespace_ = ns.empty() && ref.namespaced ? StringAt(object, "metadata", "namespace") : ns;
  if (absl::Status s = CheckScope(ref, namespace_, false); !s.ok()) return s;
  std::string name = StringAt(object, "metadata", "name");
  if (absl::Status s = CheckName(ref, name); !s.ok()) return s;
  HttpRequest request = impl_->Request(ref, "PUT", internal::ResourcePath(ref, namespace_, name));
  impl_->SetBody(request, object);
  return impl_->ExecuteWithBody(request, object).value;
}

absl::StatusOr<json> Client::UpdateStatus(const ResourceRef& ref, const std::string& ns, const json& object,
                                          const UpdateOptions& options) {
  std::string namespace_ = ns.empty() && ref.namespaced ? StringAt(object, "metadata", "namespace") : ns;
  if (absl::Status s = CheckScope(ref, namespace_, false); !s.ok()) return s;
  std::string name = StringAt(object, "metadata", "name");
  if (absl::Status s = CheckName(ref, name); !s.ok()) return s;
  HttpRequest request = impl_->Request(ref, "PUT", internal::ResourcePath(ref, namespace_, name, "status"),
                                       internal::Query({{"fieldManager", options.field_manager}}));
  request.deadline = options.deadline;
  impl_->SetBody(request, object);
  return impl_->ExecuteWithBody(request, object).value;
}

absl::StatusOr<json> Client::Patch(const ResourceRef& ref, const std::string& ns, const std::string& name,
                                   PatchType type, const json& body, const PatchOptions& options) {
  if (absl::Status s = CheckScope(ref, ns, false); !s.ok()) return s;
  if (absl::Status s = CheckName(ref, name); !s.ok()) return s;
  std::string content_type;
  switch (type) {
    case PatchType::kMerge:
      content_type = "application/merge-patch+json";
      break;
    case PatchType::kJson:
      content_type = "application/json-patch+json";
      break;
    case PatchType::kStrategicMerge:
      content_type = "application/strategic-merge-patch+json";
      break;
    case PatchType::kApply:
      content_type = "application/apply-patch+yaml";  // JSON is YAML
      if (options.field_manager.empty()) {
        return absl::InvalidArgumentError("server-side apply needs PatchOptions::field_manager");
      }
      break;
  }
  std::string query = internal::Query({
      {"fieldManager", options.field_manager},
      {"force", options.force ? "true" : ""},
  });
  HttpRequest request = impl_->Request(ref, "PATCH", internal::ResourcePath(ref, ns, name, options.subresource), query);
  request.body = body.dump();
  request.content_type = std::move(content_type);
  request.deadline = options.deadline;
  return impl_->Run(request);
}

absl::Status Client::Delete(const ResourceRef& ref, const std::string& ns, const std::string& name,
                            const Preconditions& preconditions) {
  if (absl::Status s = CheckScope(ref, ns, false); !s.ok()) return s;
  if (absl::Status s = CheckName(ref, name); !s.ok()) return s;
  std::string body;
  if (!preconditions.uid.empty() || !preconditions.resource_version.empty()) {
    json pre = json::object();
    if (!preconditions.uid.empty()) pre["uid"] = preconditions.uid;
    if (!preconditions.resource_version.empty()) pre["resourceVersion"] = preconditions.resource_version;
    body = json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", pre}}.dump();
  }
  HttpRequest request = impl_->Request(ref, "DELETE", internal::ResourcePath(ref, ns, name));
  request.body = std::move(body);
  if (!request.body.empty()) request.content_type = "application/json";
  absl::StatusOr<json> result = impl_->Run(request);
  return result.status();
}

absl::StatusOr<HttpRequest> Client::Impl::WatchRequest(const ResourceRef& ref, const std::string& ns,
                                                       const WatchOptions& options) const {
  if (absl::Status s = CheckScope(ref, ns, true); !s.ok()) return s;
  if (options.send_initial_events && !options.allow_bookmarks) {
    return absl::InvalidArgumentError(
        "WatchOptions: send_initial_events: Invalid value: true: needs allow_bookmarks (a bookmark ends the initial "
        "events)");
  }
  std::string query = internal::Query({
      {"watch", "true"},
      {"resourceVersion", options.resource_version},
      {"labelSelector", options.label_selector},
      {"fieldSelector", options.field_selector},
      {"allowWatchBookmarks", options.allow_bookmarks ? "true" : ""},
      {"sendInitialEvents", options.send_initial_events ? "true" : ""},
      {"resourceVersionMatch", options.send_initial_events ? "NotOlderThan" : ""},
      {"timeoutSeconds", options.timeout_seconds > 0 ? std::to_string(options.timeout_seconds) : ""},
  });
  HttpRequest request = Request(ref, "GET", internal::ResourcePath(ref, ns), query);
  request.stream = true;
  if (options.metadata_only) {
    request.metadata_only = true;
    request.protobuf = config.protobuf;  // PartialObjectMetadata has a schema whatever the resource
  }
  return request;
}

std::unique_ptr<WatchHandle> Client::Watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                                           std::function<void(const WatchEvent&)> on_event) {
  auto state = std::make_shared<WatchHandle::State>();
  absl::StatusOr<HttpRequest> request = impl_->WatchRequest(ref, ns, options);
  if (!request.ok()) {
    state->Finish(request.status());
    return std::unique_ptr<WatchHandle>(new WatchHandle(state, std::thread()));
  }
  std::shared_ptr<Impl> impl = impl_;
  std::thread thread([impl, state, request = *std::move(request), timeout = options.timeout_seconds,
                      on_event = std::move(on_event)]() mutable {
    state->Finish(impl->RunWatch(*state, std::move(request), timeout, on_event));
  });
  base::NameThread(thread, "dra-k8s-watch");
  return std::unique_ptr<WatchHandle>(new WatchHandle(state, std::move(thread)));
}

WatchStop::WatchStop() : state_(std::make_shared<WatchHandle::State>()) {}

void WatchStop::Stop() const { state_->Stop(); }

bool WatchStop::Stopped() const { return state_->stop; }

absl::Status Client::RunWatch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                              const std::function<void(const WatchEvent&)>& on_event, const WatchStop& stop) {
  absl::StatusOr<HttpRequest> request = impl_->WatchRequest(ref, ns, options);
  if (!request.ok()) return request.status();
  return impl_->RunWatch(*stop.state_, *std::move(request), options.timeout_seconds, on_event);
}

absl::StatusOr<ResourceClaim> Client::GetResourceClaim(const std::string& ns, const std::string& name,
                                                       absl::Time deadline) {
  absl::StatusOr<json> doc = Get(kResourceClaims, ns, name, deadline);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<ResourceClaim> claim = ResourceClaimFromJson(*doc);
  if (!claim.ok()) {
    return absl::Status(claim.status().code(), absl::StrCat("resourceclaim ", ns, "/", name,
                                                            " from the API server: ", claim.status().message()));
  }
  return claim;
}

absl::StatusOr<ResourceClaim> Client::UpdateResourceClaimStatus(const ResourceClaim& claim) {
  absl::StatusOr<json> doc = UpdateStatus(kResourceClaims, claim.metadata.namespace_, ToJson(claim));
  if (!doc.ok()) return doc.status();
  return ResourceClaimFromJson(*doc);
}

}  // namespace dra::k8s
