// The GPU example's opaque config (gpu::DecodeGpuConfig): any JSON document
// as a claim's opaque parameters decodes or fails with InvalidArgument (no
// exception from a field of the wrong type), and a decoded config is one
// the driver can apply.
#include "fuzz_check.h"
#include "gpu/gpu_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = dra::fuzz::AsText(data, size);
  const nlohmann::json parameters =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (parameters.is_discarded()) return -1;  // not JSON: the claim decoder never hands it over
  absl::StatusOr<gpu::GpuConfig> config = gpu::DecodeGpuConfig(parameters);
  if (!config.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(config.status()));
    return 0;
  }
  DRA_FUZZ_CHECK(config->partition_count >= 1 && config->partition_count <= 16);
  DRA_FUZZ_CHECK(config->interval == "Default" || config->interval == "Long" || config->interval == "Medium" ||
                 config->interval == "Short");
  return 0;
}
