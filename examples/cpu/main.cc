// cpu-driver: the example CPU DRA driver's node plugin, on the public dra-cpp
// API only. It reads the node's CPU topology from sysfs, publishes sockets
// (or NUMA nodes) as devices that claims take CPUs of, or single CPUs, and
// memory of NUMA nodes, all mapped to the node's allocatable cpu and memory;
// it hands each claim concrete CPUs and republishes when CPUs go offline or
// online. `cpu-driver --help` lists the flags; examples/cpu/README.md
// explains them.
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/node_plugin_main.h"
#include "common/plugin_flags.h"
#include "cpu_driver.h"
#include "cpu_pinner.h"
#include "cpu_resources.h"
#include "cpuset.h"
#include "dra/flags.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "topology.h"

namespace {

namespace kp = dra::kubeletplugin;

constexpr std::string_view kProgram = "cpu-driver";

struct CpuFlags {
  std::string driver_name = "cpu.example.com";
  std::string sysfs_root = "/sys";
  std::set<int> reserved;
  cpu::Mode mode = cpu::Mode::kGrouped;
  cpu::GroupBy group_by = cpu::GroupBy::kSocket;
  bool memory_devices = false;
  absl::Duration rescan_interval = absl::Seconds(5);
  std::string nri_socket = "/var/run/nri/nri.sock";

  void Register(dra::FlagSet& flags) {
    flags.String("driver-name", &driver_name, "the DRA driver name", "DRIVER_NAME");
    flags.String("sysfs-root", &sysfs_root, "where sysfs is (its devices/system/cpu and devices/system/node)",
                 "SYSFS_ROOT");
    flags.Custom("reserved-cpus", "cpulist", "none",
                 "CPUs kept for the system, e.g. 0-1,8: never published or handed out", "RESERVED_CPUS",
                 [this](const std::string& text) -> absl::Status {
                   absl::StatusOr<std::vector<int>> cpus = cpu::ParseCpuList(text);
                   if (!cpus.ok()) return cpus.status();
                   reserved = {cpus->begin(), cpus->end()};
                   return absl::OkStatus();
                 });
    flags.Custom("mode", "grouped|individual", "\"grouped\"",
                 "grouped: a device per socket (or NUMA node) that claims take CPUs of; individual: a device per CPU",
                 "MODE", [this](const std::string& text) {
                   if (text == "grouped") {
                     mode = cpu::Mode::kGrouped;
                   } else if (text == "individual") {
                     mode = cpu::Mode::kIndividual;
                   } else {
                     return absl::InvalidArgumentError("must be grouped or individual");
                   }
                   return absl::OkStatus();
                 });
    flags.Custom("group-by", "socket|numa", "\"socket\"", "what a grouped device is", "GROUP_BY",
                 [this](const std::string& text) {
                   if (text == "socket") {
                     group_by = cpu::GroupBy::kSocket;
                   } else if (text == "numa") {
                     group_by = cpu::GroupBy::kNuma;
                   } else {
                     return absl::InvalidArgumentError("must be socket or numa");
                   }
                   return absl::OkStatus();
                 });
    flags.Bool("memory-devices", &memory_devices, "also publish each NUMA node's memory as a device", "MEMORY_DEVICES");
    flags.Duration("rescan-interval", &rescan_interval, "how often to look for CPUs going offline or online; 0: never",
                   "RESCAN_INTERVAL");
    flags.String("nri-socket", &nri_socket,
                 "the container runtime's NRI socket, through which the driver pins containers to their CPUs; "
                 "\"\": do not pin (containers get DRA_CPUSET_* only)",
                 "NRI_SOCKET");
  }
};

// Republishes when the set of online CPUs changes.
class HotplugWatch {
 public:
  HotplugWatch(kp::Helper& helper, cpu::CpuDriver& driver, std::string sysfs_root, absl::Duration interval,
               std::vector<cpu::Cpu> cpus, dra::Logger logger)
      : helper_(helper),
        driver_(driver),
        sysfs_root_(std::move(sysfs_root)),
        interval_(interval),
        cpus_(std::move(cpus)),
        logger_(std::move(logger)),
        thread_([this] { Run(); }) {}
  ~HotplugWatch() {
    {
      std::scoped_lock lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  // Waits one interval; false once the watch is stopping.
  bool Tick() {
    std::unique_lock lock(mu_);
    auto stopping = [this] { return stop_; };
    if (interval_ == absl::InfiniteDuration()) {  // --rescan-interval=inf: std::chrono would overflow
      cv_.wait(lock, stopping);
      return false;
    }
    return !cv_.wait_for(lock, absl::ToChronoNanoseconds(interval_), stopping);
  }

  void Run() {
    while (Tick()) {
      absl::StatusOr<cpu::Topology> topology = cpu::ReadTopology(sysfs_root_);
      if (!topology.ok()) {
        logger_.Error("Reading the CPU topology failed", {{"err", topology.status().ToString()}});
        continue;
      }
      std::vector<int> before, after;
      for (const cpu::Cpu& c : cpus_) before.push_back(c.id);
      for (const cpu::Cpu& c : topology->cpus) after.push_back(c.id);
      if (before == after) continue;
      logger_.Warning("Online CPUs changed; republishing",
                      {{"before", cpu::FormatCpuList(before)}, {"now", cpu::FormatCpuList(after)}});
      cpus_ = topology->cpus;
      driver_.SetTopology(*std::move(topology));
      if (absl::Status published = helper_.PublishResources(driver_.Resources()); !published.ok()) {
        logger_.Error("Publishing failed", {{"err", published.ToString()}});
      }
    }
  }

  kp::Helper& helper_;
  cpu::CpuDriver& driver_;
  const std::string sysfs_root_;
  const absl::Duration interval_;
  std::vector<cpu::Cpu> cpus_;  // Run() only
  const dra::Logger logger_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;   // guarded by mu_
  std::thread thread_;  // last: starts after the rest exists
};

}  // namespace

int main(int argc, char** argv) {
  dra::FlagSet flags("cpu-driver",
                     "The dra-cpp example CPU DRA driver: exclusive CPUs and NUMA memory for containers.");
  example::PluginFlags plugin;
  CpuFlags cpu_flags;
  plugin.Register(flags);
  cpu_flags.Register(flags);
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  kp::TerminationSignals signals;
  // A few per cent of each call's CPU with Debian's abseil
  // (docs/writing-a-driver.md); the SDK leaves process-wide settings to main.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const dra::Logger logger = plugin.MakeLogger();
  absl::StatusOr<kp::Options> options = plugin.MakeOptions(cpu_flags.driver_name);
  if (!options.ok()) return example::Fail(kProgram, "start", options.status());
  absl::StatusOr<cpu::Topology> topology = cpu::ReadTopology(cpu_flags.sysfs_root);
  if (!topology.ok()) return example::Fail(kProgram, "read the CPU topology", topology.status());

  cpu::PublishOptions publish;
  publish.driver_name = cpu_flags.driver_name;
  publish.node_name = plugin.node_name;
  publish.mode = cpu_flags.mode;
  publish.group_by = cpu_flags.group_by;
  publish.memory_devices = cpu_flags.memory_devices;
  publish.reserved = cpu_flags.reserved;
  cpu::ChooseCapacityNames(*options, publish, logger);
  const std::vector<cpu::Cpu> cpus = topology->cpus;
  cpu::CpuDriver driver(publish, *std::move(topology), logger);
  // One NRI plugin per node: an instance started beside this one in a
  // rolling update waits for this one's lock in the plugin data dir (made
  // here as the Helper makes it).
  std::unique_ptr<cpu::CpuPinner> pinner;
  if (!cpu_flags.nri_socket.empty()) {
    ::mkdir(options->plugin_data_dir.c_str(), 0750);
    nri::PluginOptions nri_options;
    nri_options.socket_path = cpu_flags.nri_socket;
    nri_options.name = cpu_flags.driver_name;
    nri_options.lock_path = options->plugin_data_dir + "/nri.lock";
    pinner = std::make_unique<cpu::CpuPinner>(
        std::move(nri_options), [&driver] { return driver.Pinning(); }, logger);
    driver.OnPinningChanged([&pinner] { pinner->ClaimsChanged(); });
  }
  options->extra_metrics = [&driver, &pinner] { return driver.Metrics() + (pinner ? pinner->Metrics() : ""); };
  std::unique_ptr<HotplugWatch> hotplug;
  example::NodePluginSteps steps;
  steps.start = [&](kp::Helper& helper) {
    if (absl::Status published = helper.PublishResources(driver.Resources()); !published.ok()) {
      return example::Annotate("publish", published);
    }
    if (cpu_flags.rescan_interval > absl::ZeroDuration()) {
      hotplug =
          std::make_unique<HotplugWatch>(helper, driver, cpu_flags.sysfs_root, cpu_flags.rescan_interval, cpus, logger);
    }
    return absl::OkStatus();
  };
  steps.log_started = [&] {
    logger.Info("CPU driver started",
                {{"driver", cpu_flags.driver_name},
                 {"node", plugin.node_name},
                 {"online", absl::StrCat(cpus.size())},
                 {"reserved", cpu::FormatCpuList({cpu_flags.reserved.begin(), cpu_flags.reserved.end()})}});
  };
  steps.stop = [&] {
    hotplug.reset();
    pinner.reset();
  };
  return example::RunNodePlugin(kProgram, plugin, driver, *std::move(options), logger, signals, steps);
}
