// A stand-in for NVIDIA's libnvidia-ml.so.1 with the functions the GPU
// example's NVML source (examples/gpu/nvml) calls, for tests on machines
// without NVIDIA GPUs.
//
// nvmlInit_v2 reads the GPUs from the JSON file named by $FAKE_NVML_CONFIG
// (unset: no GPUs):
//   {"driverVersion": "535.104.05",
//    "initError": 9,                  // optional: nvmlInit_v2 returns it
//    "devices": [{"uuid": "GPU-...", "name": "NVIDIA A100-SXM4-80GB",
//                 "memory": 85899345920, "pciBusId": "00000000:3B:00.0",
//                 "minor": 0,
//                 "migMode": 0,          // optional: absent = NOT_SUPPORTED
//                 "multiprocessors": 108, // optional: absent = NOT_SUPPORTED, as
//                                         // real GPUs (not MIG devices) answer
//                 "cores": 16896,         // optional: absent = NOT_SUPPORTED
//                 "computeCapability": [9, 0]  // optional: absent = NOT_SUPPORTED
//                }]}
// XID events are lines "<device index> <xid>" appended to the file named by
// $FAKE_NVML_EVENTS. Every event set reads that file from its start, so a
// test may write events before the code under test registers for them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvml/nvml_abi.h"

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

// The handles of nvml_abi.h, with the fake's contents.
struct gpu::nvml_abi::nvmlDevice_st {
  unsigned int index = 0;
  std::string uuid;
  std::string name;
  unsigned long long memory = 0;
  std::string pci_bus_id;
  unsigned int minor = 0;
  int mig_mode = -1;                    // -1: not supported
  int multiprocessors = -1;             // -1: not supported
  int cores = -1;                       // -1: not supported
  std::vector<int> compute_capability;  // empty: not supported
};

struct gpu::nvml_abi::nvmlEventSet_st {
  std::set<nvmlDevice_t> xid_devices;
  std::streamoff offset = 0;  // in $FAKE_NVML_EVENTS
};

using gpu::nvml_abi::nvmlDevice_st;
using gpu::nvml_abi::nvmlDevice_t;
using gpu::nvml_abi::nvmlDeviceAttributes_t;
using gpu::nvml_abi::nvmlEventData_t;
using gpu::nvml_abi::nvmlEventSet_st;
using gpu::nvml_abi::nvmlEventSet_t;
using gpu::nvml_abi::nvmlEventTypeXidCriticalError;
using gpu::nvml_abi::nvmlMemory_t;
using gpu::nvml_abi::nvmlPciInfo_t;
using gpu::nvml_abi::nvmlReturn_t;

using gpu::nvml_abi::NVML_ERROR_INSUFFICIENT_SIZE;
using gpu::nvml_abi::NVML_ERROR_INVALID_ARGUMENT;
using gpu::nvml_abi::NVML_ERROR_NOT_SUPPORTED;
using gpu::nvml_abi::NVML_ERROR_TIMEOUT;
using gpu::nvml_abi::NVML_ERROR_UNINITIALIZED;
using gpu::nvml_abi::NVML_ERROR_UNKNOWN;
using gpu::nvml_abi::NVML_SUCCESS;

namespace {

struct State {
  std::mutex mutex;
  int init_count = 0;
  std::string driver_version;
  std::vector<std::unique_ptr<nvmlDevice_st>> devices;
};

State& state() {
  static State s;
  return s;
}

nvmlReturn_t LoadConfig(State& s) {
  s.devices.clear();
  s.driver_version = "550.54.15";
  const char* path = std::getenv("FAKE_NVML_CONFIG");
  if (path == nullptr || *path == '\0') return NVML_SUCCESS;
  try {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "fake NVML: cannot read " << path << "\n";
      return NVML_ERROR_UNKNOWN;
    }
    nlohmann::json config = nlohmann::json::parse(in);
    if (config.contains("initError")) return config["initError"].get<int>();
    s.driver_version = config.value("driverVersion", s.driver_version);
    for (const nlohmann::json& d : config.value("devices", nlohmann::json::array())) {
      auto device = std::make_unique<nvmlDevice_st>();
      device->index = static_cast<unsigned int>(s.devices.size());
      device->uuid = d.at("uuid").get<std::string>();
      device->name = d.at("name").get<std::string>();
      device->memory = d.at("memory").get<unsigned long long>();
      device->pci_bus_id = d.at("pciBusId").get<std::string>();
      device->minor = d.at("minor").get<unsigned int>();
      device->mig_mode = d.value("migMode", -1);
      device->multiprocessors = d.value("multiprocessors", -1);
      device->cores = d.value("cores", -1);
      device->compute_capability = d.value("computeCapability", std::vector<int>{});
      s.devices.push_back(std::move(device));
    }
  } catch (const std::exception& e) {
    std::cerr << "fake NVML: bad config " << path << ": " << e.what() << "\n";
    s.devices.clear();
    return NVML_ERROR_UNKNOWN;
  }
  return NVML_SUCCESS;
}

bool Known(State& s, nvmlDevice_t device) {
  for (const auto& d : s.devices) {
    if (d.get() == device) return true;
  }
  return false;
}

nvmlReturn_t CopyString(const std::string& value, char* buffer, unsigned int length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

// Checks that NVML is initialised and `device` is one of its devices.
#define FAKE_NVML_DEVICE_CALL(device)                     \
  State& s = state();                                     \
  std::lock_guard<std::mutex> lock(s.mutex);              \
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED; \
  if (!Known(s, device)) return NVML_ERROR_INVALID_ARGUMENT

// The next event for `set` in $FAKE_NVML_EVENTS, if one was appended.
bool NextEvent(State& s, nvmlEventSet_t set, nvmlEventData_t* data) {
  const char* path = std::getenv("FAKE_NVML_EVENTS");
  if (path == nullptr || *path == '\0') return false;
  std::ifstream in(path);
  if (!in) return false;
  in.seekg(set->offset);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) return false;  // no newline yet: the line may be half written
    set->offset = in.tellg();
    std::istringstream fields(line);
    unsigned int index = 0;
    unsigned long long xid = 0;
    if (!(fields >> index >> xid)) {
      std::cerr << "fake NVML: ignoring event line \"" << line << "\"\n";
      continue;
    }
    if (index >= s.devices.size() || set->xid_devices.count(s.devices[index].get()) == 0) continue;
    *data = {};
    data->device = s.devices[index].get();
    data->eventType = nvmlEventTypeXidCriticalError;
    data->eventData = xid;
    data->gpuInstanceId = 0xFFFFFFFF;
    data->computeInstanceId = 0xFFFFFFFF;
    return true;
  }
  return false;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) {
    if (nvmlReturn_t result = LoadConfig(s); result != NVML_SUCCESS) return result;
  }
  ++s.init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --s.init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 5:
      return "Already Initialized";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 8:
      return "Insufficient External Power";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 11:
      return "Interrupt request issue";
    case 12:
      return "NVML Shared Library Not Found";
    case 13:
      return "Function Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires restart";
    case 17:
      return "GPU access blocked by the operating system";
    case 18:
      return "RM has detected an NVML/RM version mismatch.";
    case 999:
      return "Unknown Error";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  return CopyString(s.driver_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned int>(s.devices.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= s.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = s.devices[index].get();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  FAKE_NVML_DEVICE_CALL(device);
  return CopyString(device->uuid, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  FAKE_NVML_DEVICE_CALL(device);
  return CopyString(device->name, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_NVML_DEVICE_CALL(device);
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = device->memory;
  memory->used = device->memory / 100;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_NVML_DEVICE_CALL(device);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *pci = {};
  if (CopyString(device->pci_bus_id, pci->busId, sizeof pci->busId) != NVML_SUCCESS) return NVML_ERROR_UNKNOWN;
  unsigned int function = 0;
  std::sscanf(device->pci_bus_id.c_str(), "%x:%x:%x.%x", &pci->domain, &pci->bus, &pci->device, &function);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.%x", pci->domain, pci->bus, pci->device,
                function);
  pci->pciDeviceId = 0x20b210de;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  FAKE_NVML_DEVICE_CALL(device);
  if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->multiprocessors < 0) return NVML_ERROR_NOT_SUPPORTED;
  *attributes = {};
  attributes->multiprocessorCount = static_cast<unsigned int>(device->multiprocessors);
  attributes->memorySizeMB = device->memory >> 20;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* cores) {
  FAKE_NVML_DEVICE_CALL(device);
  if (cores == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->cores < 0) return NVML_ERROR_NOT_SUPPORTED;
  *cores = static_cast<unsigned int>(device->cores);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  FAKE_NVML_DEVICE_CALL(device);
  if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->compute_capability.size() != 2) return NVML_ERROR_NOT_SUPPORTED;
  *major = device->compute_capability[0];
  *minor = device->compute_capability[1];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending) {
  FAKE_NVML_DEVICE_CALL(device);
  if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->mig_mode < 0) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = static_cast<unsigned int>(device->mig_mode);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  FAKE_NVML_DEVICE_CALL(device);
  if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *minor = device->minor;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = new nvmlEventSet_st;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                                       nvmlEventSet_t set) {
  FAKE_NVML_DEVICE_CALL(device);
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((types & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
  set->xid_devices.insert(device);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  State& s = state();
  while (true) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
      if (NextEvent(s, set, data)) return NVML_SUCCESS;
    }
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete set;
  return NVML_SUCCESS;
}
