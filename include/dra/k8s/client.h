/// @file
/// dra::k8s::Client: a small, thread-safe Kubernetes REST client over HTTPS
/// (libcurl), generic over resources and working on nlohmann::json objects,
/// with typed helpers for the objects this SDK models.
///
/// @code
///   auto config = dra::k8s::LoadDefaultConfig();
///   auto client = dra::k8s::Client::Create(*config);
///   auto claim = (*client)->GetResourceClaim("default", "my-claim");
/// @endcode
///
/// Behaviour every verb shares:
/// - Requests from all threads run on one libcurl multi handle driven by the
///   client's I/O thread: over HTTPS they are HTTP/2 streams multiplexed on
///   one TLS connection (as client-go does); when h2 is not negotiated (plain
///   http) they use up to 16 HTTP/1.1 connections, kept alive, and each
///   watch holds one of its own. A watch's events are handled on the thread
///   that runs it (RunWatch).
/// - One client-side token bucket (ClientConfig::qps/burst) paces every
///   request, retries included.
/// - Each request has ClientConfig::timeout; watches use their own.
/// - GET, LIST, PUT, PATCH and DELETE are retried (ClientConfig::max_retries)
///   after connection errors, 429 and 5xx, honouring Retry-After, else with
///   jittered exponential backoff. A POST (Create) is retried only when it
///   certainly did not reach the server (connection refused, DNS, 429). When a
///   create may have reached the server (timeout, broken connection, 5xx), an
///   object with a fixed name is looked up: if it exists it is returned, if
///   not the create is retried; with generateName the create is not repeated
///   and the result is Unavailable saying it may have happened.
/// - After a 401 the credentials are refreshed (token file re-read, exec
///   plugin re-run) and the request is sent once more.
///
/// Errors are absl::Status with the API server's metav1.Status message, then
/// " [<METHOD> <path>: HTTP <code>]". Codes:
/// @code{.unparsed}
///   400, 422         InvalidArgument (field causes appended, "field: message")
///   401              Unauthenticated
///   403              PermissionDenied
///   404              NotFound
///   409              AlreadyExists when the reason is AlreadyExists, else
///                    Aborted (a conflict: re-read and retry)
///   410              FailedPrecondition with a message starting "expired: "
///                    (resource version too old: relist); see IsGone()
///   429              ResourceExhausted
///   5xx              Unavailable
///   other HTTP codes Unknown
///   no HTTP response: Unavailable (connection errors, and a failed TLS
///                    verification, whose message says so and names the CA
///                    used); DeadlineExceeded (timeout); FailedPrecondition (a
///                    CA file or client certificate curl cannot load)
/// @endcode
/// Every status that came from an HTTP response carries the code as a payload
/// (HttpStatusCode()), and the metav1.Status reason when there was one
/// (StatusReason()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/k8s/client_config.h"
#include "dra/k8s/resource_claim.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// Which collection a request is about: `/api/<version>` for the core group
/// (group ""), `/apis/<group>/<version>` otherwise.
struct ResourceRef {
  std::string group;     ///< API group; "" for the core group
  std::string version;   ///< API version, e.g. "v1"
  std::string resource;  ///< plural, lower case: "resourceclaims"
  bool namespaced;       ///< whether the objects live in namespaces
};

/// resource.k8s.io/v1 ResourceSlices (cluster-scoped).
inline const ResourceRef kResourceSlices{"resource.k8s.io", "v1", "resourceslices", false};
/// resource.k8s.io/v1 ResourceClaims (namespaced).
inline const ResourceRef kResourceClaims{"resource.k8s.io", "v1", "resourceclaims", true};
/// resource.k8s.io/v1 DeviceClasses (cluster-scoped).
inline const ResourceRef kDeviceClasses{"resource.k8s.io", "v1", "deviceclasses", false};
/// core/v1 Nodes (cluster-scoped).
inline const ResourceRef kNodes{"", "v1", "nodes", false};

/// Query parameters of a LIST.
struct ListOptions {
  std::string label_selector;    ///< default: everything
  std::string field_selector;    ///< default: everything
  int64_t limit = 0;             ///< page size; 0: no paging (ListAll: 500)
  std::string continue_token;    ///< from the previous page
  std::string resource_version;  ///< "" (most recent, from etcd), "0" (any, from the cache), or a version
  /// Not throttled, sent or retried past it (see Get); ListAll: every page.
  absl::Time deadline = absl::InfiniteFuture();
};

/// One page of a LIST, or all of them.
struct ListResult {
  /// The objects, each with apiVersion and kind filled in from the list.
  std::vector<nlohmann::json> items;
  std::string resource_version;  ///< the list's metadata.resourceVersion: start a watch here
  std::string continue_token;    ///< empty on the last page
};

/// The body format of a PATCH, sent as its Content-Type.
enum class PatchType {
  kMerge,           ///< application/merge-patch+json (RFC 7386)
  kJson,            ///< application/json-patch+json (RFC 6902): the body is an array of operations
  kStrategicMerge,  ///< application/strategic-merge-patch+json: built-in types only, not CRDs
  kApply,           ///< application/apply-patch+yaml (server-side apply): needs field_manager
};

/// Query parameters and limits of a PATCH.
struct PatchOptions {
  std::string field_manager;  ///< required for kApply
  bool force = false;         ///< kApply only: take over conflicting fields
  std::string subresource;    ///< e.g. "status"; default: the object itself
  /// Not throttled, sent or retried past it (see Get).
  absl::Time deadline = absl::InfiniteFuture();
};

/// Query parameters and limits of a PUT to the status subresource.
struct UpdateOptions {
  /// The manager the server records the fields this update changes under
  /// (metadata.managedFields); default: derived from the user agent.
  std::string field_manager;
  /// Not throttled, sent or retried past it (see Get).
  absl::Time deadline = absl::InfiniteFuture();
};

/// Delete preconditions: the object is deleted only if it still has this UID
/// and/or resource version (Conflict otherwise). Empty: no precondition.
struct Preconditions {
  std::string uid;               ///< metadata.uid the object must have
  std::string resource_version;  ///< metadata.resourceVersion the object must have
};

/// Query parameters of a WATCH.
struct WatchOptions {
  std::string resource_version;  ///< start after this version; "" : from now (after a synthetic ADDED per object)
  std::string label_selector;    ///< default: everything
  std::string field_selector;    ///< default: everything
  bool allow_bookmarks = true;   ///< ask for BOOKMARK events, which carry a newer resourceVersion
  /// Ask the server to end the stream after this many seconds; 0 means the
  /// server's default (kube-apiserver: 30 to 60 minutes, its
  /// --min-request-timeout of 1800 s times 1 to 2; client-go asks for 5 to
  /// 10). With a timeout, the client gives up if nothing ends the stream for
  /// timeout_seconds + 60 s.
  int64_t timeout_seconds = 0;
  /// Events carry only the objects' metadata (kind PartialObjectMetadata,
  /// apiVersion meta.k8s.io/v1), as client-go's metadata informers ask: a
  /// watcher that mostly needs names and resource versions receives a small
  /// fraction of the bytes. A server without that transformation sends the
  /// whole objects.
  bool metadata_only = false;
  /// A watch-list (WatchList, on by default since Kubernetes 1.34): the
  /// stream starts with an ADDED event per object at resource_version or
  /// later ("": the latest), then a BOOKMARK annotated
  /// k8s.io/initial-events-end: "true" (kInitialEventsEnd) whose version is
  /// the list's, then the changes, as a LIST and a WATCH would give them in
  /// one request. Needs allow_bookmarks. A server with the feature off
  /// refuses it (InvalidArgument, HTTP 422).
  bool send_initial_events = false;
};

/// The annotation of the bookmark that ends a watch-list's initial events.
inline constexpr char kInitialEventsEnd[] = "k8s.io/initial-events-end";

/// One event of a watch stream.
struct WatchEvent {
  std::string type;       ///< ADDED, MODIFIED, DELETED or BOOKMARK
  nlohmann::json object;  ///< the object; a BOOKMARK's carries little but metadata.resourceVersion
};

/// Ends a watch run with Client::RunWatch from another thread: the one
/// running (a blocked read is interrupted at once) and every later one with
/// the same WatchStop, which then returns at once. Thread-safe.
class WatchStop {
 public:
  /// Not stopped.
  WatchStop();
  /// Stops the watch running with it and every later one. Idempotent.
  void Stop() const;
  /// Whether Stop() was called.
  bool Stopped() const;

  struct State;  // internal

 private:
  friend class Client;
  std::shared_ptr<State> state_;
};

/// Requests a Client has sent, for metrics: by HTTP method ("WATCH" for
/// watches) and the response's status code ("<error>" when none came back).
/// Each retry counts.
struct RequestCount {
  std::string verb;    ///< the HTTP method, or "WATCH"
  std::string code;    ///< the HTTP status code, e.g. "200", or "<error>"
  uint64_t count = 0;  ///< requests with this verb and code
};

/// The REST client; client.h describes what every verb shares. Thread-safe.
class Client {
 public:
  /// Checks the config (server URL, matching cert/key, readable files, CA vs
  /// insecure) and reads the token file once so that mistakes show up here.
  static absl::StatusOr<std::shared_ptr<Client>> Create(ClientConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// The config it was created with.
  const ClientConfig& config() const;

  /// Sorted by verb, then code.
  std::vector<RequestCount> RequestCounts() const;

  /// @name Generic verbs
  /// For namespaced resources `ns` is required except for List and Watch,
  /// where empty means all namespaces. For cluster-scoped resources it must be
  /// empty. Create and Update take the namespace from the object when `ns` is
  /// empty. Every request verb has a deadline: in its options where it has
  /// options (List, ListAll, UpdateStatus, Patch), else as its last argument.
  ///@{

  /// With a `deadline` (a kubelet call's), the request is not throttled,
  /// sent or retried past it (the last error then says so) and its timeout
  /// ends by then.
  absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref, const std::string& ns, const std::string& name,
                                     absl::Time deadline = absl::InfiniteFuture());
  /// One page (or everything, with limit 0).
  absl::StatusOr<ListResult> List(const ResourceRef& ref, const std::string& ns, const ListOptions& options = {});
  /// All pages, following continue tokens (page size options.limit, default
  /// 500). If a continue token expires midway, lists again without paging, as
  /// client-go's pager does.
  absl::StatusOr<ListResult> ListAll(const ResourceRef& ref, const std::string& ns, ListOptions options = {});
  /// POST. metadata.generateName is honoured by the server.
  absl::StatusOr<nlohmann::json> Create(const ResourceRef& ref, const std::string& ns, const nlohmann::json& object,
                                        absl::Time deadline = absl::InfiniteFuture());
  /// PUT of the whole object, named by metadata.name. A metadata.resourceVersion
  /// in the object is a precondition: Aborted (IsConflict) if it is stale.
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref, const std::string& ns, const nlohmann::json& object,
                                        absl::Time deadline = absl::InfiniteFuture());
  /// PUT to the status subresource.
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, const std::string& ns,
                                              const nlohmann::json& object, const UpdateOptions& options = {});
  /// PATCH of the object (or of options.subresource) with `body` in the format
  /// `type`; returns the patched object. kApply needs options.field_manager.
  absl::StatusOr<nlohmann::json> Patch(const ResourceRef& ref, const std::string& ns, const std::string& name,
                                       PatchType type, const nlohmann::json& body, const PatchOptions& options = {});
  /// DELETE of the object, under `preconditions` (Aborted when they fail).
  absl::Status Delete(const ResourceRef& ref, const std::string& ns, const std::string& name,
                      const Preconditions& preconditions = {}, absl::Time deadline = absl::InfiniteFuture());

  /// Watches on the calling thread, for a caller that has a thread of its
  /// own to watch on (an informer), and returns when the watch ends.
  /// `on_event` is called for every event, in order. The watch ends when the
  /// server ends the stream, on an error, or on stop.Stop(); it is not
  /// restarted: the caller watches again from the last resourceVersion it saw
  /// (bookmarks carry one), or relists after IsGone(). ERROR events end the
  /// watch with their status instead of being delivered. Returns OK when the
  /// server closed the stream or `stop` was stopped; IsGone() when the
  /// resource version is too old (HTTP 410 or an ERROR event with code 410:
  /// relist); another error for failed requests, ERROR events and broken
  /// connections.
  absl::Status RunWatch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                        const std::function<void(const WatchEvent&)>& on_event, const WatchStop& stop);
  ///@}

  /// GET /version: the server's gitVersion, e.g. "v1.37.2".
  absl::StatusOr<std::string> ServerVersion(absl::Time deadline = absl::InfiniteFuture());

  /// @name Typed helpers
  ///@{

  /// GET of a ResourceClaim, decoded (a decoding error names the claim).
  absl::StatusOr<ResourceClaim> GetResourceClaim(const std::string& ns, const std::string& name,
                                                 absl::Time deadline = absl::InfiniteFuture());
  /// PUT to `resourceclaims/<name>/status`; the claim's resourceVersion is the
  /// precondition.
  absl::StatusOr<ResourceClaim> UpdateResourceClaimStatus(const ResourceClaim& claim,
                                                          absl::Time deadline = absl::InfiniteFuture());
  ///@}

 private:
  struct Impl;
  explicit Client(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

/// The HTTP status code of a response that produced `status`, if any.
std::optional<int> HttpStatusCode(const absl::Status& status);
/// The metav1.Status reason ("NotFound", "Conflict", "Expired", ...), or "".
std::string StatusReason(const absl::Status& status);
/// 410 Gone / Expired: the resource version is too old; list again.
bool IsGone(const absl::Status& status);
/// 409 with a reason other than AlreadyExists: re-read and retry.
bool IsConflict(const absl::Status& status);
/// `status` with "<context>: " before its message, its code and the API
/// server's details (HTTP status, reason) kept, so that the tests above still
/// answer.
absl::Status Annotate(const absl::Status& status, std::string_view context);
// 409 AlreadyExists is absl::StatusCode::kAlreadyExists and nothing else:
// test it with absl::IsAlreadyExists(). (A dra::k8s::IsAlreadyExists would be
// ambiguous with it through argument-dependent lookup.)

/// Payload type URLs used for HttpStatusCode() and StatusReason(); the
/// payloads are the decimal code and the reason text.
///@{
inline constexpr char kHttpStatusPayloadUrl[] = "type.dra.k8s.io/http-status-code";
inline constexpr char kStatusReasonPayloadUrl[] = "type.dra.k8s.io/status-reason";
///@}

}  // namespace dra::k8s
