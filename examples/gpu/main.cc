// gpu-driver: the example GPU DRA driver's node plugin, on the public dra-cpp
// API only. It finds GPUs (mock ones, or NVIDIA GPUs through NVML), publishes
// them as the node's ResourceSlices (whole, partitioned or shareable), serves
// the kubelet, reports health and taints unhealthy GPUs. What it does for
// dra-example-driver's users is in reference/: its other profiles and
// programs, and the extras of this node plugin (ReferenceExtras).
// `gpu-driver --help` lists the flags; examples/gpu/README.md explains them.
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
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
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "gpu_driver.h"
#include "gpu_extras.h"
#include "gpu_flags.h"
#include "gpu_resources.h"
#include "mock_gpus.h"
#include "nvml/nvml_gpus.h"
#include "profiles.h"
#include "reference_flags.h"

namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
namespace rc = dra::resourceclaim;

constexpr std::string_view kProgram = "gpu-driver";

// Keeps the node's pool and the kubelet's health view in line with the
// GPUs' health, from the device source's events.
class HealthMonitor {
 public:
  // What is added to the GPUs' own view (the reference's extras), if set:
  // more pools or device fields, and what the kubelet is told.
  struct Hooks {
    std::function<void(dra::resourceslice::DriverResources&)> resources;
    std::function<void(std::vector<kp::DeviceHealth>&)> health;
  };

  HealthMonitor(gpu::DeviceSource& source, std::vector<gpu::GpuInfo> gpus, gpu::PublishOptions options, Hooks hooks,
                dra::Logger logger)
      : source_(source),
        gpus_(std::move(gpus)),
        options_(std::move(options)),
        hooks_(std::move(hooks)),
        logger_(std::move(logger)) {}
  ~HealthMonitor() { Stop(); }

  // Publishes the pools and the health, then follows the source's events.
  absl::Status Start(kp::Helper& helper) {
    helper_ = &helper;
    if (absl::Status published = PublishAll(); !published.ok()) return published;
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }
  // What hooks.health says changed: the kubelet is told again within one wait.
  void Resend() { resend_ = true; }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void PublishHealth(const dra::resourceslice::Pool& node_pool) {
    std::vector<kp::DeviceHealth> health;
    for (const dra::resourceslice::Slice& slice : node_pool.slices) {
      for (const k8s::Device& device : slice.devices) {
        kp::DeviceHealth& entry = health.emplace_back();
        entry.pool_name = options_.node_name;
        entry.device_name = device.name;
        entry.health = device.taints.empty() ? kp::HealthStatus::kHealthy : kp::HealthStatus::kUnhealthy;
      }
    }
    if (hooks_.health) hooks_.health(health);
    helper_->PublishHealth(std::move(health));
  }

  absl::Status PublishAll() {
    dra::resourceslice::DriverResources resources;
    resources.pools[options_.node_name] = gpu::NodePool(gpus_, options_);
    PublishHealth(resources.pools[options_.node_name]);
    if (hooks_.resources) hooks_.resources(resources);
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
        if (resend_.exchange(false)) PublishHealth(gpu::NodePool(gpus_, options_));
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
  const Hooks hooks_;
  const dra::Logger logger_;
  std::atomic<bool> resend_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

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
  if (gpu_flags.device_status) {
    rc::ClaimStatusWriterOptions writer_options;
    writer_options.driver_name = gpu_flags.driver_name;
    absl::StatusOr<std::unique_ptr<rc::ClaimStatusWriter>> writer =
        rc::ClaimStatusWriter::Create(options->kube_client, writer_options);
    if (!writer.ok()) return example::Fail(kProgram, "--gpu-device-status", writer.status());
    driver_options.status_writer = *std::move(writer);
  }
  driver_options.device_metadata = gpu_flags.device_metadata;
  driver_options.report_health = gpu_flags.health_service;
  if (gpu_flags.device_metadata) {
    options->device_metadata.enabled = true;
    options->device_metadata.versions = {kp::kDeviceMetadataV1beta1};
  }
  gpu::PublishOptions publish;
  publish.driver_name = gpu_flags.driver_name;
  publish.node_name = plugin.node_name;
  publish.partitions = gpu_flags.partitions;
  publish.allow_multiple_allocations = gpu_flags.allow_multiple_allocations;
  publish.host_memory_overhead = gpu_flags.host_memory_overhead;

  // dra-example-driver's extras (reference/gpu_extras.h); a vendor's copy
  // leaves out `reference` and what it is passed to.
  gpu::ReferenceExtras reference(reference_flags, gpu_flags, plugin.node_name, logger);
  reference.Configure(*options, driver_options);

  gpu::GpuDriver driver(std::move(driver_options));
  options->extra_metrics = [&driver] { return driver.metrics().Text(); };
  HealthMonitor health(*source, *gpus, publish,
                       {.resources = [&reference](auto& resources) { reference.AddResources(resources); },
                        .health = [&reference](auto& devices) { reference.PinHealth(devices); }},
                       logger);
  example::NodePluginSteps steps;
  steps.start = [&](kp::Helper& helper) {
    if (absl::Status pins = reference.WatchHealthPins([&health] { health.Resend(); }); !pins.ok()) return pins;
    if (absl::Status published = health.Start(helper); !published.ok()) {
      return example::Annotate("publish", published);
    }
    return reference.StartBinding();
  };
  steps.log_started = [&] {
    logger.Info("GPU driver started", {{"driver", gpu_flags.driver_name},
                                       {"node", plugin.node_name},
                                       {"gpus", absl::StrCat(gpus->size())},
                                       {"source", gpu_flags.device_source}});
  };
  steps.stop = [&] {
    health.Stop();
    reference.Stop();
  };
  return example::RunNodePlugin(kProgram, plugin, driver, *std::move(options), logger, signals, steps);
}
