/// @file
/// dra::resourceslice::Publisher keeps this driver's ResourceSlices in the API
/// server equal to the DriverResources it was last given:
///
/// @code
///   auto publisher = dra::resourceslice::Publisher::Start(client, options, on_error);
///   (*publisher)->Update(resources);  // returns at once; bursts coalesce
/// @endcode
///
/// What it does, on one background thread ("dra-publisher"), one informer
/// thread per scope, and the work pool while it writes:
/// - Lists and watches only this driver's slices, with a k8s::Informer per
///   scope: spec.driver and spec.nodeName for node-local pools, spec.driver
///   and spec.pool.name for each other pool, listed through a watch-list
///   stream (a LIST where the server refuses it). Work is keyed by pool. A
///   slice whose resource version is newer than this publisher's own write
///   of it was changed by someone else. A broken watch resumes from its
///   version; only 410 lists again.
/// - Validates every pool before any request (ValidateResourceSlice on each
///   slice, plus pool-wide rules: unique device and counter set names, counters
///   that devices consume exist). An invalid pool is reported through the
///   error handler with the field and the rule, is not sent, and is not tried
///   again until Update() changes it.
/// - Names slice i of a pool by generateName
///   "<i as 5 hex digits>-<driver>-<node or pool>-", so name order is slice
///   order, and matches existing slices to desired ones by the index in their
///   names.
/// - Node-local slices carry a controller owner reference to the Node (UID
///   from Options::node_uid, else looked up once), so they go with the node.
/// - Compares canonically (quantities by value, taint timeAdded within a
///   second, fields the server sets ignored): republishing the same state
///   sends nothing; one changed slice is one update. The pool generation stays
///   when at most one slice changes and none is added; otherwise it is bumped
///   and every slice rewritten. Obsolete slices are deleted first (with
///   uid/resourceVersion preconditions), then updates, then creates;
///   resourceSliceCount is always the number of desired slices. Generations
///   never go back, also after every slice was deleted.
/// - Repairs drift: a slice that someone else deletes or edits is restored
///   once the watch has shown no further such change to its pool for
///   Options::drift_repair_delay, so that a burst (the kubelet deletes a
///   node's slices when it starts and after a driver left) is repaired once,
///   after it ends; at the latest 10 delays after the burst's first change.
///   Its own writes seen on the watch cause no work. Creates and updates of
///   one pool run up to 8 at once (HTTP/2 streams on the client's connection).
/// - When the server stores less than was sent (a feature gate is off, an
///   older release), reports one error naming the server's version, the
///   dropped fields and the likely gates, and does not
///   rewrite that slice until its desired content changes.
/// - A conflict is retried at once after a fresh read; other errors with
///   per-pool exponential backoff. Every error reaches the error handler.
/// - Stop() (and the destructor) never deletes slices, unless
///   Options::remove_on_stop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/k8s/client.h"
#include "dra/log.h"
#include "dra/resourceslice/driver_resources.h"
#include "dra/resourceslice/publisher_stats.h"
#include "dra/resourceslice/publishing_options.h"

namespace dra {
/// The SDK's internal pool of threads; see Options::work_pool.
class WorkPool;
}  // namespace dra

namespace dra::resourceslice {

/// The publisher's identity and collaborators, and how it writes
/// (PublishingOptions).
struct Options : PublishingOptions {
  /// Required: the DRA driver name (DNS subdomain of at most 63 characters).
  std::string driver_name;
  /// The node this instance runs on. Required for kThisNode pools. Default:
  /// empty (only network-attached pools).
  std::string node_name;
  /// Default: klog text on stderr at -v 0. Writes are logged at -v 4.
  Logger logger;
  /// Where a sync's writes run in parallel (8 at once): the Helper gives its
  /// publisher the pool of threads it shares. Leave it null: a publisher of
  /// a driver's own starts a pool of its own (7 threads, at the first
  /// parallel write).
  std::shared_ptr<WorkPool> work_pool;
};

/// Called on a background thread of the publisher, one call at a time, with
/// every error; `context` says what was being done ("sync pool \"node-1\"",
/// "list ResourceSlices", ...). It may call Update() but must not stop or
/// destroy the publisher.
using ErrorHandler = std::function<void(const absl::Status& status, std::string_view context)>;

/// A running publisher; publisher.h describes what it does.
class Publisher {
 public:
  /// Checks the options and starts the background thread, which lists and
  /// watches at once but writes nothing before the first Update(). The
  /// publisher keeps a reference to `client`.
  static absl::StatusOr<std::unique_ptr<Publisher>> Start(std::shared_ptr<k8s::Client> client, Options options,
                                                          ErrorHandler on_error);
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  /// The new desired state. Returns at once; the background thread publishes
  /// the latest state it has been given. Pools no longer listed are deleted.
  void Update(DriverResources resources);

  /// What the publisher has done so far.
  PublisherStats Stats() const;

  /// True when nothing is pending: every scope listed and watched, every pool
  /// synced since the last Update() (an invalid pool counts as done), no
  /// retry or drift repair waiting.
  bool Idle() const;

  /// Stops the background thread and the watches; idempotent. Deletes the
  /// slices only with Options::remove_on_stop.
  void Stop();

 private:
  class Impl;
  explicit Publisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dra::resourceslice
