// FabricAttach: the example driver's BindingHandler for fabric-attached
// GPUs. It stands in for a fabric manager: the attach of a device to the node
// its allocation is bound to (SelectedNodeName; the same in the node plugin
// and in a central reconciler) takes `delay` from the first time the
// reconciler asks, then succeeds
// or fails, which makes the scheduler clear the allocation and try again.
// A `failure_rate` share of attaches fail, spread evenly and starting with
// the first (0.5: the 1st, 3rd, 5th...; 1: all), so that tests and demos
// see the same sequence every time. A vendor replaces it with calls to its
// fabric manager; the reconciler (binding_condition_reconciler.h) does the
// rest.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"

namespace gpu {

class FabricAttach : public dra::resourceclaim::BindingHandler {
 public:
  // An attach the reconciler stops asking about (the claim was deallocated
  // meanwhile) is forgotten `forget_after` after it started: pass the
  // binding timeout, after which the reconciler asks no more.
  FabricAttach(absl::Duration delay, double failure_rate, absl::Duration forget_after)
      : delay_(delay), failure_rate_(failure_rate), forget_after_(forget_after) {}

  dra::resourceclaim::BindingResult PrepareForBinding(const dra::CallContext& ctx, const dra::k8s::ResourceClaim& claim,
                                                      const dra::k8s::DeviceRequestAllocationResult& device) override;

 private:
  const absl::Duration delay_;
  const double failure_rate_;
  const absl::Duration forget_after_;
  std::mutex mu_;
  // When each attach (claim UID, allocation time, device) started.
  std::map<std::string, absl::Time> started_;  // guarded by mu_
  uint64_t finished_ = 0;                      // guarded by mu_; attaches that succeeded or failed
};

}  // namespace gpu
