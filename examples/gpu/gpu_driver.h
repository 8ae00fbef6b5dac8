// GpuDriver: the kubelet-facing half of the example GPU driver. Prepare
// resolves each allocated GPU (whole, partition or fabric-attached) and its
// GpuConfig and returns CDI edits, which the Helper writes as the claim's CDI
// spec: the environment dra-example-driver's containers get
// (GPU_DEVICE_<id>=<device name>, ..._RESOURCE_CLAIM, DRA_ADMIN_ACCESS, the
// sharing settings, the memory and compute a shared GPU's claim consumes)
// plus ..._UUID, the GPU's device nodes, and the node-wide common spec. A bad
// config or an unknown device fails that claim only. With a
// ClaimStatusWriter it also reports each prepared device in the claim's
// status (a Ready condition and typed attributes as data); with
// device_metadata, it tells the Helper what to write into the claim's device
// metadata file (uuid, model, PCI bus ID).
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/driver_metrics.h"
#include "container_env.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/log.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "gpu_info.h"

namespace gpu {

class GpuDriver : public dra::kubeletplugin::Driver {
 public:
  struct Options {
    std::string driver_name;
    std::string common_cdi_id;
    std::map<std::string, GpuInfo> devices;  // the GPU each device name is (a partition of)
    std::shared_ptr<const dra::resourceclaim::ClaimStatusWriter> status_writer;  // may be null
    bool device_metadata = false;  // give each prepared GPU Device::metadata
    bool report_health = true;     // serve the kubelet's health streams (Helper::PublishHealth)
    dra::Logger logger;
  };

  explicit GpuDriver(Options options) : options_(std::move(options)) {}

  absl::StatusOr<dra::kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext& ctx, std::span<const dra::k8s::ResourceClaim> claims) override;
  absl::StatusOr<dra::kubeletplugin::UnprepareResults> UnprepareResourceClaims(
      const dra::CallContext& ctx, std::span<const dra::k8s::ClaimRef> claims) override;
  // Counted for /metrics; the Helper has logged it, and a fatal one ends
  // Helper::Wait with exit code 1.
  void HandleError(const absl::Status&, dra::kubeletplugin::ErrorSeverity severity, std::string_view) override {
    if (severity == dra::kubeletplugin::ErrorSeverity::kFatal) metrics_.CountFatalError();
  }
  bool ReportsDeviceHealth() const override { return options_.report_health; }

  // dra-example-driver's metrics of this driver's calls, for /metrics.
  const example::DriverMetrics& metrics() const { return metrics_; }

 private:
  dra::kubeletplugin::PrepareResult Prepare(const dra::CallContext& ctx, const dra::k8s::ResourceClaim& claim) const;

  const Options options_;
  example::DriverMetrics metrics_;
};

// GPU_DEVICE_<device name without "gpu-", upper case, '-' as '_'>: one
// variable per device, so that a container with GPUs of several claims gets
// all of them; its value is the device name, and the per-device settings
// are <variable>_<SETTING>.
std::string DeviceVariable(const std::string& device_name);

}  // namespace gpu
