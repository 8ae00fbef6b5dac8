// bench_trivial_driver: the trivial DRA driver of bench/go_vs_cpp.sh on the
// public dra-cpp API, doing the same work as bench/gosdk (the same driver on
// the Go SDK's kubeletplugin helper):
//
//   - claims come from an InMemoryClaimSource preloaded with N allocated
//     ResourceClaims: namespace "default", name "claim-<i>", UID
//     "00000000-0000-4000-8000-<i as 12 hex digits>", one allocation result
//     (request "gpu", pool "pool-a", device "gpu-0") for this driver;
//   - prepare returns one device with one CDI device ID per allocation result;
//     unprepare always succeeds;
//   - serialization off; no health reporting (not advertised); the Helper's
//     CDI spec files off (Options::cdi.enabled: the driver has no cdi_edits,
//     and the Go helper writes or removes no CDI files either);
//   - checkpoint off by default (the Go helper keeps none), on with
//     --checkpoint on (put --plugin-data-dir on tmpfs for the usual case).
//
//   bench_trivial_driver --registrar-dir DIR --plugin-data-dir DIR
//       [--driver-name NAME] [--claims N] [--checkpoint on|off] [-v LEVEL]
//
// Runs until SIGTERM or SIGINT.
#include <pthread.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "bench/driver_flags.h"
#include "bench/one_device_allocation.h"
#include "bench/unprepare_all_driver.h"
#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/termination_signals.h"

namespace {

using dra::kubeletplugin::Device;
using dra::kubeletplugin::PrepareResults;
using dra::kubeletplugin::UnprepareResults;

dra::k8s::ResourceClaim BenchClaim(const std::string& driver_name, long i) {
  dra::k8s::ResourceClaim claim;
  claim.metadata.namespace_ = "default";
  claim.metadata.name = "claim-" + std::to_string(i);
  claim.metadata.uid = dra::bench::BenchClaimUid(i);
  claim.status.allocation = dra::bench::OneDeviceAllocation(driver_name, claim.metadata.uid);
  return claim;
}

class TrivialDriver : public dra::bench::UnprepareAllDriver {
 public:
  explicit TrivialDriver(std::string name) : name_(std::move(name)) {}

  absl::StatusOr<PrepareResults> PrepareResourceClaims(const dra::CallContext&,
                                                       std::span<const dra::k8s::ResourceClaim> claims) override {
    PrepareResults results;
    for (const auto& claim : claims) {
      auto& result = results[claim.metadata.uid];
      // The Helper leaves only this driver's allocation results.
      for (const auto& allocated : claim.status.allocation->devices.results) {
        result.devices.push_back(
            Device{.requests = {allocated.request},
                   .pool_name = allocated.pool,
                   .device_name = allocated.device,
                   .cdi_device_ids = {name_ + "/device=" + claim.metadata.uid + "-" + allocated.device},
                   .share_id = std::nullopt,
                   .cdi_edits = std::nullopt});
      }
    }
    return results;
  }

 private:
  const std::string name_;
};

constexpr char kUsage[] =
    "usage: bench_trivial_driver --registrar-dir DIR --plugin-data-dir DIR [--driver-name NAME]\n"
    "                            [--claims N] [--checkpoint on|off] [-v LEVEL]\n";

}  // namespace

int main(int argc, char** argv) {
  dra::kubeletplugin::TerminationSignals signals;
  // A few per cent of each call's CPU with Debian's abseil
  // (docs/writing-a-driver.md); the SDK leaves process-wide settings to main.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  dra::kubeletplugin::Options options;
  options.serialize = false;
  options.checkpoint = false;
  options.cdi.enabled = false;
  dra::bench::DriverFlags flags;
  int verbosity = 0;
  const int exit_code =
      dra::bench::ParseDriverFlags(argc, argv, flags, kUsage, [&](const std::string& flag, const std::string& value) {
        if (flag == "--checkpoint" && (value == "on" || value == "off"))
          options.checkpoint = value == "on";
        else if (flag == "-v" || flag == "--v")
          verbosity = std::stoi(value);
        else
          return false;
        return true;
      });
  if (exit_code >= 0) return exit_code;
  options.driver_name = flags.driver_name;
  options.registrar_dir = flags.registrar_dir;
  options.plugin_data_dir = flags.plugin_data_dir;
  options.logger = dra::Logger(dra::NewStderrLogSink(dra::LogFormat::kKlogText), verbosity);

  auto claims = std::make_shared<dra::kubeletplugin::InMemoryClaimSource>();
  for (long i = 0; i < flags.claims; ++i) claims->Put(BenchClaim(options.driver_name, i));
  options.claim_source = claims;

  TrivialDriver driver(options.driver_name);
  absl::StatusOr<std::unique_ptr<dra::kubeletplugin::Helper>> helper =
      dra::kubeletplugin::Helper::Start(driver, options);
  if (!helper.ok()) {
    std::cerr << "start: " << helper.status().message() << "\n";
    return 1;
  }
  signals.Wait();
  (*helper)->Stop();
  return 0;
}
