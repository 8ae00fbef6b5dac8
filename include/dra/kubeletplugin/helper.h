/// @file
/// dra::kubeletplugin::Helper: the kubelet side of a DRA driver.
///
/// The Helper implements the contract with the kubelet for a Driver:
/// registration, preparation and unpreparation, the crash-safe checkpoint,
/// device exclusivity, device health, per-call contexts, error severity and
/// shutdown. docs/contract.md states it, once; docs/concepts.md follows it
/// through a pod's life.
///
/// ResourceSlices. PublishResources keeps the driver's devices in the API
/// server for the scheduler.
///
/// Observability. With Options::http_endpoint, /metrics serves Prometheus
/// counters of kubelet calls and claims, a call-duration histogram, the number
/// of prepared claims and checkpoint writes, background errors by severity,
/// the devices published and ResourceSlice writes, and the kube_client's API
/// requests by verb and code; /healthz answers 200 while the DRA server runs,
/// both sockets accept connections and the kubelet has not refused the
/// registration (503 with the reason otherwise).
///
/// Threads. The servers use gRPC's callback API: a kubelet call arrives on a
/// gRPC thread, which hands it to the Helper's own threads (started on
/// demand, at most 32) and returns; claim fetches, the serializer, the
/// driver's calls and the checkpoint's fsyncs never hold a gRPC thread. With
/// Options::serialize (the default) the driver sees one call at a time, and
/// calls that wait for the one before them are queued without holding any
/// thread. Driver::HandleError is called on the Helper's threads, or on the
/// driver's own where it called the Helper. Stop() (also run by the
/// destructor) stops both servers, removes both sockets and is idempotent.
/// The SDK's threads are named `dra-<role>` (docs/architecture.md, "Threads").
///
/// Process-wide settings are the driver's: the Helper changes none (abseil's
/// deadlock detection, gRPC's default health service); the example in
/// docs/writing-a-driver.md shows what a driver's main sets.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/kubeletplugin/device_health.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/options.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/resourceslice/driver_resources.h"
#include "dra/resourceslice/publisher_stats.h"

namespace dra::kubeletplugin {

/// What the kubelet last said through NotifyRegistrationStatus.
struct RegistrationStatus {
  bool notified = false;    ///< the kubelet has called at all
  bool registered = false;  ///< and accepted the plugin
  std::string error;        ///< the kubelet's reason when it refused
};

/// The kubelet side of a DRA driver: serves the kubelet for a Driver as
/// helper.h describes.
class Helper {
 public:
  /// Validates the options, opens the checkpoint, starts the DRA server and
  /// then the registration server. The driver must outlive the Helper.
  static absl::StatusOr<std::unique_ptr<Helper>> Start(Driver& driver, Options options);

  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  ~Helper();

  /// Cancels the CallContext of every driver call in flight, stops serving
  /// and removes both sockets; waits up to Options::shutdown_grace for the
  /// calls to return. A call still running then is left running (its
  /// result discarded) and named in an error log; Stop() returns anyway.
  /// Idempotent.
  void Stop();

  /// What a driver's main does last: waits for SIGTERM or SIGINT on
  /// `signals`, or for a fatal background error (the kubelet refused the
  /// registration), stops the Helper and returns the process's exit code: 1
  /// after a fatal error, so that the DaemonSet restarts the driver, else 0.
  int Wait(const TerminationSignals& signals);

  /// Thread-safe.
  RegistrationStatus registration_status() const;
  /// Blocks until the kubelet has called NotifyRegistrationStatus or the
  /// timeout passes; returns the status at that point.
  RegistrationStatus WaitForRegistration(absl::Duration timeout) const;

  /// Replaces the complete health list and sends it to every watcher.
  void PublishHealth(std::vector<DeviceHealth> devices);

  /// Makes this driver's ResourceSlices in the API server match `resources`
  /// (see resourceslice/publisher.h), through Options::kube_client; the
  /// publisher starts at the first call. Returns at once: the slices are
  /// written in the background, bursts coalesce, and errors reach
  /// Driver::HandleError with a context starting "ResourceSlice publisher".
  /// The slices stay when the Helper stops (the kubelet removes a departed
  /// driver's slices) unless Options::resource_slices.remove_on_stop.
  /// FailedPrecondition without a kube_client or after Stop(). Thread-safe.
  absl::Status PublishResources(resourceslice::DriverResources resources);

  /// Deferred device metadata (Options::device_metadata), as the Go helper's
  /// UpdateRequestMetadata: for a driver that learns a device's metadata only
  /// once the pod's sandbox exists (a network driver's interface and
  /// addresses, from an NRI hook after CNI), PrepareResourceClaims may return
  /// devices without Device::metadata and this fills it in before the
  /// containers start. It replaces the metadata file of `request` (a
  /// subrequest suffix is dropped) of the prepared claim as a whole,
  /// atomically, with the next generation, and the checkpoint keeps it, so
  /// that a reboot or a crash restores this content, not the first. `devices`
  /// must be those the prepare result gave the request, each once, in any
  /// order; only pool_name, device_name and metadata are read. A container
  /// already running keeps the file it started with (a bind-mounted file).
  /// Errors: FailedPrecondition with device metadata off or after Stop();
  /// NotFound when the claim (that UID) is not prepared or the request has no
  /// metadata file; InvalidArgument naming a device that differs. Runs
  /// serialized with the kubelet's calls (Options::serialize). Thread-safe;
  /// not from inside a Driver call.
  absl::Status UpdateRequestMetadata(const k8s::ClaimRef& claim, const std::string& request,
                                     const std::vector<Device>& devices);

  /// The publisher's creates, updates, deletes and errors; zeros before the
  /// first PublishResources.
  resourceslice::PublisherStats ResourceSliceStats() const;

  /// What /healthz answers: OK, or Unavailable saying why (stopped, the
  /// kubelet refused the registration, a socket does not accept a
  /// connection). For a liveness check other than HTTP, such as a gRPC
  /// health service. Thread-safe.
  absl::Status Healthy() const;

  /// The port of the /metrics and /healthz server; 0 when it is off.
  int http_port() const;

  /// Absolute socket paths, after rolling-update naming and shortening.
  ///@{
  const std::string& registrar_socket_path() const;
  const std::string& dra_socket_path() const;
  ///@}

 private:
  class Impl;
  explicit Helper(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace dra::kubeletplugin
