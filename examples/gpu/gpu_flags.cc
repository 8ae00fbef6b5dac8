#include "gpu_flags.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"

namespace gpu {

namespace k8s = dra::k8s;

void GpuFlags::Register(dra::FlagSet& flags) {
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
  flags.Int("gpu-partitions", &partitions, "partitions per GPU, drawn from shared counters (0: none)", "GPU_PARTITIONS",
            0, 16);
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
             "only publish the --fabric-pool, without serving a kubelet (run it as a Deployment)", "FABRIC_CONTROLLER");
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

void GpuFlags::Finish() {
  if (driver_name.empty()) driver_name = device_profile + ".example.com";
  std::vector<std::string> parts = absl::StrSplit(fabric_selector_text, absl::MaxSplits('=', 1));
  fabric_selector = k8s::NodeSelectorForLabel(parts[0], {parts[1]});
}

}  // namespace gpu
