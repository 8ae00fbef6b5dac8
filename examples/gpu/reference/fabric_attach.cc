#include "fabric_attach.h"

#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dra/k8s/node_selector.h"

namespace gpu {

namespace rc = dra::resourceclaim;

rc::BindingResult FabricAttach::PrepareForBinding(const dra::CallContext& ctx, const dra::k8s::ResourceClaim& claim,
                                                  const dra::k8s::DeviceRequestAllocationResult& device) {
  const std::optional<dra::k8s::NodeSelector>& selector = claim.status.allocation->node_selector;
  std::optional<std::string> selected;
  if (selector.has_value()) selected = dra::k8s::SelectedNodeName(*selector);
  const std::string node = selected.value_or("the selected nodes");
  const std::string key = absl::StrCat(claim.metadata.uid, "/",
                                       claim.status.allocation->allocation_timestamp.value_or(""), "/", device.device);
  const absl::Time now = absl::Now();
  std::scoped_lock lock(mu_);
  std::erase_if(started_, [&](const auto& entry) { return entry.second + forget_after_ < now; });
  auto [it, first] = started_.try_emplace(key, now);
  if (first) ctx.logger().Info("Attaching fabric GPU", {{"node", node}, {"delay", absl::FormatDuration(delay_)}});
  const absl::Duration left = it->second + delay_ - now;
  if (left > absl::ZeroDuration()) return rc::BindingResult::Pending(std::min(left, absl::Seconds(1)));
  started_.erase(it);
  ++finished_;
  // Fail when the running count of failures due, rounded up, goes up.
  if (std::ceil(static_cast<double>(finished_) * failure_rate_ - 1e-9) >
      std::ceil(static_cast<double>(finished_ - 1) * failure_rate_ - 1e-9)) {
    return rc::BindingResult::Failed("AttachFailed",
                                     absl::StrCat("simulated fabric failure attaching ", device.device, " to ", node));
  }
  return rc::BindingResult::Ready("Attached", absl::StrCat(device.device, " attached to ", node));
}

}  // namespace gpu
