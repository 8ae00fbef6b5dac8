/// @file
/// dra::kubeletplugin::Driver: what a DRA driver implements for the Helper.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/call_context.h"
#include "dra/cdi/spec.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/resource_claim.h"
#include "dra/kubeletplugin/device_metadata.h"

namespace dra::kubeletplugin {

/// The kubelet gives up on a NodePrepareResources or NodeUnprepareResources
/// call after this long; calls that carry no gRPC deadline (and the Helper's
/// own calls, such as unpreparing an orphan) get it too.
inline constexpr absl::Duration kDefaultCallTimeout = absl::Seconds(45);

/// One allocated device as the kubelet hands it to the container runtime.
struct Device {
  /// The device of one allocation result, as most drivers return it: its
  /// request, pool, name and shareID; the driver adds what the container
  /// gets (cdi_edits, metadata).
  static Device ForAllocation(const k8s::DeviceRequestAllocationResult& allocated);

  /// Requests (or "request/subrequest") this device serves; empty means all
  /// requests of the claim. The Helper strips subrequest suffixes.
  std::vector<std::string> requests;
  std::string pool_name;    ///< the device's pool, as in the allocation result
  std::string device_name;  ///< the device's name in that pool
  /// Fully qualified CDI device IDs ("vendor/class=name"); may be empty.
  std::vector<std::string> cdi_device_ids;
  /// The allocation's shareID for consumable capacity; sent on DRA v1 only.
  std::optional<std::string> share_id;
  /// Edits for the container runtime, if the Helper is to write the CDI spec
  /// (Options::cdi): it puts the claim's devices with edits into one spec file,
  /// `<cdi.dir.path>/<vendor>-<class>_<claim UID>.json`, as CDI devices named
  /// "<claim UID>-<device_name>", puts their IDs first in cdi_device_ids
  /// (the kubelet reports a device's health in the pod status under its first
  /// CDI ID) and clears this field. Leave it empty for devices whose CDI spec the driver
  /// writes itself (or that need none).
  std::optional<cdi::ContainerEdits> cdi_edits{};
  /// Annotations of that CDI device (CDI 0.6.0), with cdi_edits only: for
  /// whoever reads the spec beside the runtime (an NRI plugin, say). Cleared
  /// with cdi_edits.
  std::map<std::string, std::string> cdi_annotations{};
  /// With Options::device_metadata on: what the Helper writes into the
  /// metadata file of each request this device serves (device_metadata.h);
  /// the Helper appends the metadata CDI device's ID to cdi_device_ids and
  /// clears this field. A device without it is listed with driver, pool and
  /// name only. Ignored when the option is off.
  std::optional<DeviceMetadata> metadata{};

  bool operator==(const Device&) const = default;  ///< member-wise equality
};

/// The outcome of preparing one claim. A non-OK status fails that claim only;
/// the kubelet retries it later and ignores `devices`.
struct PrepareResult {
  absl::Status status;          ///< OK, or why the claim failed
  std::vector<Device> devices;  ///< the claim's prepared devices
  /// The driver's own record of this preparation (which CPUs of a socket it
  /// handed out, say), opaque to the Helper. With the checkpoint on it is kept
  /// with the prepared claim, durable before the kubelet is answered, and
  /// given back by RestorePreparedClaims after a restart. Keep it small: it is
  /// written with every checkpoint snapshot.
  std::string driver_data{};
};

/// A claim the checkpoint records as prepared, as Helper::Start found it.
struct PreparedClaim {
  k8s::ClaimRef claim;          ///< the claim
  std::vector<Device> devices;  ///< as the kubelet got them
  std::string driver_data;      ///< PrepareResult::driver_data
};

/// Keyed by claim UID; must have an entry for every claim passed in.
using PrepareResults = std::map<std::string, PrepareResult, std::less<>>;
/// Keyed by claim UID; OK means unprepared (or never prepared).
using UnprepareResults = std::map<std::string, absl::Status, std::less<>>;

/// How bad a background error is, as the Go helper's ErrRecoverable.
enum class ErrorSeverity {
  /// Retrying may heal it and the Helper keeps retrying (the API server is
  /// down, a ResourceSlice was refused, a checkpoint write failed): log it.
  kRecoverable,
  /// It will not heal while the process runs (the kubelet refused the
  /// registration): exit, and the DaemonSet restarts the driver.
  kFatal,
};

std::string_view ErrorSeverityName(ErrorSeverity severity);  ///< "recoverable" or "fatal"

/// What a DRA driver implements; the Helper calls it. What each call is
/// given and must return (a result for every claim, idempotent prepare and
/// unprepare, unpreparing an unknown claim is success, cancellation through
/// `ctx`) is the contract with the kubelet, which docs/contract.md states.
class Driver {
 public:
  virtual ~Driver() = default;

  /// Prepares the devices of `claims` for a pod (docs/contract.md): a result
  /// for every claim.
  virtual absl::StatusOr<PrepareResults> PrepareResourceClaims(const CallContext& ctx,
                                                               std::span<const k8s::ResourceClaim> claims) = 0;

  /// Undoes the preparation of `claims` (docs/contract.md): a result for
  /// every claim.
  virtual absl::StatusOr<UnprepareResults> UnprepareResourceClaims(const CallContext& ctx,
                                                                   std::span<const k8s::ClaimRef> claims) = 0;

  /// Failures the Helper meets in the background (registration refused by the
  /// kubelet, checkpoint trouble, ResourceSlice publishing, ...), after the
  /// Helper has logged them ("Background error") and counted them; a kFatal
  /// one also ends Helper::Wait with exit code 1. `context` says where it
  /// happened. Default: nothing more. A driver that overrides it (to count
  /// errors, or to stop without Helper::Wait) is called from Helper threads:
  /// it must be thread-safe and must not block. It may call
  /// Helper::PublishResources (to replace resources a publish refused, say);
  /// it must not call Helper::Stop, which waits for the thread that runs it:
  /// let the thread that owns the Helper stop it.
  virtual void HandleError(const absl::Status& status, ErrorSeverity severity, std::string_view context) {
    (void)status;
    (void)severity;
    (void)context;
  }

  /// Whether this driver reports device health through Helper::PublishHealth.
  /// When false, the health services are neither served nor advertised and the
  /// kubelet's NodeWatchResources gets UNIMPLEMENTED.
  virtual bool ReportsDeviceHealth() const { return false; }

  /// Called once by Helper::Start, with the checkpoint on, before the kubelet
  /// can call: every claim the checkpoint records as prepared (those answered
  /// from it from now on), so that a driver that hands out parts of its
  /// devices knows what is taken. Claims that were only being prepared when
  /// the process died are not among them: the kubelet asks for them again, or
  /// the orphan check unprepares them. Default: nothing.
  virtual void RestorePreparedClaims(std::span<const PreparedClaim> claims) { (void)claims; }
};

}  // namespace dra::kubeletplugin
