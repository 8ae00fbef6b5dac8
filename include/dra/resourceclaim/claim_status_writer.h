/// @file
/// dra::resourceclaim::ClaimStatusWriter: writes a driver's entries of a
/// ResourceClaim's status.devices (KEP-4817: conditions, data, networkData of
/// each allocated device), which the Go helper leaves to every driver.
///
/// @code
///   ClaimStatusWriterOptions options;
///   options.driver_name = "gpu.example.com";
///   auto writer = ClaimStatusWriter::Create(client, options);
///   k8s::AllocatedDeviceStatus status;
///   status.driver = "gpu.example.com";
///   status.pool = "node-1";
///   status.device = "gpu-0";
///   k8s::Condition& ready = status.conditions.emplace_back();
///   ready.type = "Ready";
///   ready.status = "True";
///   ready.reason = "Initialized";
///   absl::Status written = (*writer)->Apply(ctx, claim_ref, {status});
/// @endcode
///
/// How it writes: server-side apply on the claim's status subresource with one
/// field manager per driver (ClaimStatusWriterOptions::field_manager), so
/// that the entries of other drivers, which are owned by their managers, are
/// never touched, and this driver's entries that a later Apply leaves out are
/// removed. The claim's UID goes along as a precondition.
///
/// Before it writes, every entry is checked: it must name this driver and a
/// device the claim allocates to it (pool, device, shareID), once; and it must
/// pass ValidateAllocatedDeviceStatus. Failures are InvalidArgument naming
/// the field and the rule as the API server would ("status.devices[0].
/// conditions[1].type: Required value"), and nothing is sent.
///
/// Conditions keep their lastTransitionTime when the driver leaves it empty
/// and the claim already has the condition with the same status; otherwise it
/// is set to now. observedGeneration is the driver's to set.
///
/// Authorization (1.36+, DRAResourceClaimGranularStatusAuthorization, on by
/// default): besides "patch" on resourceclaims/status, the driver's service
/// account needs verb "associated-node:patch" (its own node's claims) or
/// "arbitrary-node:patch" on resource "resourceclaims/driver" with
/// resourceNames `[<driver name>]`. A driver deployed with RBAC that grants
/// "update" instead (dra-example-driver's chart does) still writes: after the
/// first Forbidden apply the writer switches, for good, to reading the claim
/// and putting its status back (the claim's resourceVersion as precondition,
/// a conflict retried, the update recorded under the writer's field manager)
/// with what apply would have left: what the claim's managedFields say this
/// field manager wrote before is removed (conditions by type, data,
/// networkData; an entry left with nothing goes), the new entries are merged
/// in (conditions by type), and other drivers' entries and what other
/// managers of this driver wrote (the binding reconciler's conditions beside
/// the device status) are kept. When that is forbidden too, the Forbidden
/// answer names both verbs and is returned.
///
/// Retries: connection errors, 5xx, 429 and conflicts are retried with
/// jittered exponential backoff until ctx is cancelled; the answer is then
/// the context's status with the last error. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/call_context.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim.h"

namespace dra::resourceclaim {

/// Which driver's entries a ClaimStatusWriter owns, and how it retries.
struct ClaimStatusWriterOptions {
  /// Required: the driver whose entries this writer owns.
  std::string driver_name;
  /// The server-side apply field manager. Default: the driver name. Writers
  /// with different managers each own what they applied.
  std::string field_manager;
  /// Backoff between attempts: doubles from the initial delay up to the
  /// maximum, jittered. Defaults 200 ms and 5 s.
  ///@{
  absl::Duration backoff_initial = absl::Milliseconds(200);
  absl::Duration backoff_max = absl::Seconds(5);
  ///@}
};

/// Writes one driver's status.devices entries of claims (see claim_status_writer.h).
class ClaimStatusWriter {
 public:
  /// InvalidArgument naming the option for a bad driver name or backoff.
  static absl::StatusOr<std::unique_ptr<ClaimStatusWriter>> Create(std::shared_ptr<k8s::Client> client,
                                                                   ClaimStatusWriterOptions options);

  /// Makes `devices` the complete set of this writer's entries in the claim's
  /// status.devices (empty removes them all). NotFound when the claim is
  /// gone; FailedPrecondition when it was replaced (another UID) or is not
  /// allocated.
  absl::Status Apply(const CallContext& ctx, const k8s::ClaimRef& claim,
                     std::vector<k8s::AllocatedDeviceStatus> devices) const;

  /// The options it was created with.
  const ClaimStatusWriterOptions& options() const;

  ~ClaimStatusWriter();

 private:
  class Impl;
  explicit ClaimStatusWriter(std::unique_ptr<Impl> impl);

  const std::unique_ptr<Impl> impl_;
};

}  // namespace dra::resourceclaim
