// The GPU example's NVML device source (examples/gpu/nvml) against the fake
// libnvidia-ml.so.1 (tests/support/fakenvml), and its pure helpers.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/time/time.h"
#include "nvml/nvml_gpus.h"
#include "support/temp_dir.h"

namespace gpu {
namespace {

using dra::testing::TempDir;
using dra::testing::WriteFile;

constexpr char kTwoGpus[] = R"({
  "driverVersion": "535.104.05",
  "devices": [
    {"uuid": "GPU-8d8b3d1f-0000-1111-2222-333344445555", "name": "NVIDIA A100-SXM4-80GB",
     "memory": 85899345920, "pciBusId": "00000000:3B:00.0", "minor": 0, "migMode": 0,
     "multiprocessors": 108},
    {"uuid": "GPU-1a2b3c4d-6666-7777-8888-9999aaaabbbb", "name": "NVIDIA H100 80GB HBM3",
     "memory": 85520809984, "pciBusId": "00000000:86:00.0", "minor": 3, "migMode": 1,
     "cores": 16896, "computeCapability": [9, 0]}
  ]})";

// A fake NVML with `config` and an events file, and a sysfs tree in which
// only 0000:3b:00.0 sits under root complex pci0000:3a, on NUMA node 0.
struct FakeNode {
  explicit FakeNode(const std::string& config) {
    WriteFile(dir.Join("nvml.json"), config);
    WriteFile(events(), "");
    setenv("FAKE_NVML_CONFIG", dir.Join("nvml.json").c_str(), 1);
    setenv("FAKE_NVML_EVENTS", events().c_str(), 1);
    std::filesystem::create_directories(dir.Join("sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"));
    std::filesystem::create_directories(dir.Join("sys/bus/pci/devices"));
    std::filesystem::create_symlink("../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0",
                                    dir.Join("sys/bus/pci/devices/0000:3b:00.0"));
    WriteFile(dir.Join("sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/numa_node"), "0\n");
  }
  ~FakeNode() {
    unsetenv("FAKE_NVML_CONFIG");
    unsetenv("FAKE_NVML_EVENTS");
  }

  std::string events() const { return dir.Join("events"); }
  void Xid(int index, int xid) const {
    std::ofstream out(events(), std::ios::app);
    out << index << " " << xid << "\n";
  }
  std::unique_ptr<DeviceSource> Open() const {
    absl::StatusOr<std::unique_ptr<DeviceSource>> source = OpenNvml(DRA_FAKENVML_PATH, dir.Join("sys"));
    INFO(source.status());
    REQUIRE(source.ok());
    return *std::move(source);
  }

  TempDir dir;
};

dra::cdi::DeviceNode CharNode(std::string path, int64_t major, int64_t minor) {
  dra::cdi::DeviceNode node;
  node.path = std::move(path);
  node.type = "c";
  node.major = major;
  node.minor = minor;
  return node;
}

TEST_CASE("NVML discovery reports every GPU field", "[gpu_nvml]") {
  FakeNode node(kTwoGpus);
  std::unique_ptr<DeviceSource> source = node.Open();
  absl::StatusOr<std::vector<GpuInfo>> gpus = source->Discover();
  INFO(gpus.status());
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 2);

  GpuInfo a100;
  a100.index = 0;
  a100.uuid = "GPU-8d8b3d1f-0000-1111-2222-333344445555";
  a100.model = "A100-SXM4";
  a100.product_name = "NVIDIA A100-SXM4-80GB";
  a100.driver_version = "535.104.5";
  a100.pci_bus_id = "0000:3b:00.0";
  a100.pcie_root = "pci0000:3a";
  a100.numa_node = 0;
  a100.memory_bytes = 85899345920;
  a100.compute_units = 108;
  a100.mig_enabled = false;
  a100.device_nodes = {CharNode("/dev/nvidia0", 195, 0), CharNode("/dev/nvidiactl", 195, 255)};
  CHECK((*gpus)[0] == a100);

  GpuInfo h100;
  h100.index = 1;
  h100.uuid = "GPU-1a2b3c4d-6666-7777-8888-9999aaaabbbb";
  h100.model = "H100";
  h100.product_name = "NVIDIA H100 80GB HBM3";
  h100.driver_version = "535.104.5";
  h100.pci_bus_id = "0000:86:00.0";
  h100.pcie_root = "";  // no sysfs entry
  h100.numa_node = std::nullopt;
  h100.memory_bytes = 85520809984;
  h100.compute_units = 132;  // nvmlDeviceGetAttributes_v2: NOT_SUPPORTED; 16896 cores / 128 per SM
  h100.mig_enabled = true;
  h100.device_nodes = {CharNode("/dev/nvidia3", 195, 3), CharNode("/dev/nvidiactl", 195, 255)};
  CHECK((*gpus)[1] == h100);

  // A second discovery sees the same.
  absl::StatusOr<std::vector<GpuInfo>> again = source->Discover();
  REQUIRE(again.ok());
  CHECK(*again == *gpus);
}

TEST_CASE("a GPU whose multiprocessors NVML cannot count has none", "[gpu_nvml]") {
  // No attributes, and cores of an architecture the table does not know.
  FakeNode node(R"({"devices": [
    {"uuid": "GPU-1", "name": "NVIDIA H200", "memory": 1, "pciBusId": "00000000:01:00.0", "minor": 0,
     "cores": 16896, "computeCapability": [99, 0]},
    {"uuid": "GPU-2", "name": "NVIDIA H200", "memory": 1, "pciBusId": "00000000:02:00.0", "minor": 1}]})");
  absl::StatusOr<std::vector<GpuInfo>> gpus = node.Open()->Discover();
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 2);
  CHECK_FALSE((*gpus)[0].compute_units.has_value());
  CHECK_FALSE((*gpus)[1].compute_units.has_value());
}

TEST_CASE("CUDA cores per multiprocessor by compute capability", "[gpu_nvml]") {
  CHECK(nvml_internal::CoresPerMultiprocessor(9, 0) == 128);  // H100, H200
  CHECK(nvml_internal::CoresPerMultiprocessor(8, 0) == 64);   // A100: 6912 cores, 108 SMs
  CHECK(nvml_internal::CoresPerMultiprocessor(8, 6) == 128);
  CHECK(nvml_internal::CoresPerMultiprocessor(7, 0) == 64);
  CHECK_FALSE(nvml_internal::CoresPerMultiprocessor(99, 0).has_value());
}

TEST_CASE("NVML without a GPU discovers nothing", "[gpu_nvml]") {
  FakeNode node(R"({"driverVersion": "550.54", "devices": []})");
  absl::StatusOr<std::vector<GpuInfo>> gpus = node.Open()->Discover();
  REQUIRE(gpus.ok());
  CHECK(gpus->empty());
}

TEST_CASE("a missing NVML library is a clear error", "[gpu_nvml]") {
  TempDir dir;
  const std::string path = dir.Join("libnvidia-ml.so.1");
  absl::StatusOr<std::unique_ptr<DeviceSource>> source = OpenNvml(path);
  REQUIRE(source.status().code() == absl::StatusCode::kFailedPrecondition);
  const std::string message(source.status().message());
  CHECK_THAT(message, Catch::StartsWith("NVML: cannot load " + path + ": "));
  CHECK_THAT(message, Catch::Contains(path + ": cannot open shared object file"));
  CHECK_THAT(message, Catch::EndsWith("; is the NVIDIA driver installed on this node?"));
}

TEST_CASE("a library without the NVML functions names the missing one", "[gpu_nvml]") {
  absl::StatusOr<std::unique_ptr<DeviceSource>> source = OpenNvml("libm.so.6");
  REQUIRE(source.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(source.status().message()), Catch::StartsWith("NVML: libm.so.6 has no symbol nvmlInit_v2: "));
}

TEST_CASE("nvmlInit failing names the call and NVML's error", "[gpu_nvml]") {
  FakeNode node(R"({"initError": 9})");
  absl::StatusOr<std::unique_ptr<DeviceSource>> source = OpenNvml(DRA_FAKENVML_PATH, node.dir.Join("sys"));
  REQUIRE_FALSE(source.ok());
  CHECK(source.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(source.status().message() == "NVML: nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)");
}

TEST_CASE("critical XIDs become health events by severity", "[gpu_nvml]") {
  FakeNode node(kTwoGpus);
  std::unique_ptr<DeviceSource> source = node.Open();
  const absl::Duration timeout = absl::Milliseconds(50);

  SECTION("nothing happens: an empty list at the timeout") {
    absl::StatusOr<std::vector<HealthEvent>> events = source->WaitForHealthEvents(timeout);
    REQUIRE(events.ok());
    CHECK(events->empty());
  }

  SECTION("application XIDs are ignored, the others classified") {
    node.Xid(0, 13);
    absl::StatusOr<std::vector<HealthEvent>> events = source->WaitForHealthEvents(timeout);
    REQUIRE(events.ok());
    CHECK(events->empty());

    node.Xid(1, 79);
    events = source->WaitForHealthEvents(timeout);
    REQUIRE(events.ok());
    CHECK(*events == std::vector<HealthEvent>{{.index = 1, .healthy = false, .fatal = true, .reason = "XID 79"}});

    node.Xid(0, 31);
    node.Xid(0, 62);
    events = source->WaitForHealthEvents(timeout);
    REQUIRE(events.ok());
    CHECK(*events == std::vector<HealthEvent>{{.index = 0, .healthy = false, .fatal = false, .reason = "XID 62"}});

    events = source->WaitForHealthEvents(timeout);
    REQUIRE(events.ok());
    CHECK(events->empty());
  }

  SECTION("events already queued come back together") {
    node.Xid(0, 48);
    node.Xid(0, 43);
    node.Xid(1, 94);
    absl::StatusOr<std::vector<HealthEvent>> events = source->WaitForHealthEvents(timeout);
    REQUIRE(events.ok());
    CHECK(*events == std::vector<HealthEvent>{{.index = 0, .healthy = false, .fatal = true, .reason = "XID 48"},
                                              {.index = 1, .healthy = false, .fatal = true, .reason = "XID 94"}});
  }
}

TEST_CASE("NVML driver versions as semver", "[gpu_nvml]") {
  using nvml_internal::NormalizeDriverVersion;
  CHECK(NormalizeDriverVersion("535.104.05").value() == "535.104.5");
  CHECK(NormalizeDriverVersion("550.54").value() == "550.54.0");
  CHECK(NormalizeDriverVersion("550.54.15").value() == "550.54.15");
  CHECK(NormalizeDriverVersion("470").value() == "470.0.0");
  CHECK(NormalizeDriverVersion("000.00.000").value() == "0.0.0");
  CHECK(NormalizeDriverVersion(" 535.104.05\n").value() == "535.104.5");
  for (const char* bad : {"", "535.", ".1", "535.104.05.1", "535.x.1", "-1.2.3", "r535"}) {
    INFO(bad);
    CHECK(NormalizeDriverVersion(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("NVML PCI bus ids as Kubernetes wants them", "[gpu_nvml]") {
  using nvml_internal::NormalizePciBusId;
  CHECK(NormalizePciBusId("00000000:3B:00.0").value() == "0000:3b:00.0");
  CHECK(NormalizePciBusId("0000:3b:00.0").value() == "0000:3b:00.0");
  CHECK(NormalizePciBusId("00000001:AF:1F.7").value() == "0001:af:1f.7");
  CHECK(NormalizePciBusId("00010000:e1:00.0").value() == "10000:e1:00.0");  // VMD domain, as sysfs names it
  for (const char* bad : {"", "3b:00.0", "00000000:3B:00", "00000000:3B:00.8", "00000000:3B:20.0", "00000000:13B:00.0",
                          "0000:3g:00.0", "0000:3b:00.0:1"}) {
    INFO(bad);
    CHECK(NormalizePciBusId(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("PCIe root from the sysfs device link", "[gpu_nvml]") {
  using nvml_internal::PcieRootFromSysfs;
  TempDir dir;
  std::filesystem::create_directories(dir.Join("bus/pci/devices"));
  // Behind a bridge of root complex pci0000:3a.
  std::filesystem::create_symlink("../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0",
                                  dir.Join("bus/pci/devices/0000:3b:00.0"));
  // Behind a VMD controller: the first root complex is the one the CPU sees.
  std::filesystem::create_symlink("../../../devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.0",
                                  dir.Join("bus/pci/devices/10000:e1:00.0"));
  WriteFile(dir.Join("bus/pci/devices/0000:01:00.0"), "");  // not a link
  CHECK(PcieRootFromSysfs(dir.path(), "0000:3b:00.0") == "pci0000:3a");
  CHECK(PcieRootFromSysfs(dir.path(), "10000:e1:00.0") == "pci0000:00");
  CHECK(PcieRootFromSysfs(dir.path(), "0000:01:00.0") == "");
  CHECK(PcieRootFromSysfs(dir.path(), "0000:02:00.0") == "");
  CHECK(PcieRootFromSysfs(dir.Join("missing"), "0000:3b:00.0") == "");
}

TEST_CASE("NUMA node from sysfs, none for -1 or a missing file", "[gpu_nvml]") {
  using nvml_internal::NumaNodeFromSysfs;
  TempDir dir;
  for (const char* device : {"0000:3b:00.0", "0000:5e:00.0", "0000:86:00.0", "0000:af:00.0"}) {
    std::filesystem::create_directories(dir.Join(std::string("bus/pci/devices/") + device));
  }
  WriteFile(dir.Join("bus/pci/devices/0000:3b:00.0/numa_node"), "1\n");
  WriteFile(dir.Join("bus/pci/devices/0000:5e:00.0/numa_node"), "-1\n");
  WriteFile(dir.Join("bus/pci/devices/0000:86:00.0/numa_node"), "node0\n");
  CHECK(NumaNodeFromSysfs(dir.path(), "0000:3b:00.0") == 1);
  CHECK_FALSE(NumaNodeFromSysfs(dir.path(), "0000:5e:00.0").has_value());
  CHECK_FALSE(NumaNodeFromSysfs(dir.path(), "0000:86:00.0").has_value());
  CHECK_FALSE(NumaNodeFromSysfs(dir.path(), "0000:af:00.0").has_value());  // no file
  CHECK_FALSE(NumaNodeFromSysfs(dir.path(), "0000:01:00.0").has_value());  // no device
}

TEST_CASE("short model names from NVML product names", "[gpu_nvml]") {
  using nvml_internal::ModelFromProductName;
  CHECK(ModelFromProductName("NVIDIA A100-SXM4-80GB") == "A100-SXM4");
  CHECK(ModelFromProductName("NVIDIA A100-PCIE-40GB") == "A100-PCIE");
  CHECK(ModelFromProductName("NVIDIA H100 80GB HBM3") == "H100");
  CHECK(ModelFromProductName("NVIDIA A100 80GB PCIe") == "A100");
  CHECK(ModelFromProductName("Tesla V100-SXM2-16GB") == "Tesla V100-SXM2");
  CHECK(ModelFromProductName("NVIDIA GeForce RTX 4090") == "GeForce RTX 4090");
  CHECK(ModelFromProductName("NVIDIA L40S") == "L40S");
  CHECK(ModelFromProductName("NVIDIA H100 NVL") == "H100 NVL");
  CHECK(ModelFromProductName("NVIDIA RTX 6000 Ada Generation") == "RTX 6000 Ada Generation");
}

TEST_CASE("XID severities", "[gpu_nvml]") {
  using nvml_internal::ClassifyXid;
  using nvml_internal::XidSeverity;
  for (uint64_t xid : {13, 31, 43, 45, 68, 109}) {
    INFO(xid);
    CHECK(ClassifyXid(xid) == XidSeverity::kIgnored);
  }
  for (uint64_t xid : {48, 63, 64, 74, 79, 92, 94, 95, 119, 120}) {
    INFO(xid);
    CHECK(ClassifyXid(xid) == XidSeverity::kFatal);
  }
  for (uint64_t xid : {1, 8, 32, 61, 62, 69, 999}) {
    INFO(xid);
    CHECK(ClassifyXid(xid) == XidSeverity::kUnhealthy);
  }
}

}  // namespace
}  // namespace gpu
