#include "gpu_extras.h"

#include "absl/strings/str_cat.h"
#include "common/node_plugin_main.h"
#include "fabric_pool.h"
#include "reference_takeover.h"

namespace gpu {

namespace kp = dra::kubeletplugin;
namespace rc = dra::resourceclaim;

ReferenceExtras::ReferenceExtras(const ReferenceFlags& flags, const GpuFlags& gpu_flags, std::string node_name,
                                 dra::Logger logger)
    : flags_(flags),
      gpu_flags_(gpu_flags),
      node_name_(std::move(node_name)),
      logger_(std::move(logger)),
      fabric_gpus_(MockFabricGpus(flags.fabric_num_devices)),
      attach_(flags.fabric_attach_delay, flags.fabric_failure_rate, flags.binding_timeout) {}

void ReferenceExtras::Configure(kp::Options& options, GpuDriver::Options& driver) {
  client_ = options.kube_client;
  // A node taken over from dra-example-driver, or rolled back to it: the
  // claims either prepared can be unprepared by the other.
  ShareNodeWithReference(options, gpu_flags_.driver_name, logger_);
  // Fabric GPUs can be attached to any node the selector picks, so every
  // node plugin knows them, whoever publishes the pool.
  for (const GpuInfo& gpu : fabric_gpus_) driver.devices[FabricDeviceName(gpu.index)] = gpu;
}

void ReferenceExtras::AddResources(dra::resourceslice::DriverResources& resources) const {
  if (flags_.binding_conditions) {
    for (dra::resourceslice::Slice& slice : resources.pools[node_name_].slices) {
      for (dra::k8s::Device& device : slice.devices) AddBindingConditions(device, gpu_flags_.driver_name);
    }
  }
  if (!flags_.fabric_pool.empty()) {
    resources.pools[flags_.fabric_pool] = FabricPool(fabric_gpus_, gpu_flags_.driver_name, flags_.fabric_selector);
  }
}

absl::Status ReferenceExtras::WatchHealthPins(std::function<void()> changed) {
  if (!gpu_flags_.health_service || flags_.pod_name.empty() || flags_.pod_namespace.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<HealthPinWatch>> pins =
      HealthPinWatch::Start(client_, flags_.pod_namespace, flags_.pod_name, logger_, std::move(changed));
  if (!pins.ok()) return example::Annotate("--pod-name", pins.status());
  pins_ = *std::move(pins);
  return absl::OkStatus();
}

void ReferenceExtras::PinHealth(std::vector<kp::DeviceHealth>& health) const {
  if (pins_ == nullptr) return;
  const std::map<std::string, kp::HealthStatus> pins = pins_->pins();
  for (kp::DeviceHealth& entry : health) {
    if (auto pin = pins.find(entry.device_name); pin != pins.end()) {
      entry.health = pin->second;
      entry.message = absl::StrCat("pinned by the driver pod's annotation ", kHealthPinPrefix, entry.device_name);
    }
  }
}

absl::Status ReferenceExtras::StartBinding() {
  if (!flags_.fabric_attach && !flags_.binding_conditions) return absl::OkStatus();
  rc::BindingConditionReconcilerOptions options;
  options.driver_name = gpu_flags_.driver_name;
  options.node_name = node_name_;
  options.binding_timeout = flags_.binding_timeout;
  options.logger = logger_;
  absl::StatusOr<std::unique_ptr<rc::BindingConditionReconciler>> started =
      rc::BindingConditionReconciler::Start(client_, options, binding_);
  if (!started.ok()) return example::Annotate("--fabric-attach, --binding-conditions", started.status());
  reconciler_ = *std::move(started);
  return absl::OkStatus();
}

void ReferenceExtras::Stop() {
  if (reconciler_ != nullptr) reconciler_->Stop();
  reconciler_.reset();
  pins_.reset();
}

}  // namespace gpu
