#include "gpu_flags.h"

#include "absl/status/status.h"

namespace gpu {

namespace k8s = dra::k8s;

void GpuFlags::Register(dra::FlagSet& flags) {
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
  flags.Bool("health-service", &health_service,
             "report GPU health to the kubelet (KEP-4680; dra-example-driver's HEALTH_SERVICE); false: the health "
             "service is neither served nor advertised, as a driver that reports none",
             "HEALTH_SERVICE");
}

void GpuFlags::Finish(std::string_view device_profile) {
  if (driver_name.empty()) driver_name = std::string(device_profile) + ".example.com";
}

}  // namespace gpu
