// The smallest complete DRA driver on dra-cpp: it publishes --devices devices and
// prepares each with CDI edits that set an environment variable. deploy/ runs it.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "dra/flags.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/plugin_flags.h"
#include "dra/resourceslice/split.h"

namespace kp = dra::kubeletplugin;

struct MinimalDriver : kp::Driver {
  absl::StatusOr<kp::PrepareResults> PrepareResourceClaims(const dra::CallContext&,
                                                           std::span<const dra::k8s::ResourceClaim> claims) override {
    kp::PrepareResults results;
    for (const dra::k8s::ResourceClaim& claim : claims) {
      for (const dra::k8s::DeviceRequestAllocationResult& result : claim.status.allocation->devices.results) {
        kp::Device& device = results[claim.metadata.uid].devices.emplace_back(kp::Device::ForAllocation(result));
        // MINIMAL_DEV0=dev0 in the claim's CDI spec; the Helper returns the device's CDI ID.
        device.cdi_edits.emplace().env = {"MINIMAL_" + absl::AsciiStrToUpper(result.device) + "=" + result.device};
      }
    }
    return results;
  }

  absl::StatusOr<kp::UnprepareResults> UnprepareResourceClaims(const dra::CallContext&,
                                                               std::span<const dra::k8s::ClaimRef> claims) override {
    kp::UnprepareResults results;
    for (const dra::k8s::ClaimRef& claim : claims) results[claim.uid] = absl::OkStatus();  // nothing to undo
    return results;
  }
};

int main(int argc, char** argv) {
  kp::TerminationSignals signals;
  dra::FlagSet flags("minimal-driver", "The smallest complete DRA driver on dra-cpp.");
  kp::PluginFlags plugin_flags;  // --node-name, --kubeconfig, the kubelet's directories, ...
  plugin_flags.Register(flags);
  int devices = 2;
  flags.Int("devices", &devices, "devices to publish", "DEVICES", 0, 128);
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  std::vector<dra::k8s::Device> published(devices);
  for (int i = 0; i < devices; ++i) published[i].name = "dev" + std::to_string(i);
  dra::resourceslice::DriverResources resources;
  resources.pools[plugin_flags.node_name].slices = dra::resourceslice::SplitIntoSlices(std::move(published));
  MinimalDriver driver;
  absl::StatusOr<kp::Options> options = plugin_flags.MakeOptions("minimal.example.com");
  absl::StatusOr<std::unique_ptr<kp::Helper>> helper =
      options.ok() ? kp::Helper::Start(driver, *options) : options.status();
  absl::Status status = helper.ok() ? (*helper)->PublishResources(std::move(resources)) : helper.status();
  if (!status.ok()) {
    std::cerr << "minimal-driver: " << status.message() << "\n";
    return 1;
  }
  return (*helper)->Wait(signals);  // until SIGTERM (0) or a fatal error, which the Helper logs (1)
}
