// Kubeconfig files (dra::k8s::LoadKubeconfig): every input, written to a
// file, loads or fails with InvalidArgument (yaml-cpp's exceptions caught),
// and a loaded config has what the client needs.
#include "dra/k8s/client_config.h"
#include "fuzz_check.h"
#include "fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Relative paths in the file (certificate-authority, tokenFile, ...)
  // resolve against this directory, which holds only the file itself.
  const std::string path = dra::fuzz::ProcessTempDir().Join("kubeconfig");
  dra::testing::WriteFile(path, std::string(dra::fuzz::AsText(data, size)));
  absl::StatusOr<dra::k8s::ClientConfig> config = dra::k8s::LoadKubeconfig(path);
  if (!config.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(config.status()));
    return 0;
  }
  DRA_FUZZ_CHECK(!config->server.empty());
  DRA_FUZZ_CHECK(!config->namespace_.empty());
  DRA_FUZZ_CHECK(!(config->insecure_skip_tls_verify && (!config->ca_file.empty() || !config->ca_data.empty())));
  if (config->exec.has_value()) DRA_FUZZ_CHECK(!config->exec->command.empty());
  return 0;
}
