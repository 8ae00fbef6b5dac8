// gpu::ReferenceExtras: what gpu-driver's GPU node plugin (../main.cc) does
// for dra-example-driver's users beyond what a GPU vendor's plugin does: it
// shares the node with dra-example-driver (reference_takeover.h), knows the
// fabric's GPUs and publishes their pool (--fabric-pool, fabric_pool.h),
// pins devices' health from its pod's annotations (--pod-name,
// health_pins.h), and sets binding conditions (--fabric-attach,
// --binding-conditions: gpu_binding.h). A vendor's copy drops it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dra/k8s/client.h"
#include "dra/kubeletplugin/device_health.h"
#include "dra/kubeletplugin/options.h"
#include "dra/log.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "dra/resourceslice/driver_resources.h"
#include "fabric_attach.h"
#include "gpu_binding.h"
#include "gpu_driver.h"
#include "gpu_flags.h"
#include "health_pins.h"
#include "reference_flags.h"

namespace gpu {

class ReferenceExtras {
 public:
  ReferenceExtras(const ReferenceFlags& flags, const GpuFlags& gpu_flags, std::string node_name, dra::Logger logger);
  ~ReferenceExtras() { Stop(); }

  // Before the Helper starts: the Helper shares the node with
  // dra-example-driver, and the driver knows the fabric's GPUs.
  void Configure(dra::kubeletplugin::Options& options, GpuDriver::Options& driver);
  // What is published beside the node's GPUs, each time: with
  // --binding-conditions they carry them, with --fabric-pool the fabric
  // pool is there too.
  void AddResources(dra::resourceslice::DriverResources& resources) const;

  // Once the Helper serves, before the first publish: follows the health
  // pins of the driver's pod (--pod-name, --pod-namespace) and calls
  // `changed` when they change. Its error names the flag.
  absl::Status WatchHealthPins(std::function<void()> changed);
  // What the kubelet is told, with the pins applied. Thread-safe.
  void PinHealth(std::vector<dra::kubeletplugin::DeviceHealth>& health) const;
  // After the first publish: sets binding conditions (--fabric-attach,
  // --binding-conditions). Its error names the flags.
  absl::Status StartBinding();
  // Stops what the two above started.
  void Stop();

 private:
  const ReferenceFlags& flags_;
  const GpuFlags& gpu_flags_;
  const std::string node_name_;
  const dra::Logger logger_;
  const std::vector<GpuInfo> fabric_gpus_;
  std::shared_ptr<dra::k8s::Client> client_;  // Configure's options.kube_client
  FabricAttach attach_;
  GpuBinding binding_{attach_};
  std::unique_ptr<HealthPinWatch> pins_;
  std::unique_ptr<dra::resourceclaim::BindingConditionReconciler> reconciler_;
};

}  // namespace gpu
