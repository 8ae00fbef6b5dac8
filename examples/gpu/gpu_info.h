// What the GPU example driver knows about one physical GPU, whichever source
// found it (mock_gpus.h, nvml_gpus.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dra/cdi/spec.h"

namespace gpu {

struct GpuInfo {
  int index = 0;                // the driver's own numbering, 0..n-1; devices are "gpu-<index>"
  std::string uuid;             // "GPU-8d8b3d1f-..."
  std::string model;            // short model name, e.g. "A100"
  std::string product_name;     // e.g. "NVIDIA A100-SXM4-80GB"
  std::string driver_version;   // semver 2.0.0, e.g. "550.54.15"
  std::string pci_bus_id;       // "0000:3b:00.0" (resource.kubernetes.io/pciBusID)
  std::string pcie_root;        // "pci0000:3a" (resource.kubernetes.io/pcieRoot); empty if unknown
  int64_t memory_bytes = 0;     // total framebuffer memory
  int64_t compute_units = 0;    // streaming multiprocessors (or equivalent)
  bool mig_enabled = false;     // MIG mode on: the GPU is partitioned by its own hardware
  std::vector<dra::cdi::DeviceNode> device_nodes;  // what a container needs, e.g. /dev/nvidia0

  bool operator==(const GpuInfo&) const = default;
};

}  // namespace gpu
