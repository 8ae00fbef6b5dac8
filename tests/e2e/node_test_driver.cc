// The driver the node tests run (e2e_node, e2e_kubeletpeer_minimal_driver):
// examples/minimal's driver with what those tests need besides: a driver
// name per test, a log line per claim, device health, --skip-node-operations,
// and claims from a JSON file (a list of ResourceClaim objects) instead of the
// API server (--claims), so that the kubelet peer drives it without a
// cluster. Every allocated device gets CDI edits, an environment variable of
// its own naming it.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/k8s/device_attributes.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/resourceslice/split.h"
#include "nlohmann/json.hpp"

namespace {

using dra::kubeletplugin::Device;
using dra::kubeletplugin::PrepareResults;
using dra::kubeletplugin::UnprepareResults;

// MINIMAL_DEVICE_<device name in upper case, other characters as _>: one
// variable per device, since a container that gets several devices gets the
// edits of all of them, and of two values for one variable only the last
// stays.
std::string DeviceVariable(const std::string& device) {
  std::string name = "MINIMAL_DEVICE_";
  for (char c : device) name += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
  return name;
}

class MinimalDriver : public dra::kubeletplugin::Driver {
 public:
  absl::StatusOr<PrepareResults> PrepareResourceClaims(const dra::CallContext& ctx,
                                                       std::span<const dra::k8s::ResourceClaim> claims) override {
    PrepareResults results;
    for (const auto& claim : claims) {
      auto& result = results[claim.metadata.uid];
      for (const auto& allocated : claim.status.allocation->devices.results) {
        Device& device = result.devices.emplace_back(Device::ForAllocation(allocated));
        // The Helper turns these into the claim's CDI spec and the device's CDI ID.
        device.cdi_edits.emplace().env = {DeviceVariable(allocated.device) + "=" + allocated.device};
      }
      // ctx's logger carries the kubelet call's method and request ID.
      ctx.logger().Info("Prepared claim", {{"claim", claim.metadata.namespace_ + "/" + claim.metadata.name},
                                           {"uid", claim.metadata.uid},
                                           {"devices", std::to_string(result.devices.size())}});
    }
    return results;
  }

  absl::StatusOr<UnprepareResults> UnprepareResourceClaims(const dra::CallContext& ctx,
                                                           std::span<const dra::k8s::ClaimRef> claims) override {
    UnprepareResults results;
    for (const auto& claim : claims) {
      results[claim.uid] = absl::OkStatus();
      ctx.logger().Info("Unprepared claim", {{"claim", claim.namespace_ + "/" + claim.name}, {"uid", claim.uid}});
    }
    return results;
  }

  bool ReportsDeviceHealth() const override { return true; }
};

absl::Status LoadClaims(const std::string& path, dra::kubeletplugin::InMemoryClaimSource& source) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read claims file " + path);
  nlohmann::json list = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return absl::InvalidArgumentError(path + ": expected a JSON list of ResourceClaims");
  for (const nlohmann::json& item : list) {
    absl::StatusOr<dra::k8s::ResourceClaim> claim = dra::k8s::ResourceClaimFromJson(item);
    if (!claim.ok()) return absl::InvalidArgumentError(path + ": " + std::string(claim.status().message()));
    source.Put(*std::move(claim));
  }
  return absl::OkStatus();
}

int Usage() {
  std::cerr << "usage: e2e-node-driver --registrar-dir DIR --plugin-data-dir DIR (--kubeconfig FILE | --claims FILE)\n"
               "                       [--cdi-dir DIR (default /var/run/cdi)] [--driver-name NAME] [--devices N]\n"
               "                       [--node-name NAME (default node-local)] [--http-endpoint HOST:PORT]\n"
               "                       [--skip-node-operations OPS] [--health on|off] [-v LEVEL]\n"
               "                       [--log-format text|json]\n"
               "  --kubeconfig: read claims from the API server and publish ResourceSlices\n"
               "  --claims: read claims from a JSON list of ResourceClaims instead\n"
               "  --http-endpoint: serve /metrics and /healthz there\n"
               "  --skip-node-operations: comma-separated kubelet calls the published devices do not need\n"
               "                          (NodePrepareResources,NodeUnprepareResources or *; Kubernetes 1.37,\n"
               "                          gate DRAOptionalNodeOperations)\n"
               "  --health off: neither serve nor advertise the device health services\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  dra::kubeletplugin::TerminationSignals signals;
  // A few per cent of each call's CPU with Debian's abseil
  // (docs/writing-a-driver.md); the SDK leaves process-wide settings to main.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  dra::kubeletplugin::Options options;
  options.driver_name = "minimal.example.com";
  options.node_name = "node-local";
  // The kubelet reads a device's health as Unknown once it has not heard of
  // it for 30 s: the Helper says this driver's list again every 10 s.
  options.health_resend_interval = absl::Seconds(10);
  std::string claims_file;
  std::string kubeconfig;
  int devices = 2;
  std::vector<std::string> skip_node_operations;
  int verbosity = 0;
  auto format = dra::LogFormat::kKlogText;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage();
    const std::string value = argv[++i];
    if (flag == "--registrar-dir")
      options.registrar_dir = value;
    else if (flag == "--plugin-data-dir")
      options.plugin_data_dir = value;
    else if (flag == "--driver-name")
      options.driver_name = value;
    else if (flag == "--claims")
      claims_file = value;
    else if (flag == "--cdi-dir")
      options.cdi.dir.path = value;
    else if (flag == "--kubeconfig")
      kubeconfig = value;
    else if (flag == "--node-name")
      options.node_name = value;
    else if (flag == "--http-endpoint")
      options.http_endpoint = value;
    else if (flag == "--skip-node-operations")
      skip_node_operations = absl::StrSplit(value, ',', absl::SkipEmpty());
    else if (flag == "--health" && (value == "on" || value == "off"))
      options.services.health_v1 = options.services.health_v1alpha1 = value == "on";
    else if (flag == "--devices") {
      if (!absl::SimpleAtoi(value, &devices) || devices < 0) return Usage();
    } else if (flag == "-v") {
      if (!absl::SimpleAtoi(value, &verbosity)) return Usage();
    } else if (flag == "--log-format" && (value == "text" || value == "json"))
      format = value == "json" ? dra::LogFormat::kJson : dra::LogFormat::kKlogText;
    else
      return Usage();
  }
  if (claims_file.empty() && kubeconfig.empty()) return Usage();
  options.logger = dra::Logger(dra::NewStderrLogSink(format), verbosity);

  // Without --claims, the Helper reads claims through kube_client.
  if (!claims_file.empty()) {
    auto claims = std::make_shared<dra::kubeletplugin::InMemoryClaimSource>();
    if (absl::Status status = LoadClaims(claims_file, *claims); !status.ok()) {
      std::cerr << status.message() << "\n";
      return 1;
    }
    options.claim_source = claims;
  }
  if (!kubeconfig.empty()) {
    absl::StatusOr<dra::k8s::ClientConfig> config = dra::k8s::LoadKubeconfig(kubeconfig);
    if (!config.ok()) {
      std::cerr << "--kubeconfig: " << config.status().message() << "\n";
      return 1;
    }
    absl::StatusOr<std::shared_ptr<dra::k8s::Client>> client = dra::k8s::Client::Create(*config);
    if (!client.ok()) {
      std::cerr << "--kubeconfig: " << client.status().message() << "\n";
      return 1;
    }
    options.kube_client = *client;
  }

  MinimalDriver driver;
  absl::StatusOr<std::unique_ptr<dra::kubeletplugin::Helper>> helper =
      dra::kubeletplugin::Helper::Start(driver, options);
  if (!helper.ok()) {
    std::cerr << "start: " << helper.status().message() << "\n";
    return 1;
  }
  std::vector<dra::kubeletplugin::DeviceHealth> health(devices);
  std::vector<dra::k8s::Device> published(devices);
  for (int i = 0; i < devices; ++i) {
    const std::string name = "dev-" + std::to_string(i);
    health[i].pool_name = options.node_name;
    health[i].device_name = name;
    health[i].health = dra::kubeletplugin::HealthStatus::kHealthy;
    published[i].name = name;
    published[i].attributes["index"] = dra::k8s::IntAttribute(i);
  }
  (*helper)->PublishHealth(health);
  if (options.kube_client != nullptr) {
    dra::resourceslice::DriverResources resources;
    dra::resourceslice::Pool& pool = resources.pools[options.node_name];
    pool.slices = dra::resourceslice::SplitIntoSlices(std::move(published));
    pool.skip_node_operations = skip_node_operations;
    if (absl::Status status = (*helper)->PublishResources(std::move(resources)); !status.ok()) {
      std::cerr << "publish: " << status.message() << "\n";
    }
  }

  // Until SIGTERM, or a background error the Helper cannot recover from
  // (which it logs, as every other one): then exit code 1.
  return (*helper)->Wait(signals);
}
