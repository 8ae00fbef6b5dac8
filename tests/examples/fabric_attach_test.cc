// FabricAttach, the GPU example's simulated fabric manager: an attach takes
// its delay, then fails for an evenly spread share of attaches starting with
// the first, so the same sequence comes every time; each allocation (claim,
// allocation time, device) is its own attach.
#include "fabric_attach.h"
#include "gpu_binding.h"

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace {

namespace rc = dra::resourceclaim;
using Outcome = rc::BindingResult::Outcome;

dra::k8s::ResourceClaim Claim(const std::string& uid, const std::string& allocated_at) {
  dra::k8s::ResourceClaim claim;
  claim.metadata.uid = uid;
  dra::k8s::AllocationResult& allocation = claim.status.allocation.emplace();
  allocation.allocation_timestamp = allocated_at;
  allocation.node_selector = dra::k8s::NodeSelectorForName("node-1");
  return claim;
}

dra::k8s::DeviceRequestAllocationResult Device(const std::string& name) {
  dra::k8s::DeviceRequestAllocationResult device;
  device.device = name;
  return device;
}

// The outcomes of `n` attaches of fresh allocations, without delay.
std::vector<Outcome> Attaches(double failure_rate, int n) {
  gpu::FabricAttach attach(absl::ZeroDuration(), failure_rate, absl::Minutes(10));
  std::vector<Outcome> outcomes;
  for (int i = 0; i < n; ++i) {
    outcomes.push_back(
        attach.PrepareForBinding(dra::CallContext::Background(), Claim("uid-" + std::to_string(i), "t"), Device("g"))
            .outcome());
  }
  return outcomes;
}

TEST_CASE("FabricAttach fails an evenly spread share of attaches, from the first", "[examples][gpu]") {
  constexpr Outcome kFail = Outcome::kFailed;
  constexpr Outcome kReady = Outcome::kReady;
  CHECK(Attaches(0, 3) == std::vector<Outcome>{kReady, kReady, kReady});
  CHECK(Attaches(1, 3) == std::vector<Outcome>{kFail, kFail, kFail});
  CHECK(Attaches(0.5, 4) == std::vector<Outcome>{kFail, kReady, kFail, kReady});
  CHECK(Attaches(0.25, 8) == std::vector<Outcome>{kFail, kReady, kReady, kReady, kFail, kReady, kReady, kReady});
  // Ten attaches at 0.1 fail once, not twice (no rounding drift).
  const std::vector<Outcome> tenth = Attaches(0.1, 10);
  CHECK(std::count(tenth.begin(), tenth.end(), kFail) == 1);
}

TEST_CASE("FabricAttach is pending for its delay, and a new allocation of the same claim is a new attach",
          "[examples][gpu]") {
  gpu::FabricAttach attach(absl::Hours(1), 0.5, absl::Hours(2));
  const dra::CallContext ctx = dra::CallContext::Background();
  const rc::BindingResult pending = attach.PrepareForBinding(ctx, Claim("u", "t1"), Device("g"));
  CHECK(pending.outcome() == Outcome::kPending);
  CHECK(pending.retry_after() <= absl::Seconds(1));
  CHECK(attach.PrepareForBinding(ctx, Claim("u", "t1"), Device("g")).outcome() == Outcome::kPending);

  gpu::FabricAttach quick(absl::ZeroDuration(), 0.5, absl::Hours(2));
  const rc::BindingResult failed = quick.PrepareForBinding(ctx, Claim("u", "t1"), Device("g"));
  CHECK(failed.outcome() == Outcome::kFailed);
  CHECK(failed.reason() == "AttachFailed");
  CHECK(failed.message() == "simulated fabric failure attaching g to node-1");
  const rc::BindingResult ready = quick.PrepareForBinding(ctx, Claim("u", "t2"), Device("g"));
  CHECK(ready.outcome() == Outcome::kReady);
  CHECK(ready.message() == "g attached to node-1");
}

TEST_CASE("GpuBinding: the node's own GPUs are ready at once - fabric GPUs are attached first", "[examples][gpu]") {
  gpu::FabricAttach attach(absl::Hours(1), 0, absl::Hours(2));
  gpu::GpuBinding binding(attach);
  dra::k8s::DeviceRequestAllocationResult own = Device("gpu-0");
  own.pool = "node-1";  // the node the allocation selects
  dra::k8s::DeviceRequestAllocationResult fabric = Device("fabric-gpu-0");
  fabric.pool = "fabric-0";
  CHECK(binding.PrepareForBinding(dra::CallContext::Background(), Claim("u1", "t"), own).outcome() == Outcome::kReady);
  CHECK(binding.PrepareForBinding(dra::CallContext::Background(), Claim("u1", "t"), fabric).outcome() ==
        Outcome::kPending);
  // Another node's pool is not this allocation's node: not its own GPU.
  dra::k8s::DeviceRequestAllocationResult elsewhere = Device("gpu-1");
  elsewhere.pool = "node-2";
  CHECK(binding.PrepareForBinding(dra::CallContext::Background(), Claim("u2", "t"), elsewhere).outcome() ==
        Outcome::kPending);
}

}  // namespace
