/// @file
/// dra::resourceclaim::BindingConditionReconciler: the node side of device
/// binding conditions (KEP-5007, DRADeviceBindingConditions, beta and on by
/// default since 1.36), which the Go helper leaves to every driver.
///
/// A device published with bindingConditions (usually with bindsToNode, in
/// a pool that has a node selector instead of a node name: fabric-attached
/// GPUs) is allocated by the scheduler, which then waits in PreBind until
/// every listed binding condition is True in the claim's status.devices entry
/// of that device, or one of its bindingFailureConditions is True, in which
/// case it clears the allocation and schedules the pod again. The reconciler
/// runs in the node plugin: it watches the ResourceClaims of the cluster and,
/// for each allocated device of this driver that has binding conditions and
/// whose status.allocation.nodeSelector selects this node (bindsToNode makes
/// it select exactly the node the scheduler picked), calls the driver's
/// BindingHandler and writes the answer:
///
/// @code
///   class Attacher : public BindingHandler {
///     BindingResult PrepareForBinding(const CallContext& ctx, const k8s::ResourceClaim& claim,
///                                     const k8s::DeviceRequestAllocationResult& device) override {
///       if (!fabric.AttachStarted(device.device)) fabric.StartAttach(device.device);
///       if (fabric.Failed(device.device)) return BindingResult::Failed("AttachFailed", fabric.Error());
///       if (!fabric.Attached(device.device)) return BindingResult::Pending(absl::Seconds(2));
///       return BindingResult::Ready("Attached", "");
///     }
///   };
///   BindingConditionReconcilerOptions options;
///   options.driver_name = "gpu.example.com";
///   options.node_name = node_name;  // or options.scope = BindingScope::kAllNodes, centrally
///   auto reconciler = BindingConditionReconciler::Start(client, options, attacher);
/// @endcode
///
/// What it writes, with standard condition semantics (type, status, reason,
/// message, lastTransitionTime kept while the status stays; observedGeneration
/// is the claim's metadata.generation when it has one, which the API server
/// does not set for ResourceClaims today):
/// - Ready: each of the device's bindingConditions, status True;
/// - Failed: each of its bindingFailureConditions, status True;
/// - Pending: nothing; the handler is asked again after the given delay.
/// It writes with server-side apply on the claim's status through a
/// ClaimStatusWriter whose field manager is "<driver>/binding" by default, so
/// that the driver's own device status (Ready conditions, data, networkData
/// written by another ClaimStatusWriter) in the same entries is left alone.
///
/// Guarantees:
/// - Claims of other drivers, devices without binding conditions, and (with
///   kThisNode) allocations that select other nodes (or no node) are never
///   touched.
/// - Restart-safe: a device whose binding conditions are already True, or one
///   of whose failure conditions is, is finished and its handler is not
///   called again, also by a reconciler started later. A handler that was
///   running when the process died is called again for the same allocation:
///   it must be idempotent (attach what is not attached yet).
/// - A handler's answer is written once per allocation; a failed write is
///   retried (conflicts and outages with backoff) without asking the handler
///   again.
/// - Bounded by the scheduler's binding timeout (its DynamicResources
///   bindingTimeout, 600 s by default): each handler call's deadline is the
///   allocation's allocationTimestamp plus `binding_timeout`, after which the
///   scheduler gives up and reallocates; the reconciler then stops asking.
///   Set `binding_timeout` to the scheduler's if it was changed.
/// - When the claim is deallocated, reallocated, deleted, or Stop() runs, the
///   context of a handler call in flight is cancelled and its answer dropped.
///
/// Authorization: list and watch resourceclaims in all namespaces; patch
/// resourceclaims/status, plus "associated-node:patch" or
/// "arbitrary-node:patch" on resourceclaims/driver with resourceNames [driver]
/// (see claim_status_writer.h; with kAllNodes "arbitrary-node:patch", as the
/// reconciler runs on no node of the claim); get nodes only if allocations
/// select nodes by label rather than by name (bindsToNode selects by name;
/// kAllNodes never reads nodes).
///
/// Where it runs (BindingScope), and what that costs the API server: the watch
/// sees every ResourceClaim of the cluster, because the API server cannot
/// filter claims by driver, node or allocation (ResourceClaims have no field
/// selectors but metadata.name and metadata.namespace, and the watch needs
/// status.allocation, so a metadata-only watch cannot do). Each event is
/// checked on its allocation results before it is decoded further.
/// - kThisNode (default), in the node plugin (a DaemonSet): every node holds
///   a watch on all claims, so each claim change is sent to every node: N
///   nodes cost the API server N watch events per claim change, and each
///   node's share grows with the cluster's claim churn. Right when the work
///   must happen on the node itself (a device that comes up there), on
///   clusters of up to a few hundred nodes (docs/performance.md).
/// - kAllNodes, in one central instance (a Deployment, one replica or
///   leader-elected): one watch for the cluster, one event per claim change,
///   no claim watch on the nodes at all. For work that can be done away from
///   the node (a fabric manager attaching devices), and for pools that select
///   many nodes. The handler finds the node in the allocation's node selector
///   (k8s::SelectedNodeName, node_selector.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/call_context.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim.h"
#include "dra/log.h"

namespace dra::resourceclaim {

/// What a BindingHandler answers for one device.
class BindingResult {
 public:
  /// Which of the three answers it is.
  enum class Outcome { kReady, kFailed, kPending };

  /// The device is usable on this node: the binding conditions become True.
  /// `reason` is a CamelCase word, as for any condition.
  static BindingResult Ready(std::string reason = "Ready", std::string message = "");
  /// The device cannot be made usable: the failure conditions become True
  /// and the scheduler tries again, possibly elsewhere.
  static BindingResult Failed(std::string reason, std::string message);
  /// Not yet: ask again after `retry_after` (at least 10 ms).
  static BindingResult Pending(absl::Duration retry_after);

  /// Ready, Failed or Pending.
  Outcome outcome() const { return outcome_; }
  /// The conditions' reason (Ready and Failed).
  const std::string& reason() const { return reason_; }
  /// The conditions' message (Ready and Failed).
  const std::string& message() const { return message_; }
  /// When to ask again (Pending).
  absl::Duration retry_after() const { return retry_after_; }

 private:
  BindingResult(Outcome outcome, std::string reason, std::string message, absl::Duration retry_after)
      : outcome_(outcome), reason_(std::move(reason)), message_(std::move(message)), retry_after_(retry_after) {}

  Outcome outcome_;
  std::string reason_;
  std::string message_;
  absl::Duration retry_after_;
};

/// Implemented by the driver.
class BindingHandler {
 public:
  virtual ~BindingHandler() = default;

  /// Makes `device` (an allocation result of `claim` for this driver) usable
  /// on this node, or reports how far it got. Called on one of the
  /// reconciler's worker threads, never twice at once for the same claim.
  /// `ctx` has the binding deadline and is cancelled when the answer is no
  /// longer wanted; its logger names the claim and the device.
  virtual BindingResult PrepareForBinding(const CallContext& ctx, const k8s::ResourceClaim& claim,
                                          const k8s::DeviceRequestAllocationResult& device) = 0;
};

/// Which allocations a reconciler handles (see the cost above).
enum class BindingScope {
  /// Those whose node selector selects BindingConditionReconcilerOptions::
  /// node_name: the node plugin's reconciler.
  kThisNode,
  /// Every allocation of the driver with binding conditions, whichever
  /// node it selects (or none): one central reconciler for the cluster.
  kAllNodes,
};

/// What a BindingConditionReconciler handles, and how.
struct BindingConditionReconcilerOptions {
  /// Required: the driver whose allocation results are handled.
  std::string driver_name;
  /// Which allocations: this node's (default) or all.
  BindingScope scope = BindingScope::kThisNode;
  /// kThisNode: required, this node, as the allocation's node selector names
  /// it. kAllNodes: must be empty.
  std::string node_name;
  /// Default "<driver_name>/binding".
  std::string field_manager;
  /// The scheduler's binding timeout (see above). Default 600 s.
  absl::Duration binding_timeout = absl::Seconds(600);
  /// Handler calls in parallel, for different claims. Default 2.
  int workers = 2;
  /// Backoff of status writes and of relisting after the API server failed.
  ///@{
  absl::Duration backoff_initial = absl::Milliseconds(200);
  absl::Duration backoff_max = absl::Seconds(5);
  ///@}
  /// Where failures are logged; each handler call's logger derives from it.
  Logger logger;
};

/// Counters, for tests and metrics.
struct BindingConditionReconcilerStats {
  int64_t handler_calls = 0;  ///< PrepareForBinding calls started
  int64_t ready = 0;          ///< Ready answers
  int64_t failed = 0;         ///< Failed answers
  int64_t pending = 0;        ///< Pending answers
  int64_t timed_out = 0;      ///< devices given up because the binding deadline passed
  int64_t writes = 0;         ///< successful status writes
  int64_t write_errors = 0;   ///< failed status writes
  int64_t lists = 0;          ///< full lists of ResourceClaims: the first, then one after each 410 (k8s::Informer)
};

/// Runs a BindingHandler for the allocations it finds (see binding_condition_reconciler.h).
class BindingConditionReconciler {
 public:
  /// Checks the options (InvalidArgument naming the option) and starts
  /// listing and watching at once; returns without waiting for the API
  /// server, whose failures are logged and retried with backoff. `handler`
  /// must outlive the reconciler.
  static absl::StatusOr<std::unique_ptr<BindingConditionReconciler>> Start(std::shared_ptr<k8s::Client> client,
                                                                           BindingConditionReconcilerOptions options,
                                                                           BindingHandler& handler);

  /// Stop().
  ~BindingConditionReconciler();
  BindingConditionReconciler(const BindingConditionReconciler&) = delete;
  BindingConditionReconciler& operator=(const BindingConditionReconciler&) = delete;

  /// Ends the watch, cancels handler calls in flight and waits for them to
  /// return. Idempotent.
  void Stop();

  /// Whether the first list of claims has completed.
  bool Synced() const;
  /// Synced, no handler call or write running and none due: what the claims
  /// showed has been acted on. Pending devices wait for their retry.
  bool Idle() const;
  /// The counters so far.
  BindingConditionReconcilerStats Stats() const;

 private:
  class Impl;
  explicit BindingConditionReconciler(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace dra::resourceclaim
