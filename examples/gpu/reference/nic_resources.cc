#include "nic_resources.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "dra/k8s/device_attributes.h"
#include "dra/resourceslice/split.h"
#include "mock_gpus.h"

namespace gpu {
namespace {

namespace k8s = dra::k8s;

k8s::Quantity Q(const char* text) { return *k8s::Quantity::Parse(text); }

k8s::DeviceCapacity Bandwidth() {
  k8s::DeviceCapacity capacity = k8s::Capacity(Q("100G"));
  k8s::CapacityRequestPolicy& policy = capacity.request_policy.emplace();
  policy.default_value = Q("1G");
  k8s::CapacityRequestPolicyRange& range = policy.valid_range.emplace();
  range.min = Q("100M");
  range.max = Q("100G");
  range.step = Q("1M");
  return capacity;
}

}  // namespace

std::string NicDeviceName(int index) { return absl::StrCat("nic-", index); }

dra::resourceslice::Pool NicPool(const std::string& node_name, int count) {
  std::vector<k8s::Device> devices;
  for (int i = 0; i < count; ++i) {
    k8s::Device& nic = devices.emplace_back();
    nic.name = NicDeviceName(i);
    nic.allow_multiple_allocations = true;
    nic.attributes["index"] = k8s::IntAttribute(i);
    nic.attributes["uuid"] = k8s::StringAttribute(MockUuid("net-", node_name, i));
    nic.attributes["model"] = k8s::StringAttribute("LATEST-NET-MODEL");
    nic.attributes["driverVersion"] = k8s::VersionAttribute("1.0.0");
    k8s::DeviceCapacity vfs = k8s::Capacity(k8s::Quantity::FromInt(100));
    k8s::CapacityRequestPolicy& policy = vfs.request_policy.emplace();
    policy.default_value = k8s::Quantity::FromInt(1);
    policy.valid_values = {k8s::Quantity::FromInt(1)};
    nic.capacity["vfs"] = vfs;
    nic.capacity["ingressBandwidth"] = Bandwidth();
    nic.capacity["egressBandwidth"] = Bandwidth();
  }
  dra::resourceslice::Pool pool;
  pool.slices = dra::resourceslice::SplitIntoSlices(std::move(devices));
  return pool;
}

}  // namespace gpu
