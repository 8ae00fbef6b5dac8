// gpu::GpuFlags: gpu-driver's own flags, beside the kubelet plugin flags
// (example::PluginFlags): the device source, how GPUs are published and
// prepared, health. dra-example-driver's (profiles, fabric, binding
// conditions, health pins) are reference/reference_flags.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "dra/flags.h"
#include "dra/k8s/quantity.h"

namespace gpu {

struct GpuFlags {
  std::string driver_name;  // default: <device profile>.example.com (Finish)
  std::string device_source = "mock";
  int num_devices = 8;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string mock_health_file;
  int partitions = 0;
  bool allow_multiple_allocations = false;
  std::optional<dra::k8s::Quantity> host_memory_overhead;
  bool device_status = false;
  bool device_metadata = false;
  bool health_service = true;

  void Register(dra::FlagSet& flags);
  // After parsing: the driver name, unless --driver-name gave one.
  void Finish(std::string_view device_profile = "gpu");
};

}  // namespace gpu
