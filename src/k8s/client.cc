#include "dra/k8s/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "base/mutex.h"
#include "dra/k8s/resource_claim_json.h"
#include "k8s/auth.h"
#include "k8s/curl_library.h"
#include "k8s/http_util.h"
#include "k8s/protobuf_codec.h"
#include "k8s/transport.h"
#include "k8s/watch.h"

namespace dra::k8s {

using internal::HttpRequest;
using internal::HttpResponse;
using nlohmann::json;

namespace {

// Retry-After beyond this is cut short: a node agent should rather fail and
// let its caller decide.
constexpr absl::Duration kMaxRetryAfter = absl::Seconds(60);

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
      return !internal::IsTlsAlert(curl_error);  // the server rejected our client certificate
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

// The last attempt's error, when waiting `wait` for the next would pass the
// call's deadline.
absl::Status NotRetried(const absl::Status& status, absl::Duration wait) {
  return internal::Rewrap(status, status.code(),
                          absl::StrCat(status.message(), " (not retried: the retry in ", absl::FormatDuration(wait),
                                       " would come after the call's deadline)"));
}

// Sleeps `wait` before the next attempt, unless that would pass `deadline`:
// then the last attempt's `status`, saying so.
absl::Status WaitToRetry(const absl::Status& status, absl::Duration wait, absl::Time deadline) {
  if (absl::Now() + wait >= deadline) return NotRetried(status, wait);
  absl::SleepFor(wait);
  return absl::OkStatus();
}

// The value of a response that ends the request: a 2xx's object, or the error
// of a body that does not decode. nullopt for other codes, with a protobuf
// body made JSON for StatusFromResponse.
std::optional<absl::StatusOr<json>> Decode(HttpResponse& response, const std::string& context) {
  const long code = response.http_code;
  if (internal::IsProtobufContentType(response.content_type)) {
    absl::StatusOr<json> decoded = internal::DecodeProtobuf(response.body);
    if (!decoded.ok()) {
      return internal::Rewrap(decoded.status(), absl::StatusCode::kInternal,
                              absl::StrCat(decoded.status().message(), " [", context, ": HTTP ", code, "]"));
    }
    if (code >= 200 && code < 300) return *std::move(decoded);
    response.body = decoded->dump();
  }
  if (code < 200 || code >= 300) return std::nullopt;
  if (response.body.empty()) return json::object();
  json doc = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InternalError(absl::StrCat("response is not JSON [", context, ": HTTP ", code, "]"));
  }
  return doc;
}

}  // namespace

struct Client::Impl {
  explicit Impl(ClientConfig c)
      : config(std::move(c)),
        auth(config),
        limiter(config.qps, config.burst),
        transport(config),
        watcher(transport, auth, limiter) {}

  absl::Status Init();
  // Waits for the client-side rate limit; DeadlineExceeded when the wait
  // would end past `deadline`.
  absl::Status Throttle(absl::Time deadline);

  struct Result {
    absl::StatusOr<json> value;
    bool uncertain = false;  // a POST that may have reached the server
  };
  // Sends `request`, retrying as client.h describes.
  Result Execute(const HttpRequest& request);
  // What one attempt is sent with.
  struct Attempt {
    internal::Credentials creds;
    absl::Duration timeout;
  };
  // Throttles, then gets the credentials and the timeout of an attempt.
  absl::StatusOr<Attempt> PrepareAttempt(const HttpRequest& request, const std::string& context);
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
  absl::StatusOr<json> CreateObject(const ResourceRef& ref, const std::string& ns, const json& object,
                                    absl::Time deadline);
  absl::StatusOr<HttpRequest> WatchRequest(const ResourceRef& ref, const std::string& ns,
                                           const WatchOptions& options) const;

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
  internal::Transport transport;
  internal::Watcher watcher;
};

absl::Status Client::Impl::Init() {
  if (absl::Status status = transport.Init(); !status.ok()) return status;
  if (config.max_retries < 0) config.max_retries = 0;
  if (auth.token_file() != nullptr) {
    if (absl::StatusOr<std::string> token = auth.token_file()->Token(); !token.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("client config: ", token.status().message()));
    }
  }
  return transport.Start();
}

absl::Status Client::Impl::Throttle(absl::Time deadline) {
  const absl::Time now = absl::Now();
  const absl::Duration wait = limiter.Reserve(now);
  if (wait <= absl::ZeroDuration()) return absl::OkStatus();
  if (now + wait >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat("client-side rate limit (qps ", config.qps, "): the next request ",
                                                    "would be sent after the call's deadline"));
  }
  absl::SleepFor(wait);
  return absl::OkStatus();
}

absl::StatusOr<Client::Impl::Attempt> Client::Impl::PrepareAttempt(const HttpRequest& request,
                                                                   const std::string& context) {
  if (absl::Status throttled = Throttle(request.deadline); !throttled.ok()) {
    return internal::Rewrap(throttled, throttled.code(), absl::StrCat(throttled.message(), " [", context, "]"));
  }
  absl::StatusOr<internal::Credentials> creds = auth.Get();
  if (!creds.ok()) {
    return internal::Rewrap(creds.status(), creds.status().code(),
                            absl::StrCat("getting credentials: ", creds.status().message(), " [", context, "]"));
  }
  const absl::Duration left = request.deadline - absl::Now();
  if (left <= absl::ZeroDuration()) {
    return absl::DeadlineExceededError(absl::StrCat("the call's deadline passed before the request [", context, "]"));
  }
  absl::Duration timeout = config.timeout;
  if (left != absl::InfiniteDuration() && (timeout <= absl::ZeroDuration() || left < timeout)) timeout = left;
  return Attempt{*std::move(creds), timeout};
}

Client::Impl::Result Client::Impl::Execute(const HttpRequest& request) {
  const bool is_post = request.method == "POST";
  const std::string context = request.Context();
  bool refreshed = false;
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<Attempt> prepared = PrepareAttempt(request, context);
    if (!prepared.ok()) return {prepared.status(), false};
    HttpResponse response = transport.Perform(request, prepared->creds, prepared->timeout);
    const bool more = attempt < config.max_retries;

    if (response.curl_code != CURLE_OK) {
      absl::Status status = transport.TransportError(response, context);
      if (!RetriableTransport(response.curl_code, response.curl_error)) return {status, false};
      if (is_post && !NotSent(response.curl_code) && response.request_sent) return {status, true};
      if (!more) return {status, false};
      if (absl::Status waited = WaitToRetry(status, base::Backoff(attempt), request.deadline); !waited.ok()) {
        return {waited, false};
      }
      continue;
    }
    if (std::optional<absl::StatusOr<json>> value = Decode(response, context)) return {*std::move(value), false};
    const long code = response.http_code;
    if (code == 401 && !refreshed && auth.Refresh()) {
      refreshed = true;  // new credentials get one more try, not counted as a retry
      --attempt;
      continue;
    }
    absl::Status status = internal::StatusFromResponse(static_cast<int>(code), response.body, context);
    if (!RetriableHttp(code)) return {status, false};
    if (is_post && code != 429) return {status, true};
    if (!more) return {status, false};
    std::optional<absl::Duration> after = internal::ParseRetryAfter(response.retry_after, absl::Now());
    const absl::Duration wait = after.has_value() ? std::min(*after, kMaxRetryAfter) : base::Backoff(attempt);
    if (absl::Status waited = WaitToRetry(status, wait, request.deadline); !waited.ok()) return {waited, false};
  }
}

absl::StatusOr<json> Client::Impl::CreateObject(const ResourceRef& ref, const std::string& ns, const json& object,
                                                absl::Time deadline) {
  HttpRequest request = Request(ref, "POST", internal::ResourcePath(ref, ns));
  request.deadline = deadline;
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

Client::Client(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

absl::StatusOr<std::shared_ptr<Client>> Client::Create(ClientConfig config) {
  if (absl::Status status = internal::LoadCurl(); !status.ok()) return status;
  auto impl = std::make_shared<Impl>(std::move(config));
  if (absl::Status status = impl->Init(); !status.ok()) return status;
  return std::shared_ptr<Client>(new Client(std::move(impl)));
}

const ClientConfig& Client::config() const { return impl_->config; }

std::vector<RequestCount> Client::RequestCounts() const { return impl_->transport.RequestCounts(); }

absl::StatusOr<json> Client::Get(const ResourceRef& ref, const std::string& ns, const std::string& name,
                                 absl::Time deadline) {
  if (absl::Status s = CheckScope(ref, ns, false); !s.ok()) return s;
  if (absl::Status s = CheckName(ref, name); !s.ok()) return s;
  HttpRequest request = impl_->Request(ref, "GET", internal::ResourcePath(ref, ns, name));
  request.deadline = deadline;
  return impl_->Run(request);
}

absl::StatusOr<std::string> Client::ServerVersion(absl::Time deadline) {
  HttpRequest request{"GET", "/version", "", "", ""};
  request.deadline = deadline;
  absl::StatusOr<json> doc = impl_->Run(request);
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
  HttpRequest request = impl_->Request(ref, "GET", internal::ResourcePath(ref, ns), query);
  request.deadline = options.deadline;
  absl::StatusOr<json> doc = impl_->Run(request);
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

absl::StatusOr<json> Client::Create(const ResourceRef& ref, const std::string& ns, const json& object,
                                    absl::Time deadline) {
  std::string namespace_ = ns.empty() && ref.namespaced ? StringAt(object, "metadata", "namespace") : ns;
  if (absl::Status s = CheckScope(ref, namespace_, false); !s.ok()) return s;
  return impl_->CreateObject(ref, namespace_, object, deadline);
}

absl::StatusOr<json> Client::Update(const ResourceRef& ref, const std::string& ns, const json& object,
                                    absl::Time deadline) {
  std::string namespace_ = ns.empty() && ref.namespaced ? StringAt(object, "metadata", "namespace") : ns;
  if (absl::Status s = CheckScope(ref, namespace_, false); !s.ok()) return s;
  std::string name = StringAt(object, "metadata", "name");
  if (absl::Status s = CheckName(ref, name); !s.ok()) return s;
  HttpRequest request = impl_->Request(ref, "PUT", internal::ResourcePath(ref, namespace_, name));
  request.deadline = deadline;
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
                            const Preconditions& preconditions, absl::Time deadline) {
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
  request.deadline = deadline;
  request.body = std::move(body);
  if (!request.body.empty()) request.content_type = "application/json";
  absl::StatusOr<json> result = impl_->Run(request);
  return result.status();
}

absl::Status Client::RunWatch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                              const std::function<void(const WatchEvent&)>& on_event, const WatchStop& stop) {
  absl::StatusOr<HttpRequest> request = impl_->WatchRequest(ref, ns, options);
  if (!request.ok()) return request.status();
  return impl_->watcher.Run(*stop.state_, *request, options.timeout_seconds, on_event);
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

absl::StatusOr<ResourceClaim> Client::UpdateResourceClaimStatus(const ResourceClaim& claim, absl::Time deadline) {
  UpdateOptions options;
  options.deadline = deadline;
  absl::StatusOr<json> doc = UpdateStatus(kResourceClaims, claim.metadata.namespace_, ToJson(claim), options);
  if (!doc.ok()) return doc.status();
  return ResourceClaimFromJson(*doc);
}

}  // namespace dra::k8s
