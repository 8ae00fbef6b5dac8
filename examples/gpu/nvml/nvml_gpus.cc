// The NVML device source (nvml_gpus.h): libnvidia-ml loaded with dlopen, the
// few NVML types it uses declared in nvml_abi.h and the functions it calls
// declared here, with the layouts of NVIDIA's nvml.h.
#include "nvml/nvml_gpus.h"

#include <dlfcn.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "nvml/nvml_abi.h"

namespace gpu {
namespace {

// --- From nvml.h (nvml_abi.h) ------------------------------------------

using nvml_abi::nvmlDevice_t;
using nvml_abi::nvmlDeviceAttributes_t;
using nvml_abi::nvmlEventData_t;
using nvml_abi::nvmlEventSet_t;
using nvml_abi::nvmlEventTypeXidCriticalError;
using nvml_abi::nvmlMemory_t;
using nvml_abi::nvmlPciInfo_t;
using nvml_abi::nvmlReturn_t;

using nvml_abi::NVML_DEVICE_NAME_V2_BUFFER_SIZE;
using nvml_abi::NVML_DEVICE_UUID_V2_BUFFER_SIZE;
using nvml_abi::NVML_ERROR_DRIVER_NOT_LOADED;
using nvml_abi::NVML_ERROR_LIB_RM_VERSION_MISMATCH;
using nvml_abi::NVML_ERROR_NO_PERMISSION;
using nvml_abi::NVML_ERROR_NOT_SUPPORTED;
using nvml_abi::NVML_ERROR_TIMEOUT;
using nvml_abi::NVML_SUCCESS;
using nvml_abi::NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE;

// --- Loading ------------------------------------------------------------

struct DlCloser {
  void operator()(void* handle) const { dlclose(handle); }
};
using LibraryHandle = std::unique_ptr<void, DlCloser>;

struct NvmlApi {
  nvmlReturn_t (*nvmlInit_v2)() = nullptr;
  nvmlReturn_t (*nvmlShutdown)() = nullptr;
  const char* (*nvmlErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*nvmlSystemGetDriverVersion)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetCount_v2)(unsigned int*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetPciInfo_v3)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetMigMode)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetMinorNumber)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*nvmlEventSetCreate)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*nvmlDeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*nvmlEventSetWait_v2)(nvmlEventSet_t, nvmlEventData_t*, unsigned int) = nullptr;
  nvmlReturn_t (*nvmlEventSetFree)(nvmlEventSet_t) = nullptr;
  // Optional (older drivers lack them): what tells the multiprocessor count.
  nvmlReturn_t (*nvmlDeviceGetAttributes_v2)(nvmlDevice_t, nvmlDeviceAttributes_t*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetNumGpuCores)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability)(nvmlDevice_t, int*, int*) = nullptr;
};

template <typename Fn>
absl::Status Resolve(void* library, const std::string& library_name, const char* symbol, Fn*& fn) {
  dlerror();
  void* address = dlsym(library, symbol);
  if (address == nullptr) {
    const char* error = dlerror();
    return absl::FailedPreconditionError(absl::StrCat("NVML: ", library_name, " has no symbol ", symbol, ": ",
                                                      error ? error : "null", "; is the NVIDIA driver too old?"));
  }
  fn = reinterpret_cast<Fn*>(address);
  return absl::OkStatus();
}

absl::StatusOr<NvmlApi> ResolveApi(void* library, const std::string& library_name) {
  NvmlApi api;
#define DRA_NVML_RESOLVE(name)                                                               \
  if (absl::Status status = Resolve(library, library_name, #name, api.name); !status.ok()) { \
    return status;                                                                           \
  }
  DRA_NVML_RESOLVE(nvmlInit_v2)
  DRA_NVML_RESOLVE(nvmlShutdown)
  DRA_NVML_RESOLVE(nvmlErrorString)
  DRA_NVML_RESOLVE(nvmlSystemGetDriverVersion)
  DRA_NVML_RESOLVE(nvmlDeviceGetCount_v2)
  DRA_NVML_RESOLVE(nvmlDeviceGetHandleByIndex_v2)
  DRA_NVML_RESOLVE(nvmlDeviceGetUUID)
  DRA_NVML_RESOLVE(nvmlDeviceGetName)
  DRA_NVML_RESOLVE(nvmlDeviceGetMemoryInfo)
  DRA_NVML_RESOLVE(nvmlDeviceGetPciInfo_v3)
  DRA_NVML_RESOLVE(nvmlDeviceGetMigMode)
  DRA_NVML_RESOLVE(nvmlDeviceGetMinorNumber)
  DRA_NVML_RESOLVE(nvmlEventSetCreate)
  DRA_NVML_RESOLVE(nvmlDeviceRegisterEvents)
  DRA_NVML_RESOLVE(nvmlEventSetWait_v2)
  DRA_NVML_RESOLVE(nvmlEventSetFree)
#undef DRA_NVML_RESOLVE
  auto resolve_optional = [&](const char* symbol, auto*& fn) {
    if (!Resolve(library, library_name, symbol, fn).ok()) fn = nullptr;
  };
  resolve_optional("nvmlDeviceGetAttributes_v2", api.nvmlDeviceGetAttributes_v2);
  resolve_optional("nvmlDeviceGetNumGpuCores", api.nvmlDeviceGetNumGpuCores);
  resolve_optional("nvmlDeviceGetCudaComputeCapability", api.nvmlDeviceGetCudaComputeCapability);
  return api;
}

// --- The device source --------------------------------------------------

constexpr int64_t kNvidiaMajor = 195;
constexpr int64_t kNvidiaCtlMinor = 255;

class NvmlGpus final : public DeviceSource {
 public:
  // Takes over an initialised NVML.
  NvmlGpus(LibraryHandle library, NvmlApi api, std::string sysfs_root)
      : library_(std::move(library)), api_(api), sysfs_root_(std::move(sysfs_root)) {}

  ~NvmlGpus() override {
    if (event_set_ != nullptr) api_.nvmlEventSetFree(event_set_);
    api_.nvmlShutdown();
  }

  NvmlGpus(const NvmlGpus&) = delete;
  NvmlGpus& operator=(const NvmlGpus&) = delete;

  absl::StatusOr<std::vector<GpuInfo>> Discover() override;
  absl::StatusOr<std::vector<HealthEvent>> WaitForHealthEvents(absl::Duration timeout) override;

 private:
  absl::Status Check(nvmlReturn_t result, absl::string_view call) const;
  absl::StatusOr<std::vector<nvmlDevice_t>> Devices() const;
  absl::StatusOr<GpuInfo> Describe(int index, nvmlDevice_t device, const std::string& driver_version) const;
  absl::StatusOr<std::optional<int64_t>> Multiprocessors(nvmlDevice_t device, const std::string& where) const;
  absl::Status RegisterForEvents();
  // Appends the events for one NVML event, if any.
  void AddEvents(const nvmlEventData_t& data, std::vector<HealthEvent>& events) const;

  LibraryHandle library_;
  const NvmlApi api_;
  const std::string sysfs_root_;

  // Only WaitForHealthEvents' thread touches these.
  nvmlEventSet_t event_set_ = nullptr;
  std::vector<nvmlDevice_t> watched_;  // in index order
};

absl::Status NvmlStatus(const NvmlApi& api, nvmlReturn_t result, absl::string_view call) {
  if (result == NVML_SUCCESS) return absl::OkStatus();
  const char* text = api.nvmlErrorString(result);
  std::string message =
      absl::StrCat("NVML: ", call, " failed: ", text ? text : "unknown error", " (NVML error ", result, ")");
  switch (result) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_NO_PERMISSION:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status NvmlGpus::Check(nvmlReturn_t result, absl::string_view call) const {
  return NvmlStatus(api_, result, call);
}

absl::StatusOr<std::vector<nvmlDevice_t>> NvmlGpus::Devices() const {
  unsigned int count = 0;
  if (absl::Status status = Check(api_.nvmlDeviceGetCount_v2(&count), "nvmlDeviceGetCount_v2"); !status.ok()) {
    return status;
  }
  std::vector<nvmlDevice_t> devices(count);
  for (unsigned int i = 0; i < count; ++i) {
    if (absl::Status status = Check(api_.nvmlDeviceGetHandleByIndex_v2(i, &devices[i]),
                                    absl::StrCat("nvmlDeviceGetHandleByIndex_v2(", i, ")"));
        !status.ok()) {
      return status;
    }
  }
  return devices;
}

absl::StatusOr<std::vector<GpuInfo>> NvmlGpus::Discover() {
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (absl::Status status =
          Check(api_.nvmlSystemGetDriverVersion(version, sizeof version), "nvmlSystemGetDriverVersion");
      !status.ok()) {
    return status;
  }
  absl::StatusOr<std::string> driver_version = nvml_internal::NormalizeDriverVersion(version);
  if (!driver_version.ok()) return driver_version.status();

  absl::StatusOr<std::vector<nvmlDevice_t>> devices = Devices();
  if (!devices.ok()) return devices.status();
  std::vector<GpuInfo> gpus;
  for (size_t i = 0; i < devices->size(); ++i) {
    absl::StatusOr<GpuInfo> gpu = Describe(static_cast<int>(i), (*devices)[i], *driver_version);
    if (!gpu.ok()) return gpu.status();
    gpus.push_back(*std::move(gpu));
  }
  return gpus;
}

absl::StatusOr<GpuInfo> NvmlGpus::Describe(int index, nvmlDevice_t device, const std::string& driver_version) const {
  const std::string where = absl::StrCat(" for GPU ", index);
  GpuInfo gpu;
  gpu.index = index;
  gpu.driver_version = driver_version;

  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (absl::Status s = Check(api_.nvmlDeviceGetUUID(device, uuid, sizeof uuid), "nvmlDeviceGetUUID" + where); !s.ok()) {
    return s;
  }
  gpu.uuid = uuid;

  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (absl::Status s = Check(api_.nvmlDeviceGetName(device, name, sizeof name), "nvmlDeviceGetName" + where); !s.ok()) {
    return s;
  }
  gpu.product_name = name;
  gpu.model = nvml_internal::ModelFromProductName(gpu.product_name);

  nvmlMemory_t memory = {};
  if (absl::Status s = Check(api_.nvmlDeviceGetMemoryInfo(device, &memory), "nvmlDeviceGetMemoryInfo" + where);
      !s.ok()) {
    return s;
  }
  gpu.memory_bytes = static_cast<int64_t>(memory.total);

  nvmlPciInfo_t pci = {};
  if (absl::Status s = Check(api_.nvmlDeviceGetPciInfo_v3(device, &pci), "nvmlDeviceGetPciInfo_v3" + where); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> bus_id =
      nvml_internal::NormalizePciBusId(std::string_view(pci.busId, strnlen(pci.busId, sizeof pci.busId)));
  if (!bus_id.ok()) return bus_id.status();
  gpu.pci_bus_id = *bus_id;
  gpu.pcie_root = nvml_internal::PcieRootFromSysfs(sysfs_root_, gpu.pci_bus_id);
  gpu.numa_node = nvml_internal::NumaNodeFromSysfs(sysfs_root_, gpu.pci_bus_id);

  absl::StatusOr<std::optional<int64_t>> multiprocessors = Multiprocessors(device, where);
  if (!multiprocessors.ok()) return multiprocessors.status();
  gpu.compute_units = *multiprocessors;

  // GPUs without MIG support answer NOT_SUPPORTED.
  unsigned int current_mig = 0, pending_mig = 0;
  nvmlReturn_t mig = api_.nvmlDeviceGetMigMode(device, &current_mig, &pending_mig);
  if (mig == NVML_SUCCESS) {
    gpu.mig_enabled = current_mig != 0;
  } else if (mig != NVML_ERROR_NOT_SUPPORTED) {
    return Check(mig, "nvmlDeviceGetMigMode" + where);
  }

  unsigned int minor = 0;
  if (absl::Status s = Check(api_.nvmlDeviceGetMinorNumber(device, &minor), "nvmlDeviceGetMinorNumber" + where);
      !s.ok()) {
    return s;
  }
  gpu.device_nodes.push_back(CharDeviceNode(absl::StrCat("/dev/nvidia", minor), kNvidiaMajor, minor));
  gpu.device_nodes.push_back(CharDeviceNode("/dev/nvidiactl", kNvidiaMajor, kNvidiaCtlMinor));
  return gpu;
}

absl::Status NvmlGpus::RegisterForEvents() {
  absl::StatusOr<std::vector<nvmlDevice_t>> devices = Devices();
  if (!devices.ok()) return devices.status();
  nvmlEventSet_t set = nullptr;
  if (absl::Status s = Check(api_.nvmlEventSetCreate(&set), "nvmlEventSetCreate"); !s.ok()) return s;
  for (size_t i = 0; i < devices->size(); ++i) {
    nvmlReturn_t result = api_.nvmlDeviceRegisterEvents((*devices)[i], nvmlEventTypeXidCriticalError, set);
    // Failing the whole source for one GPU without XID events would leave
    // every other GPU unwatched.
    if (result != NVML_SUCCESS && result != NVML_ERROR_NOT_SUPPORTED) {
      api_.nvmlEventSetFree(set);
      return Check(result, absl::StrCat("nvmlDeviceRegisterEvents for GPU ", i));
    }
  }
  event_set_ = set;
  watched_ = *std::move(devices);
  return absl::OkStatus();
}

void NvmlGpus::AddEvents(const nvmlEventData_t& data, std::vector<HealthEvent>& events) const {
  if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) return;
  nvml_internal::XidSeverity severity = nvml_internal::ClassifyXid(data.eventData);
  if (severity == nvml_internal::XidSeverity::kIgnored) return;
  HealthEvent event;
  event.healthy = false;
  event.fatal = severity == nvml_internal::XidSeverity::kFatal;
  event.reason = absl::StrCat("XID ", data.eventData);
  auto it = std::find(watched_.begin(), watched_.end(), data.device);
  if (it != watched_.end()) {
    event.index = static_cast<int>(it - watched_.begin());
    events.push_back(std::move(event));
    return;
  }
  // NVML could not attribute the XID to a GPU: like NVIDIA's device plugin,
  // treat it as hitting every GPU.
  for (size_t i = 0; i < watched_.size(); ++i) {
    event.index = static_cast<int>(i);
    events.push_back(event);
  }
}

// nvmlDeviceGetAttributes_v2 answers for MIG devices; a whole GPU answers
// NOT_SUPPORTED (an H200 on driver 580 does), so its count comes from its
// CUDA cores and the cores per multiprocessor of its architecture.
absl::StatusOr<std::optional<int64_t>> NvmlGpus::Multiprocessors(nvmlDevice_t device, const std::string& where) const {
  if (api_.nvmlDeviceGetAttributes_v2 != nullptr) {
    nvmlDeviceAttributes_t attributes = {};
    nvmlReturn_t result = api_.nvmlDeviceGetAttributes_v2(device, &attributes);
    if (result == NVML_SUCCESS && attributes.multiprocessorCount > 0) return attributes.multiprocessorCount;
    if (result != NVML_SUCCESS && result != NVML_ERROR_NOT_SUPPORTED) {
      return Check(result, "nvmlDeviceGetAttributes_v2" + where);
    }
  }
  if (api_.nvmlDeviceGetNumGpuCores == nullptr || api_.nvmlDeviceGetCudaComputeCapability == nullptr) {
    return std::nullopt;
  }
  unsigned int cores = 0;
  nvmlReturn_t result = api_.nvmlDeviceGetNumGpuCores(device, &cores);
  if (result == NVML_ERROR_NOT_SUPPORTED) return std::nullopt;
  if (result != NVML_SUCCESS) return Check(result, "nvmlDeviceGetNumGpuCores" + where);
  int major = 0, minor = 0;
  result = api_.nvmlDeviceGetCudaComputeCapability(device, &major, &minor);
  if (result == NVML_ERROR_NOT_SUPPORTED) return std::nullopt;
  if (result != NVML_SUCCESS) return Check(result, "nvmlDeviceGetCudaComputeCapability" + where);
  std::optional<int> per_multiprocessor = nvml_internal::CoresPerMultiprocessor(major, minor);
  if (!per_multiprocessor.has_value() || cores == 0 || cores % *per_multiprocessor != 0) return std::nullopt;
  return static_cast<int64_t>(cores / *per_multiprocessor);
}

absl::StatusOr<std::vector<HealthEvent>> NvmlGpus::WaitForHealthEvents(absl::Duration timeout) {
  if (event_set_ == nullptr) {
    if (absl::Status s = RegisterForEvents(); !s.ok()) return s;
  }
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<HealthEvent> events;
  // Waits until the first event that matters, then takes whatever else is
  // already queued without waiting.
  while (true) {
    unsigned int wait_ms = 0;
    if (events.empty()) {
      int64_t remaining = absl::ToInt64Milliseconds(std::max(deadline - absl::Now(), absl::ZeroDuration()));
      wait_ms = static_cast<unsigned int>(std::min<int64_t>(remaining, std::numeric_limits<unsigned int>::max()));
    }
    nvmlEventData_t data = {};
    nvmlReturn_t result = api_.nvmlEventSetWait_v2(event_set_, &data, wait_ms);
    if (result == NVML_ERROR_TIMEOUT) return events;
    if (result != NVML_SUCCESS) {
      if (!events.empty()) return events;  // the error comes back on the next call
      return Check(result, "nvmlEventSetWait_v2");
    }
    AddEvents(data, events);
    if (events.empty() && absl::Now() >= deadline) return events;
  }
}

// This Abseil's string_view may not be std::string_view.
absl::string_view Absl(std::string_view text) { return absl::string_view(text.data(), text.size()); }

bool ParseUnsigned(absl::string_view text, int base, uint64_t& value) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceSource>> OpenNvml(const std::string& library, const std::string& sysfs_root) {
  dlerror();
  LibraryHandle handle(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::FailedPreconditionError(absl::StrCat("NVML: cannot load ", library, ": ",
                                                      error ? error : "unknown error",
                                                      "; is the NVIDIA driver installed on this node?"));
  }
  absl::StatusOr<NvmlApi> api = ResolveApi(handle.get(), library);
  if (!api.ok()) return api.status();
  if (absl::Status status = NvmlStatus(*api, api->nvmlInit_v2(), "nvmlInit_v2"); !status.ok()) return status;
  return std::make_unique<NvmlGpus>(std::move(handle), *api, sysfs_root);
}

namespace nvml_internal {

absl::StatusOr<std::string> NormalizeDriverVersion(std::string_view nvml_version_std) {
  const absl::string_view nvml_version = Absl(nvml_version_std);
  std::vector<absl::string_view> parts = absl::StrSplit(absl::StripAsciiWhitespace(nvml_version), '.');
  std::vector<uint64_t> numbers;
  for (absl::string_view part : parts) {
    uint64_t number = 0;
    if (parts.size() > 3 || !ParseUnsigned(part, 10, number)) {
      return absl::InvalidArgumentError(
          absl::StrCat("NVML: driver version \"", nvml_version, "\" is not one to three numbers separated by dots"));
    }
    numbers.push_back(number);
  }
  numbers.resize(3, 0);
  return absl::StrJoin(numbers, ".");
}

absl::StatusOr<std::string> NormalizePciBusId(std::string_view nvml_bus_id_std) {
  const absl::string_view nvml_bus_id = Absl(nvml_bus_id_std);
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("NVML: PCI bus id \"", nvml_bus_id, "\" is not <domain>:<bus>:<device>.<function>"));
  };
  std::vector<absl::string_view> fields = absl::StrSplit(nvml_bus_id, ':');
  if (fields.size() != 3) return invalid();
  std::vector<absl::string_view> device_function = absl::StrSplit(fields[2], '.');
  if (device_function.size() != 2) return invalid();
  uint64_t domain = 0, bus = 0, device = 0, function = 0;
  if (!ParseUnsigned(fields[0], 16, domain) || !ParseUnsigned(fields[1], 16, bus) ||
      !ParseUnsigned(device_function[0], 16, device) || !ParseUnsigned(device_function[1], 16, function) ||
      domain > 0xffffffff || bus > 0xff || device > 0x1f || function > 0x7) {
    return invalid();
  }
  return absl::StrFormat("%04x:%02x:%02x.%x", domain, bus, device, function);
}

std::string PcieRootFromSysfs(const std::string& sysfs_root, const std::string& bus_id) {
  std::error_code error;
  std::filesystem::path target =
      std::filesystem::read_symlink(std::filesystem::path(sysfs_root) / "bus/pci/devices" / bus_id, error);
  if (error) return "";
  for (const std::filesystem::path& component : target) {
    std::string name = component.string();
    if (!absl::StartsWith(name, "pci")) continue;
    std::vector<absl::string_view> fields = absl::StrSplit(absl::string_view(name).substr(3), ':');
    uint64_t domain = 0, bus = 0;
    if (fields.size() == 2 && ParseUnsigned(fields[0], 16, domain) && ParseUnsigned(fields[1], 16, bus)) {
      return name;
    }
  }
  return "";
}

std::optional<int> NumaNodeFromSysfs(const std::string& sysfs_root, const std::string& bus_id) {
  std::ifstream file(std::filesystem::path(sysfs_root) / "bus/pci/devices" / bus_id / "numa_node");
  std::string text;
  if (!std::getline(file, text)) return std::nullopt;
  int node = -1;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &node) || node < 0 || node >= 1024) return std::nullopt;
  return node;
}

std::string ModelFromProductName(std::string_view product_name) {
  absl::string_view name = absl::StripAsciiWhitespace(Absl(product_name));
  absl::ConsumePrefix(&name, "NVIDIA ");
  // A memory size is digits followed by "GB" (or "MB"), preceded by a space
  // or dash: "-80GB", " 80GB".
  for (size_t i = 1; i < name.size(); ++i) {
    if (name[i - 1] != ' ' && name[i - 1] != '-') continue;
    size_t end = i;
    while (end < name.size() && absl::ascii_isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (end == i) continue;
    absl::string_view unit = name.substr(end, 2);
    if (unit != "GB" && unit != "MB") continue;
    if (end + 2 == name.size() || name[end + 2] == ' ' || name[end + 2] == '-') {
      return std::string(absl::StripTrailingAsciiWhitespace(name.substr(0, i - 1)));
    }
  }
  return std::string(name);
}

std::optional<int> CoresPerMultiprocessor(int major, int minor) {
  // As the CUDA samples' _ConvertSMVer2Cores lists them: Kepler, Maxwell,
  // Pascal, Volta, Turing, Ampere, Ada, Hopper.
  struct Architecture {
    int major, minor, cores;
  };
  static constexpr Architecture kArchitectures[] = {
      {3, 0, 192}, {3, 2, 192}, {3, 5, 192}, {3, 7, 192}, {5, 0, 128}, {5, 2, 128},
      {5, 3, 128}, {6, 0, 64},  {6, 1, 128}, {6, 2, 128}, {7, 0, 64},  {7, 2, 64},
      {7, 5, 64},  {8, 0, 64},  {8, 6, 128}, {8, 7, 128}, {8, 9, 128}, {9, 0, 128},
  };
  for (const Architecture& a : kArchitectures) {
    if (a.major == major && a.minor == minor) return a.cores;
  }
  return std::nullopt;
}

XidSeverity ClassifyXid(uint64_t xid) {
  switch (xid) {
    // Application errors: a faulting kernel, an illegal address, a reset
    // channel, a preempted or stopped context. The GPU itself is fine.
    case 13:
    case 31:
    case 43:
    case 45:
    case 68:
    case 109:
      return XidSeverity::kIgnored;
    // ECC (48, 63, 64, 92, 94, 95), NVLink (74), fallen off the bus (79),
    // GSP firmware (119, 120): the GPU needs a reset or a repair.
    case 48:
    case 63:
    case 64:
    case 74:
    case 79:
    case 92:
    case 94:
    case 95:
    case 119:
    case 120:
      return XidSeverity::kFatal;
    default:
      return XidSeverity::kUnhealthy;
  }
}

}  // namespace nvml_internal
}  // namespace gpu
