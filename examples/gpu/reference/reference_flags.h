// gpu::ReferenceFlags: gpu-driver's flags for dra-example-driver's users,
// beside its own (GpuFlags): the device profile (net, cpu) and the made-up
// NUMA nodes, fabric-attached GPUs and the fabric controller, binding
// conditions, and the driver pod whose annotations pin devices' health.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "dra/flags.h"
#include "dra/k8s/node_selector.h"

namespace gpu {

struct ReferenceFlags {
  std::string device_profile = "gpu";
  int cpu_numa_nodes = 8;
  int cpus_per_numa_node = 4;
  std::string fabric_pool;
  int fabric_num_devices = 4;
  dra::k8s::NodeSelector fabric_selector;
  std::string fabric_selector_text = "accelerator-type=high-performance";
  bool fabric_controller = false;
  bool fabric_attach = false;
  bool binding_conditions = false;
  std::string pod_name;
  std::string pod_namespace;
  absl::Duration fabric_attach_delay = absl::Seconds(2);
  double fabric_failure_rate = 0;
  absl::Duration binding_timeout = absl::Seconds(600);

  void Register(dra::FlagSet& flags);
  // After parsing: the fabric selector.
  void Finish();
};

}  // namespace gpu
