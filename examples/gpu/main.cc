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
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "admission_webhook.h"
#include "binding_controller.h"
#include "common/node_plugin_main.h"
#include "common/plugin_flags.h"
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
#include "gpu_flags.h"
#include "gpu_resources.h"
#include "health_pins.h"
#include "mock_gpus.h"
#include "nvml/nvml_gpus.h"
#include "profiles.h"
#include "reference_flags.h"
#include "reference_takeover.h"

namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
namespace rc = dra::resourceclaim;

// Keeps the node's pool and the kubelet's health view in line with the
// GPUs' health, from the device source's events.
class HealthMonitor {
 public:
  // `other_pools` are published beside the node's pool (the fabric pool).
  HealthMonitor(gpu::DeviceSource& source, std::vector<gpu::GpuInfo> gpus, gpu::PublishOptions options,
                dra::resourceslice::DriverResources other_pools, dra::Logger logger)
      : source_(source),
        gpus_(std::move(gpus)),
        options_(std::move(options)),
        other_pools_(std::move(other_pools)),
        logger_(std::move(logger)) {}
  ~HealthMonitor() { Stop(); }

  // Publishes the pools and the health, then follows the source's events.
  absl::Status Start(kp::Helper& helper) {
    helper_ = &helper;
    if (absl::Status published = PublishAll(); !published.ok()) return published;
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
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
    helper_->PublishHealth(std::move(health));
  }

  absl::Status PublishAll() {
    dra::resourceslice::DriverResources resources = other_pools_;
    resources.pools[options_.node_name] = gpu::NodePool(gpus_, options_);
    PublishHealth(resources.pools[options_.node_name]);
    return helper_->PublishResources(std::move(resources));
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

  kp::Helper* helper_ = nullptr;  // Start's
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

constexpr std::string_view kProgram = "gpu-driver";

}  // namespace

int main(int argc, char** argv) {
  // dra-example-driver's chart runs its claim controller and its webhook by
  // these names from the driver's image, which links them to this binary.
  const std::string program = std::filesystem::path(argv[0]).filename();
  if (program == "dra-example-controller") return gpu::RunBindingController(argc, argv);
  if (program == "dra-example-webhook") return gpu::RunAdmissionWebhook(argc, argv);
  dra::FlagSet flags("gpu-driver", "The dra-cpp example GPU DRA driver: a kubelet plugin for mock or NVIDIA GPUs.");
  example::PluginFlags plugin;
  gpu::GpuFlags gpu_flags;
  gpu::ReferenceFlags reference_flags;
  plugin.Register(flags);
  gpu_flags.Register(flags);
  reference_flags.Register(flags);
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  gpu_flags.Finish(reference_flags.device_profile);
  reference_flags.Finish();
  kp::TerminationSignals signals;
  // A few per cent of each call's CPU with Debian's abseil
  // (docs/writing-a-driver.md); the SDK leaves process-wide settings to main.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const dra::Logger logger = plugin.MakeLogger();
  // --fabric-controller, --device-profile=net or cpu.
  if (std::optional<int> exit_code = gpu::RunReferenceMode(plugin, gpu_flags, reference_flags, logger, signals)) {
    return *exit_code;
  }
  absl::StatusOr<kp::Options> options = plugin.MakeOptions(gpu_flags.driver_name);
  if (!options.ok()) return example::Fail(kProgram, "start", options.status());
  // The kubelet reads a device's health as Unknown once it has not heard of
  // it for 30 s; the HealthMonitor publishes changes, the Helper the same
  // list again every 10 s.
  options->health_resend_interval = absl::Seconds(10);

  std::unique_ptr<gpu::DeviceSource> source;
  if (gpu_flags.device_source == "nvml") {
    absl::StatusOr<std::unique_ptr<gpu::DeviceSource>> nvml = gpu::OpenNvml(gpu_flags.nvml_library);
    if (!nvml.ok()) return example::Fail(kProgram, "--device-source=nvml", nvml.status());
    source = *std::move(nvml);
  } else {
    source = std::make_unique<gpu::MockGpus>(plugin.node_name, gpu_flags.num_devices, gpu_flags.mock_health_file);
  }
  absl::StatusOr<std::vector<gpu::GpuInfo>> gpus = source->Discover();
  if (!gpus.ok()) return example::Fail(kProgram, "discover GPUs", gpus.status());
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
  const std::vector<gpu::GpuInfo> fabric_gpus = gpu::MockFabricGpus(reference_flags.fabric_num_devices);
  for (const gpu::GpuInfo& gpu : fabric_gpus) driver_options.devices[gpu::FabricDeviceName(gpu.index)] = gpu;

  std::shared_ptr<rc::ClaimStatusWriter> status_writer;
  if (gpu_flags.device_status) {
    rc::ClaimStatusWriterOptions writer_options;
    writer_options.driver_name = gpu_flags.driver_name;
    absl::StatusOr<std::unique_ptr<rc::ClaimStatusWriter>> writer =
        rc::ClaimStatusWriter::Create(options->kube_client, writer_options);
    if (!writer.ok()) return example::Fail(kProgram, "--gpu-device-status", writer.status());
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

  gpu::PublishOptions publish;
  publish.driver_name = gpu_flags.driver_name;
  publish.node_name = plugin.node_name;
  publish.partitions = gpu_flags.partitions;
  publish.allow_multiple_allocations = gpu_flags.allow_multiple_allocations;
  publish.host_memory_overhead = gpu_flags.host_memory_overhead;
  publish.binding_conditions = reference_flags.binding_conditions;
  dra::resourceslice::DriverResources fabric;
  if (!reference_flags.fabric_pool.empty()) {
    fabric.pools[reference_flags.fabric_pool] =
        gpu::FabricPool(fabric_gpus, gpu_flags.driver_name, reference_flags.fabric_selector);
  }
  HealthMonitor health(*source, *gpus, publish, std::move(fabric), logger);
  gpu::FabricAttach attach(reference_flags.fabric_attach_delay, reference_flags.fabric_failure_rate,
                           reference_flags.binding_timeout);
  gpu::GpuBinding binding(attach);
  std::unique_ptr<rc::BindingConditionReconciler> reconciler;
  example::NodePluginSteps steps;
  steps.start = [&](kp::Helper& helper) {
    if (gpu_flags.health_service && !reference_flags.pod_name.empty() && !reference_flags.pod_namespace.empty()) {
      absl::StatusOr<std::unique_ptr<gpu::HealthPinWatch>> pins = gpu::HealthPinWatch::Start(
          client, reference_flags.pod_namespace, reference_flags.pod_name, logger, [&health] { health.PinsChanged(); });
      if (!pins.ok()) return example::Annotate("--pod-name", pins.status());
      health.UsePins(*std::move(pins));
    }
    if (absl::Status published = health.Start(helper); !published.ok()) {
      return example::Annotate("publish", published);
    }
    if (reference_flags.fabric_attach || reference_flags.binding_conditions) {
      rc::BindingConditionReconcilerOptions reconciler_options;
      reconciler_options.driver_name = gpu_flags.driver_name;
      reconciler_options.node_name = plugin.node_name;
      reconciler_options.binding_timeout = reference_flags.binding_timeout;
      reconciler_options.logger = logger;
      absl::StatusOr<std::unique_ptr<rc::BindingConditionReconciler>> started =
          rc::BindingConditionReconciler::Start(client, reconciler_options, binding);
      if (!started.ok()) return example::Annotate("--fabric-attach, --binding-conditions", started.status());
      reconciler = *std::move(started);
    }
    return absl::OkStatus();
  };
  steps.log_started = [&] {
    logger.Info("GPU driver started", {{"driver", gpu_flags.driver_name},
                                       {"node", plugin.node_name},
                                       {"gpus", absl::StrCat(gpus->size())},
                                       {"source", gpu_flags.device_source}});
  };
  steps.stop = [&] {
    health.Stop();
    if (reconciler != nullptr) reconciler->Stop();
  };
  return example::RunNodePlugin(kProgram, plugin, driver, *std::move(options), logger, signals, steps);
}
