#include "nic_driver.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "container_env.h"
#include "net_config.h"
#include "opaque_configs.h"

namespace gpu {
namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;

std::string ClaimName(const k8s::ResourceClaim& claim) {
  return absl::StrCat(claim.metadata.namespace_, "/", claim.metadata.name);
}

}  // namespace

absl::StatusOr<kp::PrepareResults> NicDriver::PrepareResourceClaims(const dra::CallContext& ctx,
                                                                    std::span<const k8s::ResourceClaim> claims) {
  kp::PrepareResults results;
  for (const k8s::ResourceClaim& claim : claims) {
    kp::PrepareResult& result = results[claim.metadata.uid];
    const absl::Time start = absl::Now();
    result = Prepare(claim);
    metrics_.ObservePrepare(result.status.ok(), absl::Now() - start);
    if (result.status.ok()) {
      ctx.logger().Info(
          "Prepared claim",
          {{"claim", ClaimName(claim)}, {"uid", claim.metadata.uid}, {"devices", absl::StrCat(result.devices.size())}});
    }
  }
  return results;
}

kp::PrepareResult NicDriver::Prepare(const k8s::ResourceClaim& claim) const {
  kp::PrepareResult result;
  absl::StatusOr<std::map<size_t, NetConfig>> configs =
      ConfigsForResults<NetConfig>(claim, options_.driver_name, DecodeNetConfig);
  if (!configs.ok()) {
    result.status = configs.status();
    return result;
  }
  const std::string admin_access = AdminAccessVariable(claim);
  const std::vector<k8s::DeviceRequestAllocationResult>& allocated = claim.status.allocation->devices.results;
  for (const auto& [index, config] : *configs) {
    const k8s::DeviceRequestAllocationResult& device = allocated[index];
    if (!options_.devices.contains(device.device)) {
      result.status = absl::NotFoundError(absl::StrCat("status.allocation.devices.results[", index, "].device: \"",
                                                       device.device, "\" is not a device of this node"));
      return result;
    }
    const std::string var = absl::StrCat("NET_DEVICE_", device.device.substr(std::string("nic-").size()));
    kp::Device& prepared = result.devices.emplace_back(kp::Device::ForAllocation(device));
    prepared.cdi_device_ids = {options_.common_cdi_id};
    dra::cdi::ContainerEdits& edits = prepared.cdi_edits.emplace();
    edits.env = {ClaimVariable("net", device.device, claim.metadata.uid), admin_access};
    if (config.ingress_burst > 0) edits.env.push_back(absl::StrCat(var, "_INGRESS_BURST=", config.ingress_burst));
    if (config.egress_burst > 0) edits.env.push_back(absl::StrCat(var, "_EGRESS_BURST=", config.egress_burst));
    for (const auto& [capacity, name] :
         {std::pair{"ingressBandwidth", "_INGRESS_RATE="}, std::pair{"egressBandwidth", "_EGRESS_RATE="}}) {
      if (auto it = device.consumed_capacity.find(capacity); it != device.consumed_capacity.end()) {
        edits.env.push_back(absl::StrCat(var, name, it->second.Value()));
      }
    }
  }
  return result;
}

absl::StatusOr<kp::UnprepareResults> NicDriver::UnprepareResourceClaims(const dra::CallContext& ctx,
                                                                        std::span<const k8s::ClaimRef> claims) {
  // The Helper removes the claims' CDI specs; mock NICs keep no other state.
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
