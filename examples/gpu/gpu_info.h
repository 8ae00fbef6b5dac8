// What the GPU example driver knows about one physical GPU, whichever source
// found it (mock_gpus.h, nvml_gpus.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dra/cdi/spec.h"

namespace gpu {

struct GpuInfo {
  int index = 0;                                   // the driver's own numbering, 0..n-1; devices are "gpu-<index>"
  std::string uuid;                                // "GPU-8d8b3d1f-..."
  std::string model;                               // short model name, e.g. "A100"
  std::string product_name;                        // e.g. "NVIDIA A100-SXM4-80GB"
  std::string driver_version;                      // semver 2.0.0, e.g. "550.54.15"
  std::string pci_bus_id;                          // "0000:3b:00.0" (resource.kubernetes.io/pciBusID)
  std::string pcie_root;                           // "pci0000:3a" (resource.kubernetes.io/pcieRoot); empty if unknown
  std::optional<int> numa_node;                    // resource.kubernetes.io/numaNode; none without NUMA affinity
  int64_t memory_bytes = 0;                        // total framebuffer memory
  std::optional<int64_t> compute_units;            // streaming multiprocessors (or equivalent); none if unknown
  bool mig_enabled = false;                        // MIG mode on: the GPU is partitioned by its own hardware
  std::vector<dra::cdi::DeviceNode> device_nodes;  // what a container needs, e.g. /dev/nvidia0

  bool operator==(const GpuInfo&) const = default;
};

// A character device node given in full (type, major, minor), so that the
// container runtime does not look for it on the host.
inline dra::cdi::DeviceNode CharDeviceNode(std::string path, int64_t major, int64_t minor) {
  dra::cdi::DeviceNode node;
  node.path = std::move(path);
  // Built, not assigned from a literal: GCC 12 at -O3 (Release, the
  // Dockerfile's build) reports that as an overlapping copy (PR 105329).
  node.type = std::string("c");
  node.major = major;
  node.minor = minor;
  return node;
}

}  // namespace gpu
