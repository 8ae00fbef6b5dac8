#include "gpu_driver.h"

#include <algorithm>

#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dra/cdi/spec_dir.h"
#include "dra/k8s/device_attributes.h"
#include "dra/k8s/resource_slice_json.h"
#include "gpu_config.h"

namespace gpu {
namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;

// Status writes are a report, not part of preparing: they get this long.
constexpr absl::Duration kStatusWriteTimeout = absl::Seconds(10);

const char* StrategyName(GpuConfig::Strategy strategy) {
  return strategy == GpuConfig::Strategy::kTimeSlicing ? "TimeSlicing" : "SpacePartitioning";
}

std::string ClaimName(const k8s::ResourceClaim& claim) {
  return absl::StrCat(claim.metadata.namespace_, "/", claim.metadata.name);
}

}  // namespace

std::string DeviceVariable(const std::string& device_name) {
  return EnvName("GPU_DEVICE_", absl::StartsWith(device_name, "gpu-") ? device_name.substr(4) : device_name);
}

absl::StatusOr<kp::PrepareResults> GpuDriver::PrepareResourceClaims(const dra::CallContext& ctx,
                                                                    std::span<const k8s::ResourceClaim> claims) {
  kp::PrepareResults results;
  for (const k8s::ResourceClaim& claim : claims) {
    kp::PrepareResult& result = results[claim.metadata.uid];
    const absl::Time start = absl::Now();
    result = Prepare(ctx, claim);
    metrics_.ObservePrepare(result.status.ok(), absl::Now() - start);
    // The SDK logs a failed claim with its error.
    if (result.status.ok()) {
      ctx.logger().Info(
          "Prepared claim",
          {{"claim", ClaimName(claim)}, {"uid", claim.metadata.uid}, {"devices", absl::StrCat(result.devices.size())}});
    }
  }
  return results;
}

kp::PrepareResult GpuDriver::Prepare(const dra::CallContext& ctx, const k8s::ResourceClaim& claim) const {
  kp::PrepareResult result;
  absl::StatusOr<std::map<size_t, GpuConfig>> configs = ConfigsForResults(claim, options_.driver_name);
  if (!configs.ok()) {
    result.status = configs.status();
    return result;
  }
  std::vector<k8s::AllocatedDeviceStatus> statuses;
  const std::vector<k8s::DeviceRequestAllocationResult>& allocated = claim.status.allocation->devices.results;
  const std::string admin_access = AdminAccessVariable(claim);
  for (const auto& [index, config] : *configs) {
    const k8s::DeviceRequestAllocationResult& device = allocated[index];
    auto published = options_.devices.find(device.device);
    if (published == options_.devices.end()) {
      result.status = absl::NotFoundError(absl::StrCat("status.allocation.devices.results[", index, "].device: \"",
                                                       device.device, "\" is not a device of this node"));
      return result;
    }
    const GpuInfo& gpu = published->second;
    const std::string var = DeviceVariable(device.device);
    kp::Device& prepared = result.devices.emplace_back(kp::Device::ForAllocation(device));
    prepared.cdi_device_ids = {options_.common_cdi_id};
    dra::cdi::ContainerEdits& edits = prepared.cdi_edits.emplace();
    edits.env = {ClaimVariable("gpu", device.device, claim.metadata.uid), admin_access,
                 absl::StrCat(var, "=", device.device), absl::StrCat(var, "_UUID=", gpu.uuid),
                 absl::StrCat(var, "_SHARING_STRATEGY=", StrategyName(config.strategy))};
    if (config.strategy == GpuConfig::Strategy::kTimeSlicing) {
      edits.env.push_back(absl::StrCat(var, "_TIMESLICE_INTERVAL=", config.interval));
    } else {
      edits.env.push_back(absl::StrCat(var, "_PARTITION_COUNT=", config.partition_count));
    }
    // Only what the claim consumes of a shared GPU, as the quantity it asked for.
    for (const char* capacity : {"memory", "compute"}) {
      if (auto it = device.consumed_capacity.find(capacity); it != device.consumed_capacity.end()) {
        edits.env.push_back(absl::StrCat(var, "_", absl::AsciiStrToUpper(capacity), "=", it->second.ToString()));
      }
    }
    edits.device_nodes = gpu.device_nodes;
    if (options_.device_metadata) {
      prepared.metadata.emplace().attributes = {{"uuid", k8s::StringAttribute(gpu.uuid)},
                                                {"model", k8s::StringAttribute(gpu.model)},
                                                {k8s::kPciBusIdAttribute, k8s::StringAttribute(gpu.pci_bus_id)}};
    }

    k8s::AllocatedDeviceStatus& status = statuses.emplace_back();
    status.driver = device.driver;
    status.pool = device.pool;
    status.device = device.device;
    status.share_id = device.share_id;
    // Typed attributes, as the device's own in its ResourceSlice.
    status.data = nlohmann::json{{"uuid", k8s::ToJson(k8s::StringAttribute(gpu.uuid))},
                                 {"model", k8s::ToJson(k8s::StringAttribute(gpu.model))},
                                 {"driverVersion", k8s::ToJson(k8s::VersionAttribute(gpu.driver_version))},
                                 {"sharingStrategy", k8s::ToJson(k8s::StringAttribute(StrategyName(config.strategy)))}};
    k8s::Condition& ready = status.conditions.emplace_back();
    ready.type = "Ready";
    ready.status = "True";
    ready.reason = "Prepared";
    ready.message = absl::StrCat("prepared as ", gpu.uuid);
  }
  if (options_.status_writer != nullptr) {
    const k8s::ClaimRef ref = k8s::ClaimRefOf(claim);
    const dra::CallContext report =
        dra::CallContext::Background(std::min(ctx.deadline(), absl::Now() + kStatusWriteTimeout), ctx.logger());
    if (absl::Status written = options_.status_writer->Apply(report, ref, std::move(statuses)); !written.ok()) {
      ctx.logger().Warning("Device status not written", {{"claim", ClaimName(claim)}, {"err", written.ToString()}});
    }
  }
  return result;
}

absl::StatusOr<kp::UnprepareResults> GpuDriver::UnprepareResourceClaims(const dra::CallContext& ctx,
                                                                        std::span<const k8s::ClaimRef> claims) {
  // The Helper removes the claims' CDI specs; mock and NVML GPUs keep no
  // other per-claim state.
  kp::UnprepareResults results;
  for (const k8s::ClaimRef& claim : claims) {
    const absl::Time start = absl::Now();
    results[claim.uid] = absl::OkStatus();
    metrics_.ObserveUnprepare(true, absl::Now() - start);
    ctx.logger().Info("Unprepared claim", {{"claim", claim.namespace_ + "/" + claim.name}, {"uid", claim.uid}});
  }
  return results;
}

}  // namespace gpu
