#include "binding_controller.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/node_plugin_main.h"
#include "dra/flags.h"
#include "dra/k8s/client_flags.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"

namespace gpu {
namespace {

namespace rc = dra::resourceclaim;

constexpr char kProgram[] = "dra-example-controller";
constexpr char kBindingConditions[] = "BindingConditions";

// The reference's BindingConditions plugin: the devices are simulated, so
// each one is ready as soon as it is allocated; a vendor checks the device
// here. Its reason and message are the reference's.
class ReadyWhenAllocated : public rc::BindingHandler {
 public:
  rc::BindingResult PrepareForBinding(const dra::CallContext&, const dra::k8s::ResourceClaim&,
                                      const dra::k8s::DeviceRequestAllocationResult&) override {
    return rc::BindingResult::Ready("Ready", "Device is ready");
  }
};

}  // namespace

int RunBindingController(int argc, char** argv) {
  dra::FlagSet flags(kProgram,
                     "dra-example-driver's claim controller: runs its plugins on the ResourceClaims allocated to "
                     "the driver, in the whole cluster.");
  std::string driver_name = "gpu.example.com";
  std::vector<std::string> plugins;
  dra::k8s::ClientFlags client_flags;
  flags.String("driver-name", &driver_name, "the driver name to filter ResourceClaims by");
  flags.Custom("enable-plugin", "name", "none",
               absl::StrCat("a plugin to run (repeat the flag, or separate names by ','): ", kBindingConditions), "",
               [&plugins](const std::string& text) {
                 for (absl::string_view name : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
                   if (name != kBindingConditions) {
                     return absl::InvalidArgumentError(
                         absl::StrCat("unknown plugin \"", name, "\" (available: ", kBindingConditions, ")"));
                   }
                   plugins.emplace_back(name);
                 }
                 return absl::OkStatus();
               });
  client_flags.Register(flags);
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  dra::kubeletplugin::TerminationSignals signals;
  const dra::Logger logger = client_flags.MakeLogger();
  absl::StatusOr<std::shared_ptr<dra::k8s::Client>> client =
      client_flags.MakeClient(absl::StrCat(driver_name, "/controller"));
  if (!client.ok()) return example::Fail(kProgram, "start", client.status());

  // One reconciler for the cluster (BindingScope::kAllNodes): the reference's
  // controller watches every claim from one Deployment.
  ReadyWhenAllocated handler;
  std::unique_ptr<rc::BindingConditionReconciler> reconciler;
  if (!plugins.empty()) {
    rc::BindingConditionReconcilerOptions options;
    options.driver_name = driver_name;
    options.scope = rc::BindingScope::kAllNodes;
    options.logger = logger;
    absl::StatusOr<std::unique_ptr<rc::BindingConditionReconciler>> started =
        rc::BindingConditionReconciler::Start(*client, options, handler);
    if (!started.ok()) return example::Fail(kProgram, "--enable-plugin=BindingConditions", started.status());
    reconciler = *std::move(started);
  }
  logger.Info("Controller started", {{"driver", driver_name}, {"plugins", absl::StrJoin(plugins, ",")}});
  signals.Wait();
  if (reconciler != nullptr) reconciler->Stop();
  return 0;
}

}  // namespace gpu
