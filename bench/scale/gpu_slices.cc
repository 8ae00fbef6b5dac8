// bench_gpu_slices prints the slices the example GPU driver publishes for one
// node with mock GPUs (gpu::NodePool, as examples/gpu/main.cc publishes them)
// as a ResourceSliceList in JSON: the pool that bench/scale.sh has both
// publishers (--slices FILE) publish on every simulated node.
//
//   bench_gpu_slices [--gpus 8] [--partitions 0] [--node NAME] [--driver NAME]
//
// --partitions P > 0: every GPU as a whole and as P partitions drawn from
// shared counters (the driver's --gpu-partitions).

#include <cstdio>
#include <iostream>
#include <string>

#include "absl/strings/numbers.h"
#include "dra/k8s/resource_slice_json.h"
#include "gpu_resources.h"
#include "mock_gpus.h"

int main(int argc, char** argv) {
  int gpus = 8;
  gpu::PublishOptions options;
  options.driver_name = "gpu.example.com";
  options.node_name = "node";
  bool ok = argc % 2 == 1;
  for (int i = 1; ok && i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--gpus") {
      ok = absl::SimpleAtoi(value, &gpus) && gpus > 0;
    } else if (flag == "--partitions") {
      ok = absl::SimpleAtoi(value, &options.partitions) && options.partitions >= 0;
    } else if (flag == "--node") {
      options.node_name = value;
    } else if (flag == "--driver") {
      options.driver_name = value;
    } else {
      ok = false;
    }
  }
  if (!ok) {
    std::fprintf(stderr, "usage: %s [--gpus N] [--partitions P] [--node NAME] [--driver NAME]\n", argv[0]);
    return 2;
  }
  const dra::resourceslice::Pool pool = gpu::NodePool(*gpu::MockGpus(options.node_name, gpus, "").Discover(), options);
  nlohmann::json list = {
      {"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSliceList"}, {"items", nlohmann::json::array()}};
  for (const dra::resourceslice::Slice& slice : pool.slices) {
    dra::k8s::ResourceSlice object;
    object.metadata.name = options.node_name;
    object.spec.driver = options.driver_name;
    object.spec.pool.name = options.node_name;
    object.spec.pool.resource_slice_count = static_cast<int64_t>(pool.slices.size());
    object.spec.node_name = options.node_name;
    object.spec.devices = slice.devices;
    object.spec.shared_counters = slice.shared_counters;
    list["items"].push_back(dra::k8s::ToJson(object));
  }
  std::cout << list.dump(1) << '\n';
  return 0;
}
