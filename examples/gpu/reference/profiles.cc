#include "profiles.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/node_plugin_main.h"
#include "container_env.h"
#include "cpu_driver.h"
#include "cpu_resources.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "dra/resourceslice/publisher.h"
#include "fabric_attach.h"
#include "fabric_pool.h"
#include "gpu_binding.h"
#include "nic_driver.h"
#include "nic_resources.h"
#include "topology.h"

namespace gpu {
namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
namespace rc = dra::resourceclaim;

constexpr std::string_view kProgram = "gpu-driver";

int RunFabricController(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const ReferenceFlags& flags,
                        const dra::Logger& logger, kp::TerminationSignals& signals) {
  if (flags.fabric_pool.empty()) {
    return example::Fail(kProgram, "--fabric-controller", absl::InvalidArgumentError("needs --fabric-pool"));
  }
  absl::StatusOr<std::shared_ptr<k8s::Client>> client =
      plugin.MakeClient(absl::StrCat(gpu_flags.driver_name, "/fabric-controller"));
  if (!client.ok()) return example::Fail(kProgram, "start", client.status());
  const std::vector<GpuInfo> gpus = MockFabricGpus(flags.fabric_num_devices);
  dra::resourceslice::Options options;
  options.driver_name = gpu_flags.driver_name;
  options.logger = logger;
  absl::StatusOr<std::unique_ptr<dra::resourceslice::Publisher>> publisher =
      dra::resourceslice::Publisher::Start(*client, options, [&](const absl::Status& status, std::string_view context) {
        logger.Error("Publishing the fabric pool failed",
                     {{"context", std::string(context)}, {"err", status.ToString()}});
      });
  if (!publisher.ok()) return example::Fail(kProgram, "start", publisher.status());
  dra::resourceslice::DriverResources resources;
  resources.pools[flags.fabric_pool] = FabricPool(gpus, gpu_flags.driver_name, flags.fabric_selector);
  (*publisher)->Update(std::move(resources));

  // --fabric-attach here: one reconciler for the whole cluster, so that no
  // node plugin watches claims (binding_condition_reconciler.h, BindingScope).
  FabricAttach attach(flags.fabric_attach_delay, flags.fabric_failure_rate, flags.binding_timeout);
  GpuBinding binding(attach);
  std::unique_ptr<rc::BindingConditionReconciler> reconciler;
  if (flags.fabric_attach) {
    rc::BindingConditionReconcilerOptions reconciler_options;
    reconciler_options.driver_name = gpu_flags.driver_name;
    reconciler_options.scope = rc::BindingScope::kAllNodes;
    reconciler_options.binding_timeout = flags.binding_timeout;
    reconciler_options.logger = logger;
    absl::StatusOr<std::unique_ptr<rc::BindingConditionReconciler>> started =
        rc::BindingConditionReconciler::Start(*client, reconciler_options, binding);
    if (!started.ok()) return example::Fail(kProgram, "--fabric-attach", started.status());
    reconciler = *std::move(started);
  }
  logger.Info("Fabric controller started", {{"driver", gpu_flags.driver_name},
                                            {"pool", flags.fabric_pool},
                                            {"gpus", absl::StrCat(gpus.size())},
                                            {"attach", flags.fabric_attach ? "all nodes" : "on the nodes"}});
  signals.Wait();
  if (reconciler != nullptr) reconciler->Stop();
  (*publisher)->Stop();
  return 0;
}

int RunNicDriver(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const dra::Logger& logger,
                 kp::TerminationSignals& signals) {
  absl::StatusOr<kp::Options> options = plugin.MakeOptions(gpu_flags.driver_name);
  if (!options.ok()) return example::Fail(kProgram, "start", options.status());
  CommonCdiSpec common = MakeCommonCdiSpec(gpu_flags.driver_name, "net", plugin.node_name);
  options->cdi.node_specs.push_back(std::move(common.spec));
  NicDriver::Options driver_options;
  driver_options.driver_name = gpu_flags.driver_name;
  driver_options.common_cdi_id = common.id;
  driver_options.logger = logger;
  for (int i = 0; i < gpu_flags.num_devices; ++i) driver_options.devices.insert(NicDeviceName(i));
  NicDriver driver(std::move(driver_options));
  options->extra_metrics = [&driver] { return driver.metrics().Text(); };
  example::NodePluginSteps steps;
  steps.start = [&](kp::Helper& helper) {
    dra::resourceslice::DriverResources resources;
    resources.pools[plugin.node_name] = NicPool(plugin.node_name, gpu_flags.num_devices);
    return example::Annotate("publish", helper.PublishResources(std::move(resources)));
  };
  steps.log_started = [&] {
    logger.Info(
        "NIC driver started",
        {{"driver", gpu_flags.driver_name}, {"node", plugin.node_name}, {"nics", absl::StrCat(gpu_flags.num_devices)}});
  };
  return example::RunNodePlugin(kProgram, plugin, driver, *std::move(options), logger, signals, steps);
}

int RunCpuProfile(const example::PluginFlags& plugin, const GpuFlags& gpu_flags, const ReferenceFlags& flags,
                  const dra::Logger& logger, kp::TerminationSignals& signals) {
  absl::StatusOr<kp::Options> options = plugin.MakeOptions(gpu_flags.driver_name);
  if (!options.ok()) return example::Fail(kProgram, "start", options.status());
  cpu::PublishOptions publish;
  publish.driver_name = gpu_flags.driver_name;
  publish.node_name = plugin.node_name;
  publish.group_by = cpu::GroupBy::kNuma;
  publish.numa_device_prefix = "numa-";
  cpu::ChooseCapacityNames(*options, publish, logger);
  cpu::CpuDriver driver(publish, cpu::MockTopology(flags.cpu_numa_nodes, flags.cpus_per_numa_node), logger);
  options->extra_metrics = [&driver] { return driver.Metrics(); };
  example::NodePluginSteps steps;
  steps.start = [&](kp::Helper& helper) {
    return example::Annotate("publish", helper.PublishResources(driver.Resources()));
  };
  steps.log_started = [&] {
    logger.Info("CPU profile started", {{"driver", gpu_flags.driver_name},
                                        {"node", plugin.node_name},
                                        {"numaNodes", absl::StrCat(flags.cpu_numa_nodes)},
                                        {"cpusPerNUMANode", absl::StrCat(flags.cpus_per_numa_node)}});
  };
  return example::RunNodePlugin(kProgram, plugin, driver, *std::move(options), logger, signals, steps);
}

}  // namespace

std::optional<int> RunReferenceMode(const example::PluginFlags& plugin, const GpuFlags& gpu_flags,
                                    const ReferenceFlags& flags, const dra::Logger& logger,
                                    kp::TerminationSignals& signals) {
  if (flags.fabric_controller) return RunFabricController(plugin, gpu_flags, flags, logger, signals);
  if (flags.device_profile == "net") return RunNicDriver(plugin, gpu_flags, logger, signals);
  if (flags.device_profile == "cpu") return RunCpuProfile(plugin, gpu_flags, flags, logger, signals);
  return std::nullopt;
}

}  // namespace gpu
