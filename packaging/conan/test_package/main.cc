// A kubelet plugin on the packaged SDK that prepares nothing: `--help` lists
// the plugin's flags; with them it would serve the kubelet until SIGTERM.
#include <iostream>
#include <memory>
#include <optional>

#include "dra/flags.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/plugin_flags.h"

namespace kp = dra::kubeletplugin;

struct NoDevicesDriver : kp::Driver {
  absl::StatusOr<kp::PrepareResults> PrepareResourceClaims(const dra::CallContext&,
                                                           std::span<const dra::k8s::ResourceClaim> claims) override {
    kp::PrepareResults results;
    for (const dra::k8s::ResourceClaim& claim : claims) results[claim.metadata.uid] = {};
    return results;
  }

  absl::StatusOr<kp::UnprepareResults> UnprepareResourceClaims(const dra::CallContext&,
                                                               std::span<const dra::k8s::ClaimRef> claims) override {
    kp::UnprepareResults results;
    for (const dra::k8s::ClaimRef& claim : claims) results[claim.uid] = absl::OkStatus();
    return results;
  }
};

int main(int argc, char** argv) {
  kp::TerminationSignals signals;
  dra::FlagSet flags("test_package", "A DRA kubelet plugin built on dra-cpp's Conan package.");
  kp::PluginFlags plugin_flags;
  plugin_flags.Register(flags);
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  NoDevicesDriver driver;
  absl::StatusOr<kp::Options> options = plugin_flags.MakeOptions("test-package.example.com");
  absl::StatusOr<std::unique_ptr<kp::Helper>> helper =
      options.ok() ? kp::Helper::Start(driver, *options) : options.status();
  if (!helper.ok()) {
    std::cerr << "test_package: " << helper.status().message() << "\n";
    return 1;
  }
  return (*helper)->Wait(signals);
}
