// gpu::GpuFlags: gpu-driver's own flags, beside the kubelet plugin flags
// (example::PluginFlags): the device profile and source, how GPUs are
// published and prepared, fabric-attached GPUs and binding conditions.
#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "dra/flags.h"
#include "dra/k8s/node_selector.h"
#include "dra/k8s/quantity.h"

namespace gpu {

struct GpuFlags {
  std::string device_profile = "gpu";
  std::string driver_name;  // default: <device_profile>.example.com
  std::string device_source = "mock";
  int num_devices = 8;
  int cpu_numa_nodes = 8;
  int cpus_per_numa_node = 4;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string mock_health_file;
  int partitions = 0;
  bool allow_multiple_allocations = false;
  std::optional<dra::k8s::Quantity> host_memory_overhead;
  bool device_status = false;
  bool device_metadata = false;
  std::string fabric_pool;
  int fabric_num_devices = 4;
  dra::k8s::NodeSelector fabric_selector;
  std::string fabric_selector_text = "accelerator-type=high-performance";
  bool fabric_controller = false;
  bool fabric_attach = false;
  bool binding_conditions = false;
  bool health_service = true;
  std::string pod_name;
  std::string pod_namespace;
  absl::Duration fabric_attach_delay = absl::Seconds(2);
  double fabric_failure_rate = 0;
  absl::Duration binding_timeout = absl::Seconds(600);

  void Register(dra::FlagSet& flags);
  // After parsing: the default driver name, the fabric selector.
  void Finish();
};

}  // namespace gpu
