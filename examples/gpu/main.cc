// gpu-driver: the example GPU DRA driver's node plugin, on the public dra-cpp
// API only. It finds GPUs (mock ones, or NVIDIA GPUs through NVML), publishes
// them as the node's ResourceSlices (whole, partitioned or shareable), serves
// the kubelet, reports health and taints unhealthy GPUs, and optionally
// publishes and attaches fabric-attached GPUs that bind through binding
// conditions. With --device-profile=net it offers NICs shared by bandwidth
// instead, as dra-example-driver's net profile, and with --device-profile=cpu
// made-up NUMA nodes whose CPUs claims share, as its cpu profile (the CPU
// example's driver on a mock topology). `gpu-driver --help` lists the flags;
// examples/gpu/README.md explains them.
#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "admission_webhook.h"
#include "binding_controller.h"
#include "common/plugin_flags.h"
#include "cpu_driver.h"
#include "cpu_resources.h"
#include "device_source.h"
#include "dra/flags.h"
#include "dra/k8s/quantity.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "dra/resourceslice/publisher.h"
#include "fabric_attach.h"
#include "gpu_binding.h"
#include "gpu_driver.h"
#include "gpu_resources.h"
#include "health_pins.h"
#include "mock_gpus.h"
#include "nic_driver.h"
#include "nic_resources.h"
#include "nvml/nvml_gpus.h"
#include "reference_takeover.h"
#include "topology.h"

namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
namespace rc = dra::resourceclaim;

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
  std::optional<k8s::Quantity> host_memory_overhead;
  bool device_status = false;
  bool device_metadata = false;
  std::string fabric_pool;
  int fabric_num_devices = 4;
  k8s::NodeSelector fabric_selector;
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

  void Register(dra::FlagSet& flags) {
    flags.Custom("device-profile", "gpu|net|cpu", "\"gpu\"",
                 "what the node offers: GPUs, NICs shared by bandwidth, or NUMA nodes whose CPUs claims share "
                 "(dra-example-driver's profiles)",
                 "DEVICE_PROFILE", [this](const std::string& text) {
                   if (text != "gpu" && text != "net" && text != "cpu") {
                     return absl::InvalidArgumentError("must be gpu, net or cpu");
                   }
                   device_profile = text;
                   return absl::OkStatus();
                 });
    flags.Custom("driver-name", "string", "<device-profile>.example.com", "the DRA driver name", "DRIVER_NAME",
                 [this](const std::string& text) {
                   driver_name = text;
                   return absl::OkStatus();
                 });
    flags.Custom("device-source", "mock|nvml", "\"mock\"", "where GPUs come from", "DEVICE_SOURCE",
                 [this](const std::string& text) {
                   if (text != "mock" && text != "nvml") return absl::InvalidArgumentError("must be mock or nvml");
                   device_source = text;
                   return absl::OkStatus();
                 });
    flags.Int("num-devices", &num_devices, "mock GPUs (or NICs) on this node", "NUM_DEVICES", 0, 128);
    flags.Int("cpu-numa-nodes", &cpu_numa_nodes, "--device-profile=cpu: made-up NUMA nodes on this node",
              "CPU_NUMA_NODES", 1, 64);
    flags.Int("cpus-per-numa-node", &cpus_per_numa_node, "--device-profile=cpu: CPUs of each made-up NUMA node",
              "CPUS_PER_NUMA_NODE", 1, 1024);
    flags.String("nvml-library", &nvml_library, "the NVML library to load with --device-source=nvml", "NVML_LIBRARY");
    flags.String("mock-health-file", &mock_health_file,
                 "mock GPUs: a file whose appended lines \"<index> healthy|unhealthy|fatal\" flip a GPU's health",
                 "MOCK_HEALTH_FILE");
    flags.Int("gpu-partitions", &partitions, "partitions per GPU, drawn from shared counters (0: none)",
              "GPU_PARTITIONS", 0, 16);
    flags.Bool("gpu-allow-multiple-allocations", &allow_multiple_allocations,
               "let several claims share a GPU by memory and compute capacity", "GPU_ALLOW_MULTIPLE_ALLOCATIONS");
    flags.Custom("host-memory-overhead", "quantity", "none",
                 "host memory each pod using a GPU costs (nodeAllocatableResources overhead perPod), e.g. 8Gi",
                 "HOST_MEMORY_OVERHEAD", [this](const std::string& text) {
                   absl::StatusOr<k8s::Quantity> quantity = k8s::Quantity::Parse(text);
                   if (!quantity.ok() || quantity->Sign() <= 0) {
                     return absl::InvalidArgumentError("must be a positive quantity such as 8Gi");
                   }
                   host_memory_overhead = *quantity;
                   return absl::OkStatus();
                 });
    flags.Bool("device-metadata", &device_metadata,
               "give containers a KEP-5304 device metadata file with each GPU's uuid, model and PCI bus ID",
               "DEVICE_METADATA");
    flags.Bool("gpu-device-status", &device_status, "write a Ready condition and data of prepared GPUs into the claim",
               "GPU_DEVICE_STATUS");
    flags.String("fabric-pool", &fabric_pool,
                 "also publish this pool of fabric-attached GPUs for the nodes --fabric-node-selector selects "
                 "(one publisher per pool)",
                 "FABRIC_POOL");
    flags.Int("fabric-num-devices", &fabric_num_devices, "GPUs in the fabric pool", "FABRIC_NUM_DEVICES", 1, 128);
    flags.Custom("fabric-node-selector", "key=value", "\"accelerator-type=high-performance\"",
                 "the node label that selects the nodes the fabric pool reaches", "FABRIC_NODE_SELECTOR",
                 [this](const std::string& text) {
                   std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('=', 1));
                   if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
                     return absl::InvalidArgumentError("must be key=value");
                   }
                   fabric_selector_text = text;
                   return absl::OkStatus();
                 });
    flags.Bool("fabric-controller", &fabric_controller,
               "only publish the --fabric-pool, without serving a kubelet (run it as a Deployment)",
               "FABRIC_CONTROLLER");
    flags.Bool("fabric-attach", &fabric_attach,
               "attach fabric GPUs allocated to this node and set their binding conditions (with "
               "--fabric-controller: to every node, centrally; give it to the controller or to the nodes, not both)",
               "FABRIC_ATTACH");
    flags.Bool("health-service", &health_service,
               "report GPU health to the kubelet (KEP-4680; dra-example-driver's HEALTH_SERVICE); false: the health "
               "service is neither served nor advertised, as a driver that reports none",
               "HEALTH_SERVICE");
    flags.String("pod-name", &pod_name,
                 "this driver's pod (with --pod-namespace): its annotations health.example.com/<device>: "
                 "healthy|unhealthy|unknown pin the health the kubelet is told (needs get, list, watch of pods)",
                 "POD_NAME");
    flags.String("pod-namespace", &pod_namespace, "the namespace of --pod-name", "NAMESPACE");
    flags.Bool("binding-conditions", &binding_conditions,
               "publish the node's GPUs with binding conditions, which this plugin sets once they are ready",
               "BINDING_CONDITIONS");
    flags.Duration("fabric-attach-delay", &fabric_attach_delay, "how long a simulated attach takes",
                   "FABRIC_ATTACH_DELAY");
    flags.Double("fabric-failure-rate", &fabric_failure_rate,
                 "the share of simulated attaches that fail, spread evenly from the first (0.5: every other one)",
                 "FABRIC_FAILURE_RATE", 0, 1);
    flags.Duration("binding-timeout", &binding_timeout, "the scheduler's binding timeout (its bindingTimeout)",
                   "BINDING_TIMEOUT");
  }

  void Finish() {
    if (driver_name.empty()) driver_name = device_profile + ".example.com";
    std::vector<std::string> parts = absl::StrSplit(fabric_selector_text, absl::MaxSplits('=', 1));
    fabric_selector = k8s::NodeSelectorForLabel(parts[0], {parts[1]});
  }
};

// Keeps the node's pool and the kubelet's health view in line with the
// GPUs' health, from the device source's events.
class HealthMonitor {
 public:
  // `other_pools` are published beside the node's pool (the fabric pool).
  HealthMonitor(kp::Helper& helper, gpu::DeviceSource& source, std::vector<gpu::GpuInfo> gpus,
                gpu::PublishOptions options, dra::resourceslice::DriverResources other_pools, dra::Logger logger)
      : helper_(helper),
        source_(source),
        gpus_(std::move(gpus)),
        options_(std::move(options)),
        other_pools_(std::move(other_pools)),
        logger_(std::move(logger)) {}

  absl::Status PublishAll() {
    dra::resourceslice::DriverResources resources = other_pools_;
    resources.pools[options_.node_name] = gpu::NodePool(gpus_, options_);
    PublishHealth(resources.pools[options_.node_name]);
    return helper_.PublishResources(std::move(resources));
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  // Health pins from the driver's pod override the devices' own health on
  // the kubelet's stream; before Start.
  void UsePins(std::unique_ptr<gpu::HealthPinWatch> pins) { pins_ = std::move(pins); }
  // The pins changed: the stream goes out again within one wait.
  void PinsChanged() { pins_changed_ = true; }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    pins_.reset();  // its callback reaches this monitor
  }

 private:
  void PublishHealth(const dra::resourceslice::Pool& node_pool) {
    const std::map<std::string, kp::HealthStatus> pins =
        pins_ != nullptr ? pins_->pins() : std::map<std::string, kp::HealthStatus>{};
    std::vector<kp::DeviceHealth> health;
    for (const dra::resourceslice::Slice& slice : node_pool.slices) {
      for (const k8s::Device& device : slice.devices) {
        kp::DeviceHealth& entry = health.emplace_back();
        entry.pool_name = options_.node_name;
        entry.device_name = device.name;
        entry.health = device.taints.empty() ? kp::HealthStatus::kHealthy : kp::HealthStatus::kUnhealthy;
        if (auto pin = pins.find(device.name); pin != pins.end()) {
          entry.health = pin->second;
          entry.message = absl::StrCat("pinned by the driver pod's annotation ", gpu::kHealthPinPrefix, device.name);
        }
      }
    }
    helper_.PublishHealth(std::move(health));
  }

  void Run() {
    while (!stop_) {
      absl::StatusOr<std::vector<gpu::HealthEvent>> events = source_.WaitForHealthEvents(absl::Milliseconds(500));
      if (!events.ok()) {
        logger_.Error("Reading GPU health failed", {{"err", events.status().ToString()}});
        continue;
      }
      if (events->empty()) {
        if (pins_changed_.exchange(false)) PublishHealth(gpu::NodePool(gpus_, options_));
        continue;
      }
      for (const gpu::HealthEvent& event : *events) {
        logger_.Warning("GPU health changed", {{"gpu", gpu::GpuDeviceName(event.index)},
                                               {"healthy", event.healthy ? "true" : "false"},
                                               {"fatal", event.fatal ? "true" : "false"},
                                               {"reason", event.reason}});
        options_.unhealthy.erase(event.index);
        options_.fatal.erase(event.index);
        if (!event.healthy) options_.unhealthy.insert(event.index);
        if (!event.healthy && event.fatal) options_.fatal.insert(event.index);
      }
      if (absl::Status published = PublishAll(); !published.ok()) {
        logger_.Error("Publishing GPU health failed", {{"err", published.ToString()}});
      }
    }
  }

  kp::Helper& helper_;
  gpu::DeviceSource& source_;
  const std::vector<gpu::GpuInfo> gpus_;
  gpu::PublishOptions options_;
  const dra::resourceslice::DriverResources other_pools_;
  const dra::Logger logger_;
  std::unique_ptr<gpu::HealthPinWatch> pins_;
  std::atomic<bool> pins_changed_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

int Fail(const std::string& what, const absl::Status& status) {
  std::cerr << "gpu-driver: " << what << ": " << status.message() << "\n";
  return 1;
}

// --fabric-controller: the fabric pool's one publisher, away from the nodes.
int RunFabricController(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const dra::Logger& logger,
                        kp::TerminationSignals& signals) {
  if (gpu_flags.fabric_pool.empty()) {
    return Fail("--fabric-controller", absl::InvalidArgumentError("needs --fabric-pool"));
  }
  absl::StatusOr<std::shared_ptr<k8s::Client>> client =
      plugin.MakeClient(absl::StrCat(gpu_flags.driver_name, "/fabric-controller"));
  if (!client.ok()) return Fail("start", client.status());
  const std::vector<gpu::GpuInfo> gpus = gpu::MockFabricGpus(gpu_flags.fabric_num_devices);
  dra::resourceslice::Options options;
  options.driver_name = gpu_flags.driver_name;
  options.logger = logger;
  absl::StatusOr<std::unique_ptr<dra::resourceslice::Publisher>> publisher =
      dra::resourceslice::Publisher::Start(*client, options, [&](const absl::Status& status, std::string_view context) {
        logger.Error("Publishing the fabric pool failed",
                     {{"context", std::string(context)}, {"err", status.ToString()}});
      });
  if (!publisher.ok()) return Fail("start", publisher.status());
  dra::resourceslice::DriverResources resources;
  resources.pools[gpu_flags.fabric_pool] = gpu::FabricPool(gpus, gpu_flags.driver_name, gpu_flags.fabric_selector);
  (*publisher)->Update(std::move(resources));

  // --fabric-attach here: one reconciler for the whole cluster, so that no
  // node plugin watches claims (binding_condition_reconciler.h, BindingScope).
  gpu::FabricAttach attach(gpu_flags.fabric_attach_delay, gpu_flags.fabric_failure_rate, gpu_flags.binding_timeout);
  gpu::GpuBinding binding(attach);
  std::unique_ptr<rc::BindingConditionReconciler> reconciler;
  if (gpu_flags.fabric_attach) {
    rc::BindingConditionReconcilerOptions reconciler_options;
    reconciler_options.driver_name = gpu_flags.driver_name;
    reconciler_options.scope = rc::BindingScope::kAllNodes;
    reconciler_options.binding_timeout = gpu_flags.binding_timeout;
    reconciler_options.logger = logger;
    absl::StatusOr<std::unique_ptr<rc::BindingConditionReconciler>> started =
        rc::BindingConditionReconciler::Start(*client, reconciler_options, binding);
    if (!started.ok()) return Fail("--fabric-attach", started.status());
    reconciler = *std::move(started);
  }
  logger.Info("Fabric controller started", {{"driver", gpu_flags.driver_name},
                                            {"pool", gpu_flags.fabric_pool},
                                            {"gpus", absl::StrCat(gpus.size())},
                                            {"attach", gpu_flags.fabric_attach ? "all nodes" : "on the nodes"}});
  signals.Wait();
  if (reconciler != nullptr) reconciler->Stop();
  (*publisher)->Stop();
  return 0;
}

// --device-profile=net: --num-devices NICs, shared by bandwidth.
int RunNicDriver(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const dra::Logger& logger,
                 kp::TerminationSignals& signals) {
  absl::StatusOr<kp::Options> options = plugin.MakeOptions(gpu_flags.driver_name);
  if (!options.ok()) return Fail("start", options.status());
  gpu::CommonCdiSpec common = gpu::MakeCommonCdiSpec(gpu_flags.driver_name, "net", plugin.node_name);
  options->cdi.node_specs.push_back(std::move(common.spec));
  gpu::NicDriver::Options driver_options;
  driver_options.driver_name = gpu_flags.driver_name;
  driver_options.common_cdi_id = common.id;
  driver_options.logger = logger;
  for (int i = 0; i < gpu_flags.num_devices; ++i) driver_options.devices.insert(gpu::NicDeviceName(i));
  gpu::NicDriver driver(std::move(driver_options));
  options->extra_metrics = [&driver] { return driver.metrics().Text(); };
  absl::StatusOr<std::unique_ptr<kp::Helper>> helper = kp::Helper::Start(driver, *std::move(options));
  if (!helper.ok()) return Fail("start", helper.status());
  absl::StatusOr<std::unique_ptr<example::GrpcHealthServer>> grpc_health = plugin.StartGrpcHealth(**helper);
  if (!grpc_health.ok()) return Fail("start", grpc_health.status());
  dra::resourceslice::DriverResources resources;
  resources.pools[plugin.node_name] = gpu::NicPool(plugin.node_name, gpu_flags.num_devices);
  if (absl::Status published = (*helper)->PublishResources(std::move(resources)); !published.ok()) {
    return Fail("publish", published);
  }
  logger.Info(
      "NIC driver started",
      {{"driver", gpu_flags.driver_name}, {"node", plugin.node_name}, {"nics", absl::StrCat(gpu_flags.num_devices)}});
  const int exit_code = (*helper)->Wait(signals);
  logger.Info("Stopped; the ResourceSlices stay for the next instance");
  return exit_code;
}

// --device-profile=cpu: the CPU example's driver on --cpu-numa-nodes
// made-up NUMA nodes, published as dra-example-driver's cpu profile does
// ("numa-<id>", grouped by NUMA node). Its CPUs are not the node's: nothing
// pins containers to them.
int RunCpuProfile(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const dra::Logger& logger,
                  kp::TerminationSignals& signals) {
  absl::StatusOr<kp::Options> options = plugin.MakeOptions(gpu_flags.driver_name);
  if (!options.ok()) return Fail("start", options.status());
  cpu::PublishOptions publish;
  publish.driver_name = gpu_flags.driver_name;
  publish.node_name = plugin.node_name;
  publish.group_by = cpu::GroupBy::kNuma;
  publish.numa_device_prefix = "numa-";
  cpu::ChooseCapacityNames(*options, publish, logger);
  cpu::CpuDriver driver(publish, cpu::MockTopology(gpu_flags.cpu_numa_nodes, gpu_flags.cpus_per_numa_node), logger);
  options->extra_metrics = [&driver] { return driver.Metrics(); };
  absl::StatusOr<std::unique_ptr<kp::Helper>> helper = kp::Helper::Start(driver, *std::move(options));
  if (!helper.ok()) return Fail("start", helper.status());
  absl::StatusOr<std::unique_ptr<example::GrpcHealthServer>> grpc_health = plugin.StartGrpcHealth(**helper);
  if (!grpc_health.ok()) return Fail("start", grpc_health.status());
  if (absl::Status published = (*helper)->PublishResources(driver.Resources()); !published.ok()) {
    return Fail("publish", published);
  }
  logger.Info("CPU profile started", {{"driver", gpu_flags.driver_name},
                                      {"node", plugin.node_name},
                                      {"numaNodes", absl::StrCat(gpu_flags.cpu_numa_nodes)},
                                      {"cpusPerNUMANode", absl::StrCat(gpu_flags.cpus_per_numa_node)}});
  const int exit_code = (*helper)->Wait(signals);
  logger.Info("Stopped; the ResourceSlices stay for the next instance");
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // dra-example-driver's chart runs its claim controller and its webhook by
  // these names from the driver's image, which links them to this binary.
  const std::string program = std::filesystem::path(argv[0]).filename();
  if (program == "dra-example-controller") return gpu::RunBindingController(argc, argv);
  if (program == "dra-example-webhook") return gpu::RunAdmissionWebhook(argc, argv);
  dra::FlagSet flags("gpu-driver", "The dra-cpp example GPU DRA driver: a kubelet plugin for mock or NVIDIA GPUs.");
  example::PluginFlags plugin;
  GpuFlags gpu_flags;
  plugin.Register(flags);
  gpu_flags.Register(flags);
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  gpu_flags.Finish();
  kp::TerminationSignals signals;
  // A few per cent of each call's CPU with Debian's abseil
  // (docs/writing-a-driver.md); the SDK leaves process-wide settings to main.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const dra::Logger logger = plugin.MakeLogger();
  if (gpu_flags.fabric_controller) return RunFabricController(plugin, gpu_flags, logger, signals);
  if (gpu_flags.device_profile == "net") return RunNicDriver(plugin, gpu_flags, logger, signals);
  if (gpu_flags.device_profile == "cpu") return RunCpuProfile(plugin, gpu_flags, logger, signals);
  absl::StatusOr<kp::Options> options = plugin.MakeOptions(gpu_flags.driver_name);
  if (!options.ok()) return Fail("start", options.status());
  // The kubelet reads a device's health as Unknown once it has not heard of
  // it for 30 s; the HealthMonitor publishes changes, the Helper the same
  // list again every 10 s.
  options->health_resend_interval = absl::Seconds(10);

  std::unique_ptr<gpu::DeviceSource> source;
  if (gpu_flags.device_source == "nvml") {
    absl::StatusOr<std::unique_ptr<gpu::DeviceSource>> nvml = gpu::OpenNvml(gpu_flags.nvml_library);
    if (!nvml.ok()) return Fail("--device-source=nvml", nvml.status());
    source = *std::move(nvml);
  } else {
    source = std::make_unique<gpu::MockGpus>(plugin.node_name, gpu_flags.num_devices, gpu_flags.mock_health_file);
  }
  absl::StatusOr<std::vector<gpu::GpuInfo>> gpus = source->Discover();
  if (!gpus.ok()) return Fail("discover GPUs", gpus.status());
  // A partition and its GPU's whole device overlap: the Helper refuses one
  // while another claim holds the other.
  options->device_exclusivity.units = [units = gpu::DeviceUnits(*gpus, gpu_flags.partitions),
                                       node_pool = plugin.node_name](std::string_view pool, std::string_view device) {
    const auto it = pool == node_pool ? units.find(device) : units.end();
    return it == units.end() ? std::vector<std::string>() : it->second;
  };
  gpu::CommonCdiSpec common = gpu::MakeCommonCdiSpec(gpu_flags.driver_name, "gpu", plugin.node_name);
  options->cdi.node_specs.push_back(std::move(common.spec));

  gpu::GpuDriver::Options driver_options;
  driver_options.driver_name = gpu_flags.driver_name;
  driver_options.common_cdi_id = common.id;
  driver_options.logger = logger;
  for (const gpu::GpuInfo& gpu : *gpus) {
    for (const std::string& name : gpu::DeviceNames(gpu.index, gpu_flags.partitions))
      driver_options.devices[name] = gpu;
  }
  // Fabric GPUs can be attached to any node the selector picks, so every
  // node plugin knows them, whoever publishes the pool.
  const std::vector<gpu::GpuInfo> fabric_gpus = gpu::MockFabricGpus(gpu_flags.fabric_num_devices);
  for (const gpu::GpuInfo& gpu : fabric_gpus) driver_options.devices[gpu::FabricDeviceName(gpu.index)] = gpu;

  std::shared_ptr<rc::ClaimStatusWriter> status_writer;
  if (gpu_flags.device_status) {
    rc::ClaimStatusWriterOptions writer_options;
    writer_options.driver_name = gpu_flags.driver_name;
    absl::StatusOr<std::unique_ptr<rc::ClaimStatusWriter>> writer =
        rc::ClaimStatusWriter::Create(options->kube_client, writer_options);
    if (!writer.ok()) return Fail("--gpu-device-status", writer.status());
    status_writer = *std::move(writer);
  }
  driver_options.status_writer = status_writer;
  driver_options.device_metadata = gpu_flags.device_metadata;
  driver_options.report_health = gpu_flags.health_service;
  if (gpu_flags.device_metadata) {
    options->device_metadata.enabled = true;
    options->device_metadata.versions = {kp::kDeviceMetadataV1beta1};
  }

  // A node taken over from dra-example-driver, or rolled back to it: the
  // claims either prepared can be unprepared by the other.
  gpu::ShareNodeWithReference(*options, gpu_flags.driver_name, logger);

  gpu::GpuDriver driver(std::move(driver_options));
  options->extra_metrics = [&driver] { return driver.metrics().Text(); };
  std::shared_ptr<k8s::Client> client = options->kube_client;
  absl::StatusOr<std::unique_ptr<kp::Helper>> helper = kp::Helper::Start(driver, *std::move(options));
  if (!helper.ok()) return Fail("start", helper.status());
  absl::StatusOr<std::unique_ptr<example::GrpcHealthServer>> grpc_health = plugin.StartGrpcHealth(**helper);
  if (!grpc_health.ok()) return Fail("start", grpc_health.status());

  gpu::PublishOptions publish;
  publish.driver_name = gpu_flags.driver_name;
  publish.node_name = plugin.node_name;
  publish.partitions = gpu_flags.partitions;
  publish.allow_multiple_allocations = gpu_flags.allow_multiple_allocations;
  publish.host_memory_overhead = gpu_flags.host_memory_overhead;
  publish.binding_conditions = gpu_flags.binding_conditions;
  dra::resourceslice::DriverResources fabric;
  if (!gpu_flags.fabric_pool.empty()) {
    fabric.pools[gpu_flags.fabric_pool] =
        gpu::FabricPool(fabric_gpus, gpu_flags.driver_name, gpu_flags.fabric_selector);
  }
  HealthMonitor health(**helper, *source, *gpus, publish, std::move(fabric), logger);
  if (gpu_flags.health_service && !gpu_flags.pod_name.empty() && !gpu_flags.pod_namespace.empty()) {
    absl::StatusOr<std::unique_ptr<gpu::HealthPinWatch>> pins = gpu::HealthPinWatch::Start(
        client, gpu_flags.pod_namespace, gpu_flags.pod_name, logger, [&health] { health.PinsChanged(); });
    if (!pins.ok()) return Fail("--pod-name", pins.status());
    health.UsePins(*std::move(pins));
  }
  if (absl::Status published = health.PublishAll(); !published.ok()) return Fail("publish", published);
  health.Start();

  gpu::FabricAttach attach(gpu_flags.fabric_attach_delay, gpu_flags.fabric_failure_rate, gpu_flags.binding_timeout);
  gpu::GpuBinding binding(attach);
  std::unique_ptr<rc::BindingConditionReconciler> reconciler;
  if (gpu_flags.fabric_attach || gpu_flags.binding_conditions) {
    rc::BindingConditionReconcilerOptions reconciler_options;
    reconciler_options.driver_name = gpu_flags.driver_name;
    reconciler_options.node_name = plugin.node_name;
    reconciler_options.binding_timeout = gpu_flags.binding_timeout;
    reconciler_options.logger = logger;
    absl::StatusOr<std::unique_ptr<rc::BindingConditionReconciler>> started =
        rc::BindingConditionReconciler::Start(client, reconciler_options, binding);
    if (!started.ok()) return Fail("--fabric-attach, --binding-conditions", started.status());
    reconciler = *std::move(started);
  }
  logger.Info("GPU driver started", {{"driver", gpu_flags.driver_name},
                                     {"node", plugin.node_name},
                                     {"gpus", absl::StrCat(gpus->size())},
                                     {"source", gpu_flags.device_source}});

  const int exit_code = (*helper)->Wait(signals);
  logger.Info("Stopped; the ResourceSlices stay for the next instance");
  health.Stop();
  if (reconciler != nullptr) reconciler->Stop();
  return exit_code;
}
