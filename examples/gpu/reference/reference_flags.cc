#include "reference_flags.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"

namespace gpu {

void ReferenceFlags::Register(dra::FlagSet& flags) {
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
  flags.Int("cpu-numa-nodes", &cpu_numa_nodes, "--device-profile=cpu: made-up NUMA nodes on this node",
            "CPU_NUMA_NODES", 1, 64);
  flags.Int("cpus-per-numa-node", &cpus_per_numa_node, "--device-profile=cpu: CPUs of each made-up NUMA node",
            "CPUS_PER_NUMA_NODE", 1, 1024);
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
             "only publish the --fabric-pool, without serving a kubelet (run it as a Deployment)", "FABRIC_CONTROLLER");
  flags.Bool("fabric-attach", &fabric_attach,
             "attach fabric GPUs allocated to this node and set their binding conditions (with "
             "--fabric-controller: to every node, centrally; give it to the controller or to the nodes, not both)",
             "FABRIC_ATTACH");
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

void ReferenceFlags::Finish() {
  std::vector<std::string> parts = absl::StrSplit(fabric_selector_text, absl::MaxSplits('=', 1));
  fabric_selector = dra::k8s::NodeSelectorForLabel(parts[0], {parts[1]});
}

}  // namespace gpu
