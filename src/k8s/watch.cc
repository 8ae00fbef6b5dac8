#include "k8s/watch.h"

#include <curl/curl.h>

#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "k8s/curl_library.h"
#include "k8s/gzip_members.h"
#include "k8s/protobuf_codec.h"

namespace dra::k8s {

using nlohmann::json;

namespace internal {
namespace {

// Error bodies beyond this are cut.
constexpr size_t kMaxErrorBody = 1 << 20;
// A watch's bytes received and not yet handled beyond this end the watch
// (its informer starts another): a handler stuck that long must not hold
// the stream's bytes in memory without end.
constexpr size_t kMaxWatchBacklog = 64 << 20;

}  // namespace

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

}  // namespace internal

void WatchStop::State::Stop() {
  stop = true;
  dra::MutexLock lock(&mu);
  if (transfer != nullptr) {
    dra::MutexLock transfer_lock(&transfer->mu);
    transfer->cv.SignalAll();
  }
  cv.SignalAll();
}

WatchStop::WatchStop() : state_(std::make_shared<State>()) {}

void WatchStop::Stop() const { state_->Stop(); }

bool WatchStop::Stopped() const { return state_->stop; }

namespace internal {

// Decodes one watch response. Header() runs on the I/O thread, before any of
// the body reaches Consume() on the watch's thread through the transfer's
// lock.
struct Watcher::Writer {
  Transport* transport = nullptr;
  CURL* handle = nullptr;
  WatchStop::State* state = nullptr;
  const std::function<void(const WatchEvent&)>* on_event = nullptr;
  std::string context;
  bool counted = false;  // once: when the headers are in, or when the transfer ended without them
  long http_code = 0;
  std::string error_body;
  bool protobuf = false;              // the stream's format, from its Content-Type
  std::unique_ptr<GzipMembers> gzip;  // Content-Encoding: gzip
  LineDecoder lines;
  FrameDecoder frames;
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
    absl::StatusOr<json> doc = DecodeProtobufWatchEvent(frame);
    if (!doc.ok())
      return Rewrap(doc.status(), doc.status().code(), absl::StrCat(doc.status().message(), " [", context, "]"));
    return OnEvent(*std::move(doc));
  }

  absl::Status OnEvent(json doc) {
    WatchEvent event;
    if (auto it = doc.find("type"); it != doc.end() && it->is_string()) event.type = it->get<std::string>();
    if (auto it = doc.find("object"); it != doc.end()) event.object = std::move(*it);
    if (event.type == "ERROR") return StatusFromMetaStatus(event.object, 500, context);
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
    if (counted) return;
    counted = true;
    transport->CountRequest("WATCH", http_code);
  }

  // A watch may send no body for minutes: count it once its headers are in.
  static size_t Header(char* data, size_t size, size_t count, void* user) {
    auto* self = static_cast<Writer*>(user);
    const std::string_view line(data, size * count);
    const std::string lower = absl::AsciiStrToLower(absl::string_view(line.data(), line.size()));
    if (absl::StartsWith(lower, "content-encoding:") && lower.find("gzip", 17) != std::string::npos) {
      self->gzip = std::make_unique<GzipMembers>();
    }
    if (line == "\r\n" || line == "\n") {
      long code = 0;
      Curl().easy_getinfo(self->handle, CURLINFO_RESPONSE_CODE, &code);
      if (code >= 200) {
        self->http_code = code;
        char* type = nullptr;
        Curl().easy_getinfo(self->handle, CURLINFO_CONTENT_TYPE, &type);
        self->protobuf = type != nullptr && IsProtobufContentType(type);
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
        error = Rewrap(status, absl::StatusCode::kInternal,
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

absl::Status Watcher::Run(WatchStop::State& state, const HttpRequest& request, int64_t timeout_seconds,
                          const std::function<void(const WatchEvent&)>& on_event) {
  const std::string context = request.Context();
  WaitForRateLimit(state);
  const absl::Duration timeout =
      timeout_seconds > 0 ? absl::Seconds(timeout_seconds) + absl::Seconds(60) : absl::ZeroDuration();
  bool refreshed = false;
  while (true) {
    if (state.stop) return absl::OkStatus();
    absl::StatusOr<Credentials> creds = auth_.Get();
    if (!creds.ok()) {
      return Rewrap(creds.status(), creds.status().code(),
                    absl::StrCat("getting credentials: ", creds.status().message(), " [", context, "]"));
    }
    Writer writer;
    writer.transport = &transport_;
    writer.state = &state;
    writer.on_event = &on_event;
    writer.context = context;
    absl::StatusOr<HttpResponse> response = Stream(state, request, *creds, timeout, writer);
    if (!response.ok()) return response.status();
    if (state.stop) return absl::OkStatus();
    if (writer.error.has_value()) return *writer.error;
    if (writer.http_code == 401 && !refreshed && auth_.Refresh()) {
      refreshed = true;
      continue;
    }
    return Outcome(writer, *response, context);
  }
}

void Watcher::WaitForRateLimit(WatchStop::State& state) {
  absl::Duration wait = limiter_.Reserve(absl::Now());
  const absl::Time until = absl::Now() + wait;
  dra::MutexLock lock(&state.mu);
  while (!state.stop && !state.cv.WaitWithDeadline(&state.mu, until)) {
  }
}

absl::StatusOr<HttpResponse> Watcher::Stream(WatchStop::State& state, const HttpRequest& request,
                                             const Credentials& creds, absl::Duration timeout, Writer& writer) {
  CURL* h = Curl().easy_init();
  if (h == nullptr) return absl::ResourceExhaustedError("watch: cannot allocate a curl handle");
  CurlLists lists;
  char error[CURL_ERROR_SIZE] = {0};
  transport_.Configure(h, request, creds, timeout, lists);
  writer.handle = h;
  StreamTransfer transfer;
  transfer.easy = h;
  transfer.stream = true;
  Curl().easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  Curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, &StreamTransfer::Write);
  Curl().easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  Curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, &Writer::Header);
  Curl().easy_setopt(h, CURLOPT_HEADERDATA, &writer);
  {
    dra::MutexLock lock(&state.mu);
    state.transfer = &transfer;
  }
  transport_.Submit(transfer);
  Pump(state, transfer, writer);
  {
    dra::MutexLock lock(&state.mu);
    state.transfer = nullptr;
  }
  HttpResponse response;
  {
    dra::MutexLock lock(&transfer.mu);
    while (transfer.cancelling) transfer.cv.Wait(&transfer.mu);
    response.curl_code = transfer.result;
    if (transfer.overrun && !writer.error.has_value()) {
      writer.error = absl::ResourceExhaustedError(absl::StrCat("watch: the handler fell ", kMaxWatchBacklog >> 20,
                                                               " MiB behind the stream [", writer.context, "]"));
    }
  }
  if (writer.http_code == 0) Curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &writer.http_code);
  writer.Count();
  response.curl_error = error[0] != '\0' ? error : Curl().easy_strerror(response.curl_code);
  Curl().easy_cleanup(h);
  return response;
}

void Watcher::Pump(WatchStop::State& state, StreamTransfer& transfer, Writer& writer) {
  // A handler too far behind fails the transfer itself
  // (StreamTransfer::Write).
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
      transport_.Cancel(transfer);
      cancelled = true;
    }
    if (done && chunk.empty()) break;
  }
}

absl::Status Watcher::Outcome(Writer& writer, const HttpResponse& response, const std::string& context) const {
  if (writer.http_code != 0 && writer.http_code != 200) {
    if (writer.protobuf) {
      absl::StatusOr<json> decoded = DecodeProtobuf(writer.error_body);
      if (decoded.ok()) writer.error_body = decoded->dump();
    }
    return StatusFromResponse(static_cast<int>(writer.http_code), writer.error_body, context);
  }
  if (response.curl_code != CURLE_OK) return transport_.TransportError(response, context);
  return absl::OkStatus();  // the server ended the stream
}

}  // namespace internal
}  // namespace dra::k8s
