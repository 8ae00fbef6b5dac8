// FabricAttach: the example driver's BindingHandler for fabric-attached
// GPUs. It stands in for a fabric manager: the attach of a device to this
// node takes `delay` from the first time the reconciler asks, then succeeds,
// or fails with probability `failure_rate`, which makes the scheduler clear
// the allocation and try again. A vendor replaces it with calls to its
// fabric manager; the reconciler (binding_condition_reconciler.h) does the
// rest.
#pragma once

#include <map>
#include <mutex>
#include <random>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "dra/kubeletplugin/binding_condition_reconciler.h"

namespace gpu {

class FabricAttach : public dra::kubeletplugin::BindingHandler {
 public:
  FabricAttach(std::string node_name, absl::Duration delay, double failure_rate)
      : node_name_(std::move(node_name)), delay_(delay), failure_rate_(failure_rate) {}

  dra::kubeletplugin::BindingResult PrepareForBinding(const dra::kubeletplugin::CallContext& ctx,
                                                      const dra::k8s::ResourceClaim& claim,
                                                      const dra::k8s::DeviceRequestAllocationResult& device) override;

 private:
  const std::string node_name_;
  const absl::Duration delay_;
  const double failure_rate_;
  std::mutex mu_;
  // When each attach (claim UID, allocation time, device) started.
  std::map<std::string, absl::Time> started_;
  std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace gpu
