// A gpu::DeviceSource for NVIDIA GPUs through NVML, the library the NVIDIA
// driver installs on the node (libnvidia-ml.so.1). The library is loaded at
// run time with dlopen: building the example needs no NVIDIA headers or
// libraries, and a node without the driver gets a clear error instead of a
// binary that does not start.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "device_source.h"

namespace gpu {

inline constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";

// Loads `library` (a file name searched as dlopen does, or a path) and
// initialises NVML. `sysfs_root` is where the PCI device links are looked up
// for GpuInfo::pcie_root (<sysfs_root>/bus/pci/devices/<bus id>).
//
// Discover() may be called from any thread; WaitForHealthEvents() from one
// thread at a time, as device_source.h requires. Health events cover the GPUs
// present at the first WaitForHealthEvents() call: critical XIDs, classified
// by nvml_internal::ClassifyXid.
absl::StatusOr<std::unique_ptr<DeviceSource>> OpenNvml(const std::string& library = kNvmlLibrary,
                                                       const std::string& sysfs_root = "/sys");

// The pure parts of the NVML source, exposed for tests.
namespace nvml_internal {

// NVML's "535.104.05" as semver 2.0.0: leading zeros dropped from every part,
// padded to three parts ("550.54" -> "550.54.0"). InvalidArgument for anything
// but one to three dot-separated numbers.
absl::StatusOr<std::string> NormalizeDriverVersion(std::string_view nvml_version);

// NVML's "00000000:3B:00.0" in the form of resource.kubernetes.io/pciBusID
// and sysfs, "0000:3b:00.0": lower case, a four-digit domain (more digits only
// for domains above 0xffff, as sysfs names them). InvalidArgument when it is
// not <domain>:<bus>:<device>.<function>.
absl::StatusOr<std::string> NormalizePciBusId(std::string_view nvml_bus_id);

// The PCIe root complex of the device `bus_id` ("0000:3b:00.0"), e.g.
// "pci0000:3a": the first "pci<domain>:<bus>" component of the target of the
// link <sysfs_root>/bus/pci/devices/<bus_id>. Empty when that is unknown.
std::string PcieRootFromSysfs(const std::string& sysfs_root, const std::string& bus_id);

// The NUMA node of the device `bus_id`, from <sysfs_root>/bus/pci/devices/
// <bus_id>/numa_node; none when the file is missing or unreadable, or says
// -1 (no NUMA affinity), or names a node past the kernel's 1024.
std::optional<int> NumaNodeFromSysfs(const std::string& sysfs_root, const std::string& bus_id);

// The short model name: the product name without the "NVIDIA " prefix and
// without everything from the first memory-size word on
// ("NVIDIA A100-SXM4-80GB" -> "A100-SXM4", "NVIDIA H100 80GB HBM3" -> "H100",
// "NVIDIA GeForce RTX 4090" -> "GeForce RTX 4090").
std::string ModelFromProductName(std::string_view product_name);

// CUDA cores per streaming multiprocessor for a compute capability
// (9.0 -> 128); none for one not listed.
std::optional<int> CoresPerMultiprocessor(int major, int minor);

enum class XidSeverity {
  kIgnored,    // caused by the application (e.g. 13, 31, 43): the GPU is fine
  kUnhealthy,  // stop scheduling onto the GPU
  kFatal,      // the GPU needs a reset: running workloads must go too
};
XidSeverity ClassifyXid(uint64_t xid);

}  // namespace nvml_internal
}  // namespace gpu
