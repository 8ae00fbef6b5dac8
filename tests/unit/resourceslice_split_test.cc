// SplitIntoSlices: every slice it makes is one the API server accepts, in
// the order of the input, with shared counters in slices of their own first.
#include "dra/resourceslice/split.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "dra/k8s/validation.h"

namespace dra::resourceslice {
namespace {

k8s::Device Plain(int i) {
  k8s::Device device;
  device.name = absl::StrCat("gpu-", i);
  device.attributes["index"].int_value = i;
  return device;
}

k8s::Device Tainted(int i) {
  k8s::Device device = Plain(i);
  k8s::DeviceTaint taint;
  taint.key = "example.com/unhealthy";
  taint.effect = "NoSchedule";
  device.taints.push_back(taint);
  return device;
}

k8s::CounterSet Counters(int i) {
  k8s::CounterSet set;
  set.name = absl::StrCat("set-", i);
  set.counters["memory"].value = k8s::Quantity::FromInt(1024);
  return set;
}

std::vector<size_t> Sizes(const std::vector<Slice>& slices) {
  std::vector<size_t> sizes;
  for (const Slice& slice : slices) sizes.push_back(slice.devices.size());
  return sizes;
}

// Every slice passes the API server's rules, as a node-local slice.
void RequireValid(const std::vector<Slice>& slices) {
  for (size_t i = 0; i < slices.size(); ++i) {
    k8s::ResourceSlice slice;
    slice.metadata.name = absl::StrCat("slice-", i);
    slice.spec.driver = "gpu.example.com";
    slice.spec.pool.name = "pool";
    slice.spec.pool.generation = 1;
    slice.spec.pool.resource_slice_count = static_cast<int64_t>(slices.size());
    slice.spec.node_name = "node-1";
    slice.spec.devices = slices[i].devices;
    slice.spec.shared_counters = slices[i].shared_counters;
    k8s::FieldErrors errors = k8s::ValidateResourceSlice(slice);
    INFO("slice " << i << ": " << k8s::ToStatus(errors, "slice").ToString());
    REQUIRE(errors.empty());
  }
}

TEST_CASE("10,000 plain devices make ceil(10000/128) slices of 128, in order") {
  std::vector<k8s::Device> devices;
  for (int i = 0; i < 10000; ++i) devices.push_back(Plain(i));
  std::vector<Slice> slices = SplitIntoSlices(devices);
  REQUIRE(slices.size() == 79);
  std::vector<size_t> expected(78, 128);
  expected.push_back(10000 - 78 * 128);
  CHECK(Sizes(slices) == expected);
  CHECK(slices[0].devices[0].name == "gpu-0");
  CHECK(slices[78].devices.back().name == "gpu-9999");
  RequireValid(slices);
}

TEST_CASE("taints lower the limit to 64 for the slice that holds them") {
  std::vector<k8s::Device> devices;
  for (int i = 0; i < 100; ++i) devices.push_back(Plain(i));
  for (int i = 100; i < 200; ++i) devices.push_back(Tainted(i));
  for (int i = 200; i < 300; ++i) devices.push_back(Plain(i));
  std::vector<Slice> slices = SplitIntoSlices(devices);
  // 100 plain fit one slice; a tainted device cannot join them (64 max).
  CHECK(Sizes(slices) == std::vector<size_t>{100, 64, 36 + 28, 72});
  RequireValid(slices);
}

TEST_CASE("list attributes and consumesCounters also count as advanced") {
  std::vector<k8s::Device> devices;
  for (int i = 0; i < 65; ++i) {
    k8s::Device device = Plain(i);
    device.attributes["models"].string_values = {"a", "b"};
    devices.push_back(device);
  }
  CHECK(Sizes(SplitIntoSlices(devices)) == std::vector<size_t>{64, 1});
}

TEST_CASE("shared counters come first, at most 8 sets per slice, without devices") {
  std::vector<k8s::CounterSet> sets;
  for (int i = 0; i < 10; ++i) sets.push_back(Counters(i));
  std::vector<k8s::Device> devices;
  for (int i = 0; i < 3; ++i) {
    k8s::Device device = Plain(i);
    k8s::DeviceCounterConsumption consumption;
    consumption.counter_set = "set-9";
    consumption.counters["memory"].value = k8s::Quantity::FromInt(1);
    device.consumes_counters.push_back(consumption);
    devices.push_back(device);
  }
  std::vector<Slice> slices = SplitIntoSlices(devices, sets);
  REQUIRE(slices.size() == 3);
  CHECK(slices[0].shared_counters.size() == 8);
  CHECK(slices[1].shared_counters.size() == 2);
  CHECK(slices[1].shared_counters[1].name == "set-9");
  CHECK(Sizes(slices) == std::vector<size_t>{0, 0, 3});
  CHECK(slices[2].shared_counters.empty());
  RequireValid(slices);
}

TEST_CASE("nothing to publish is one empty slice: an empty pool, not a missing one") {
  std::vector<Slice> slices = SplitIntoSlices({});
  REQUIRE(slices.size() == 1);
  CHECK(slices[0].devices.empty());
  CHECK(slices[0].shared_counters.empty());
}

}  // namespace
}  // namespace dra::resourceslice
