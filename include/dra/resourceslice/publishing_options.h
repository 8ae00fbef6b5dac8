/// @file
/// dra::resourceslice::PublishingOptions: how a Publisher writes and repairs
/// its pools. The part of the publisher's Options that a driver chooses when a
/// kubeletplugin::Helper runs the publisher for it (Options::resource_slices
/// there); the Helper supplies the rest.
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "dra/k8s/resource_slice_json.h"

namespace dra::resourceslice {

/// What the publisher does with names qualified with the driver's own name
/// (PublishingOptions::driver_domain_names).
enum class DriverDomainNames {
  kWarn,    ///< publish, and log one warning per pool version naming each
  kRefuse,  ///< the pool fails validation, naming each (as Go from 0.38)
  kAllow,   ///< publish silently (as Go's ValidateQualifiedNames(false))
};

/// How a Publisher writes and repairs its pools.
struct PublishingOptions {
  /// The Node's UID for owner references. Default: empty, looked up once.
  std::string node_uid;
  /// How long the watch must show no further change by someone else to a
  /// pool before the pool is repaired. Default 500 ms (the Go controller
  /// waits 30 s after every change).
  absl::Duration drift_repair_delay = absl::Milliseconds(500);
  /// Backoff after a failed pool sync or list: doubles, with jitter, from the
  /// initial delay up to the maximum. Defaults 250 ms and 10 s.
  ///@{
  absl::Duration backoff_initial = absl::Milliseconds(250);
  absl::Duration backoff_max = absl::Seconds(10);
  ///@}
  /// Delete every slice this publisher manages on Stop(). Default false: the
  /// kubelet removes a departed driver's slices itself.
  bool remove_on_stop = false;
  /// What to do with attribute and capacity names qualified with the
  /// driver's own name ("gpu.example.com/model" from driver
  /// gpu.example.com). The API server takes them, but an unqualified name
  /// gets the driver's domain implicitly, so they are the same name spelled
  /// in a way a CEL selector may not expect; the Go resourceslice controller
  /// refuses the pool from 0.38 (Kubernetes 1.38, kubernetes#142218) unless
  /// told not to. Default kRefuse, as Go. A driver whose claims must match
  /// capacity names as written on a 1.37 or older scheduler (which does not
  /// match a bare name) takes kWarn or kAllow there.
  DriverDomainNames driver_domain_names = DriverDomainNames::kRefuse;
  /// Publish exactly this pool, as the Go controller's ReconcilePoolWithName:
  /// a pool of this node's devices that other nodes see (kNodeSelector,
  /// kAllNodes, kPerDevice; kThisNode fails validation). It is watched from
  /// the start, so when an Update() lacks it, its slices are deleted, also
  /// those an earlier instance left; any other pool in an Update() is
  /// reported through the error handler (`found pool "x", but
  /// reconcile_pool only allows pool "p"`) and not published, and slices of
  /// other pools are never touched. With Options::node_name, its slices
  /// carry the Node's owner reference, so they go with the node. Default:
  /// empty, every pool of the DriverResources.
  std::string reconcile_pool;
  /// The JSON shape of Device::node_allocatable_resources (KEP-5517, alpha):
  /// Kubernetes 1.36 serves nodeAllocatableResourceMappings, 1.37
  /// nodeAllocatableResources, and each drops the other. Default: by the
  /// server, whose version is asked once (GET /version) before the first
  /// write of a pool that has such resources: the 1.36 shape on a 1.36
  /// server, else the current one. A pool that the 1.36 shape cannot express
  /// (overhead, say) fails validation there, naming the device.
  std::optional<k8s::NodeAllocatableShape> node_allocatable_shape;
};

}  // namespace dra::resourceslice
