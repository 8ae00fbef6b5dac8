// Starts a Helper for a driver that prepares nothing, stops it, prints OK.
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/helper.h"

namespace {

class NoDevicesDriver : public dra::kubeletplugin::Driver {
 public:
  absl::StatusOr<dra::kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext&, std::span<const dra::k8s::ResourceClaim> claims) override {
    dra::kubeletplugin::PrepareResults results;
    for (const auto& claim : claims) results[claim.metadata.uid] = {};
    return results;
  }

  absl::StatusOr<dra::kubeletplugin::UnprepareResults> UnprepareResourceClaims(
      const dra::CallContext&, std::span<const dra::k8s::ClaimRef> claims) override {
    dra::kubeletplugin::UnprepareResults results;
    for (const auto& claim : claims) results[claim.uid] = absl::OkStatus();
    return results;
  }

  void HandleError(const absl::Status& status, dra::kubeletplugin::ErrorSeverity severity,
                   std::string_view context) override {
    std::cerr << context << " (" << dra::kubeletplugin::ErrorSeverityName(severity) << "): " << status << "\n";
  }
};

int Run(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir / "registry");
  NoDevicesDriver driver;
  dra::kubeletplugin::Options options;
  options.driver_name = "consumer.example.com";
  options.registrar_dir = dir / "registry";
  options.plugin_data_dir = dir / "plugin";
  options.claim_source = std::make_shared<dra::kubeletplugin::InMemoryClaimSource>();
  auto helper = dra::kubeletplugin::Helper::Start(driver, options);
  if (!helper.ok()) {
    std::cerr << "Helper::Start: " << helper.status() << "\n";
    return 1;
  }
  if (!std::filesystem::exists((*helper)->dra_socket_path())) {
    std::cerr << "no DRA socket at " << (*helper)->dra_socket_path() << "\n";
    return 1;
  }
  (*helper)->Stop();
  std::cout << "OK" << std::endl;
  return 0;
}

}  // namespace

int main() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dra-consumer-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::cerr << "mkdtemp failed\n";
    return 1;
  }
  const int code = Run(pattern);
  std::filesystem::remove_all(pattern);
  return code;
}
