/// @file
/// dra::k8s::Informer: one collection listed, then kept current by a watch,
/// in a local store, with every change handed to a handler; the one list and
/// watch loop of the SDK (the publisher's scopes and the binding-condition
/// reconciler run on it), as client-go's reflector and informer are for Go:
///
/// @code
///   class Claims : public dra::k8s::InformerHandler {
///     void OnEvent(const dra::k8s::InformerEvent& event) override { ... }
///   };
///   dra::k8s::InformerOptions options;
///   options.resource = dra::k8s::kResourceClaims;
///   auto informer = dra::k8s::Informer::Start(client, options, claims);
/// @endcode
///
/// How it keeps the store equal to the server, on one thread of its own
/// (named "dra-informer"), which also reads the watch:
/// - Lists, hands the differences to the store to the handler as events with
///   from_list set, then OnSynced(), and watches from the list's
///   resourceVersion with bookmarks. The list is a watch-list stream (one
///   request, served from kube-apiserver's watch cache, which goes on as the
///   watch), as client-go's reflector makes it; a LIST (all pages) and a
///   WATCH where the server refuses that (the WatchList feature off, as by
///   default before 1.34) or the watch is metadata-only.
/// - A watch the server ends is resumed from the last resourceVersion seen
///   (events and bookmarks carry it): no list.
/// - 410 Gone (the version was compacted away) lists again after a random
///   wait in [relist_spread/2, relist_spread]: the one case that needs a list.
///   Any other failure (a refused connection, an API
///   server restarting, an ERROR event) is reported to OnError and resumed
///   from the last version after a jittered backoff; a failed list is
///   retried the same way. So an API server restart costs each informer one
///   watch, and one list only if its version is gone by then.
/// - Field and label selectors are applied by the server; with
///   watch_metadata_only the watch carries only metadata (lists stay whole,
///   and are LISTs).
///   A field selector an older server does not know can fall back to a
///   coarser one that the informer refines itself (field_selector_fallback).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/k8s/client.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// What an informer lists and watches, and how.
struct InformerOptions {
  ResourceRef resource;  ///< the collection, e.g. kResourceClaims
  /// Empty: all namespaces (and the only choice for a cluster-scoped resource).
  std::string namespace_;
  std::string label_selector;  ///< default: everything
  std::string field_selector;  ///< default: everything
  /// Watch events carry only metadata (PartialObjectMetadata); lists return
  /// whole objects. For a watcher that made most changes itself and reads the
  /// few others whole (the publisher).
  bool watch_metadata_only = false;
  /// Applied to every listed or watched object before it is stored and
  /// handed on, so that a watcher that needs little of most objects keeps
  /// little (client-go's TransformFunc). Called on the informer's thread.
  std::function<void(nlohmann::json& object)> transform;
  /// For a field selector the server may not know: when a list is refused
  /// because a field of field_selector is no field label there (HTTP 400
  /// "field label not supported", as spec.pool.name of ResourceSlices before
  /// Kubernetes 1.37), the informer lists and watches with this selector
  /// instead, for good, and keeps only the objects `keep` accepts; the watch
  /// then carries whole objects, which metadata alone could not be filtered
  /// by. As the Go resourceslice controller does.
  struct FieldSelectorFallback {
    std::string field_selector;                              ///< the coarser selector
    std::function<bool(const nlohmann::json& object)> keep;  ///< which of its objects to store
  };
  std::optional<FieldSelectorFallback> field_selector_fallback;  ///< unset: no fallback
  /// List through a watch-list stream where the server allows it (and the
  /// watch is not metadata-only); false: LIST and WATCH always.
  bool watch_list = true;
  /// A list that a 410 made necessary first waits a random time in
  /// [relist_spread/2, relist_spread], because a kube-apiserver restart
  /// expires every node's watch at once and a thousand nodes listing in the
  /// same second is a wave (bench/scale measured one); client-go's reflector
  /// waits 0.8 to 1.6 s the same way. Zero: at once.
  absl::Duration relist_spread = absl::Milliseconds(1600);
  /// Backoff after a failed list or watch. Defaults 250 ms and 10 s.
  ///@{
  absl::Duration backoff_initial = absl::Milliseconds(250);
  absl::Duration backoff_max = absl::Seconds(10);
  ///@}
};

/// One list (every page, whole objects) as an informer with `options` makes
/// it: by options.field_selector, or, once the server has refused that
/// (`fell_back`, in and out), by the fallback's selector, keeping only what
/// its `keep` accepts. For a caller that needs the informer's view before the
/// informer has listed.
absl::StatusOr<ListResult> ListAsInformer(Client& client, const InformerOptions& options, bool& fell_back);

/// One change to the store, as handed to InformerHandler::OnEvent. Valid only
/// during that call.
struct InformerEvent {
  /// What happened to the object.
  enum class Type { kAdded, kModified, kDeleted };
  Type type;  ///< what happened
  /// The object as now stored; for kDeleted, as last known.
  const nlohmann::json& object;
  /// The object stored before: null for kAdded.
  const nlohmann::json* old;
  /// The change was found by comparing a list with the store (the first
  /// list, or one after 410), not seen on the watch: changes in between are
  /// folded into one.
  bool from_list;
};

/// Implemented by the user of an informer. Called on the informer's thread,
/// one call at a time, in the server's order; a call may read the informer's
/// store but must not stop or destroy the informer.
class InformerHandler {
 public:
  virtual ~InformerHandler() = default;
  /// One change to the store, after the store has been updated.
  virtual void OnEvent(const InformerEvent& event) = 0;
  /// After every list has been applied: the store is what the server had.
  virtual void OnSynced() {}
  /// A failed list or watch, before the informer retries it; `context` says
  /// which ("list resourceclaims", "watch resourceslices spec.driver=...").
  virtual void OnError(const absl::Status& /*status*/, std::string_view /*context*/) {}
};

/// Counters of an informer, for tests and metrics.
struct InformerStats {
  int64_t lists = 0;        ///< complete lists: the first, then one per 410
  int64_t watch_lists = 0;  ///< of those, the ones streamed as a watch-list
  int64_t watches = 0;      ///< watches started, watch-list streams included
  int64_t errors = 0;       ///< reports to OnError
  /// The server refused the field selector and the fallback is in use.
  bool field_selector_fallback = false;
};

/// A running informer; informer.h describes how it keeps its store current.
class Informer {
 public:
  /// Checks the options (InvalidArgument) and starts listing at once; never
  /// waits for the API server. `handler` must outlive the informer.
  static absl::StatusOr<std::unique_ptr<Informer>> Start(std::shared_ptr<Client> client, InformerOptions options,
                                                         InformerHandler& handler);
  /// Stop().
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  /// Ends the watch and waits for the thread: no handler call runs after it
  /// returns. Idempotent. A list in progress ends first (its request's
  /// timeout bounds it).
  void Stop();

  /// A list has been applied and no list is due (false again from a 410
  /// until the next list is applied).
  bool Synced() const;
  /// The stored object with this Key().
  std::optional<nlohmann::json> Get(const std::string& key) const;
  /// Every stored object, by key.
  std::vector<nlohmann::json> List() const;
  /// The counters so far.
  InformerStats Stats() const;

  /// An object's key in the store: "<namespace>/<name>", or "<name>" without
  /// a namespace.
  static std::string Key(const nlohmann::json& object);

 private:
  class Impl;
  explicit Informer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dra::k8s
