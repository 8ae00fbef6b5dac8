#include "dractl/sanity.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "dra/cdi/qualified_name.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/k8s/names.h"
#include "dractl/cdi_lookup.h"
#include "dractl/kubelet_client.h"
#include "dractl/plugin_process.h"

namespace dra::sanity {
namespace {

namespace kc = dra::kubeletclient;
using nlohmann::json;

constexpr Check kChecks[] = {
    {"REG-1", Level::kRequired, "the registry directory holds a registration socket of the driver",
     "pkg/kubelet/pluginmanager/pluginwatcher/plugin_watcher.go"},
    {"REG-2", Level::kRequired,
     "GetInfo answers type DRAPlugin and a driver name that is a DNS subdomain of at most 63 characters",
     "pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go (handler by type); "
     "pkg/apis/resource/validation (driver names)"},
    {"REG-3", Level::kRequired, "the supported versions name v1.DRAPlugin or v1beta1.DRAPlugin, newest first",
     "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go (validateSupportedServices: the first one known is used)"},
    {"REG-4", Level::kRequired, "the endpoint is an absolute path to a Unix socket",
     "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go (add: dials unix:<endpoint>)"},
    {"REG-5", Level::kRequired, "NotifyRegistrationStatus is answered",
     "pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go"},
    {"REG-6", Level::kRequired, "the DRA service answers as soon as the registration socket exists",
     "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go (add: connects at registration, calls at once)"},
    {"PRE-1", Level::kRequired, "NodePrepareResources answers every claim it is sent",
     "pkg/kubelet/cm/dra/manager.go (prepareResources: \"NodePrepareResources skipped %d ResourceClaims\")"},
    {"PRE-2", Level::kRequired, "an allocated claim is prepared, with devices and requests of its allocation",
     "pkg/kubelet/cm/dra/manager.go (prepareResources)"},
    {"PRE-3", Level::kRequired,
     "its CDI IDs are vendor/class=name and each resolves to one valid spec in the CDI directory",
     "tags.cncf.io/container-device-interface pkg/cdi (the runtime's CDI cache)"},
    {"PRE-4", Level::kRequired, "preparing it again gives the same devices and CDI IDs",
     "pkg/kubelet/cm/dra/manager.go (prepares again after a kubelet restart)"},
    {"PRE-5", Level::kRequired, "v1beta1 gives the same answer as v1",
     "pkg/kubelet/cm/dra/plugin/dra_plugin.go (servicesSupportedByKubelet: either may be chosen)"},
    {"PRE-6", Level::kRequired, "a claim without allocation is refused",
     "k8s.io/dynamic-resource-allocation/kubeletplugin (\"not allocated\")"},
    {"PRE-7", Level::kRequired, "a claim whose UID is not the API server's is refused",
     "k8s.io/dynamic-resource-allocation/kubeletplugin (\"got replaced\")"},
    {"PRE-8", Level::kRequired, "a claim the API server does not have is refused",
     "k8s.io/dynamic-resource-allocation/kubeletplugin (\"retrieve claim\")"},
    {"PRE-9", Level::kRequired, "a claim allocated only to another driver's devices gets none of this driver's",
     "pkg/kubelet/cm/dra/manager.go (devices are recorded per driver)"},
    {"PRE-10", Level::kRecommended, "a refused claim fails alone: the other claim of the call is prepared",
     "pkg/kubelet/pkg/apis/dra/v1/api.proto (NodePrepareResourceResponse.error, per claim)"},
    {"PRE-11", Level::kRequired, "concurrent calls are each answered as when alone",
     "pkg/kubelet/cm/dra/manager.go (pods of a node start in parallel)"},
    {"PRE-12", Level::kRecommended,
     "a device held by a prepared claim is refused for an unrelated claim, and prepared for it once unprepared",
     "k8s.io/dynamic-resource-allocation/kubeletplugin v0.38 (DRAPlugin.PrepareResourceClaims: the driver is the "
     "last line of defence after a force deletion)"},
    {"UNP-1", Level::kRequired, "unprepare of a prepared claim succeeds, and succeeds again",
     "pkg/kubelet/cm/dra/manager.go (unprepareResourcesForPod: retried until it succeeds)"},
    {"UNP-2", Level::kRequired, "unprepare of a claim never prepared succeeds",
     "pkg/kubelet/cm/dra/manager.go (unprepares claims of its checkpoint after a restart)"},
    {"UNP-3", Level::kRequired, "unprepare succeeds after the claim was deleted from the API server",
     "pkg/kubelet/cm/dra/manager.go (unprepares from its claim cache, not the API server)"},
    {"HLT-1", Level::kRequired, "an advertised health service streams a list of devices first, never Unimplemented",
     "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go (pickHealthService; Unimplemented ends the stream)"},
    {"HLT-2", Level::kRecommended, "that list covers every device the driver published for the node",
     "pkg/kubelet/cm/dra/healthinfo.go (updateHealthInfo: a device left out times out to Unknown)"},
    {"HLT-3", Level::kRecommended, "health messages fit in 1024 bytes",
     "pkg/kubelet/cm/dra/manager.go (truncateHealthMessage: v1.ResourceHealthMessageMaxLength)"},
    {"HLT-4", Level::kRequired, "the list is sent again within each device's health check timeout (30 s by default)",
     "pkg/kubelet/cm/dra/healthinfo.go (getHealthInfo: an entry older than its timeout reads Unknown)"},
    {"FIL-1", Level::kRequired, "the registration and DRA sockets are not writable by other users",
     "whoever may connect may prepare devices for any claim"},
    {"FIL-2", Level::kRequired, "the CDI spec files are not writable by group or others",
     "the runtime applies their edits to containers as root"},
    {"SIG-1", Level::kRequired, "on SIGTERM the plugin exits and removes its registration socket",
     "pkg/kubelet/pluginmanager/pluginwatcher/plugin_watcher.go (a removed socket deregisters the plugin)"},
    {"SIG-2", Level::kRecommended, "on SIGTERM the plugin removes its DRA socket",
     "a stale socket answers nothing; the next instance must remove it first"},
};

// The kubelet gives each call this long (defaultClientCallTimeout).
constexpr absl::Duration kCallTimeout = absl::Seconds(45);
constexpr char kV1Health[] = "v1.DRAResourceHealth";
constexpr char kV1alpha1Health[] = "v1alpha1.DRAResourceHealth";
constexpr size_t kHealthMessageMaxLength = 1024;
// The kubelet's DefaultHealthTimeout, for entries without one of their own.
constexpr absl::Duration kKubeletHealthTimeout = absl::Seconds(30);
constexpr char kDeviceClass[] = "dra-sanity.example.com";
constexpr char kOtherDriver[] = "other-driver.dra-sanity.example.com";
const k8s::ResourceRef kNamespaces{"", "v1", "namespaces", false};

std::string RandomSuffix() {
  std::random_device random;
  constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string suffix;
  for (int i = 0; i < 6; ++i) suffix += kAlphabet[random() % (sizeof(kAlphabet) - 1)];
  return suffix;
}

struct PublishedDevice {
  std::string pool;
  std::string device;
  auto operator<=>(const PublishedDevice&) const = default;
};

std::string DeviceList(const std::vector<kc::PreparedDevice>& devices) {
  std::vector<std::string> parts;
  for (const kc::PreparedDevice& d : devices) {
    parts.push_back(absl::StrCat(d.pool_name, "/", d.device_name, " requests=[", absl::StrJoin(d.request_names, ","),
                                 "] cdi=[", absl::StrJoin(d.cdi_device_ids, ","), "]"));
  }
  std::sort(parts.begin(), parts.end());
  return parts.empty() ? "no devices" : absl::StrJoin(parts, "; ");
}

// The outcome of one claim in a call: the call's error, the claim's error,
// or its devices.
struct ClaimAnswer {
  absl::Status call;     // the gRPC call failed as a whole
  bool missing = false;  // the response had no entry for the claim
  std::string error;     // the claim's error
  std::vector<kc::PreparedDevice> devices;

  bool prepared() const { return call.ok() && !missing && error.empty(); }
  std::string Describe() const {
    if (!call.ok()) return absl::StrCat("the call failed: ", call.message());
    if (missing) return "the response had no result for the claim";
    if (!error.empty()) return absl::StrCat("refused: ", error);
    return absl::StrCat("prepared: ", DeviceList(devices));
  }
};

class SanityRun {
 public:
  SanityRun(const Options& options, std::function<void(const Result&)> progress)
      : options_(options), progress_(std::move(progress)) {}

  absl::StatusOr<std::vector<Result>> Run();

 private:
  void Record(std::string_view id, Outcome outcome, std::string detail = "");
  void Pass(std::string_view id, std::string detail = "") { Record(id, Outcome::kPass, std::move(detail)); }
  void Fail(std::string_view id, std::string detail) { Record(id, Outcome::kFail, std::move(detail)); }
  void Skip(std::string_view id, std::string detail) { Record(id, Outcome::kSkip, std::move(detail)); }
  bool Decided(std::string_view id) const { return results_.contains(std::string(id)); }

  bool Register();
  absl::Status ConnectApi();
  absl::Status FindDevices();
  absl::StatusOr<k8s::ClaimRef> CreateClaim(const std::string& name, std::vector<PublishedDevice> devices,
                                            const std::string& driver);
  // One answer per claim, in the order of `claims`, from one call.
  std::vector<ClaimAnswer> PrepareAll(kc::DraApi api, const std::vector<k8s::ClaimRef>& claims);
  ClaimAnswer Prepare(kc::DraApi api, const k8s::ClaimRef& claim) { return PrepareAll(api, {claim})[0]; }
  std::string Unprepare(const k8s::ClaimRef& claim);

  void CheckPrepare();
  void CheckRefusals(const k8s::ClaimRef& good);
  void CheckConcurrency();
  void CheckExclusivity();
  void CheckUnprepare(const k8s::ClaimRef& good);
  void CheckCdi(const std::vector<kc::PreparedDevice>& devices);
  void CheckHealth();
  void CheckFiles();
  void CheckTermination();
  void CleanUp();

  const Options& options_;
  const std::function<void(const Result&)> progress_;
  std::map<std::string, Result> results_;
  size_t reported_ = 0;  // kChecks before this index went to progress_

  std::optional<PluginProcess> plugin_;  // options_.pid, or the child started from options_.command
  kc::PluginInfo info_;
  std::string registration_socket_;
  kc::DraApi api_ = kc::DraApi::kV1;
  std::unique_ptr<kc::DraClient> dra_;
  std::shared_ptr<k8s::Client> client_;
  std::string namespace_;
  bool created_namespace_ = false;
  std::string node_;
  std::vector<PublishedDevice> devices_;
  std::vector<k8s::ClaimRef> claims_;
  std::set<std::string> cdi_spec_files_;
  dra::Mutex unanswered_mu_;  // PrepareAll runs on several threads in PRE-11
  std::vector<std::string> unanswered_ ABSL_GUARDED_BY(unanswered_mu_);
};

void SanityRun::Record(std::string_view id, Outcome outcome, std::string detail) {
  if (Decided(id)) return;
  const auto check = std::find_if(std::begin(kChecks), std::end(kChecks), [&](const Check& c) { return c.id == id; });
  results_.emplace(std::string(id), Result{.check = check, .outcome = outcome, .detail = std::move(detail)});
  // Reported in the order of kChecks, each as soon as those before it are.
  while (reported_ < std::size(kChecks) && Decided(kChecks[reported_].id)) {
    progress_(results_.at(kChecks[reported_].id));
    ++reported_;
  }
}

// Finds the driver's registration socket, waiting for it to appear, and
// registers it. Returns whether the DRA endpoint is usable.
bool SanityRun::Register() {
  const absl::Time deadline = absl::Now() + options_.wait;
  bool first_look = true;
  bool present_at_start = false;
  // Sockets of other plugins, not asked again unless re-created: socket ->
  // (inode, driver name).
  std::map<std::string, std::pair<ino_t, std::string>> other_plugins;
  while (registration_socket_.empty()) {
    absl::StatusOr<std::vector<std::string>> sockets = kc::DiscoverSockets(options_.registry_dir);
    if (!sockets.ok()) {
      Fail("REG-1", std::string(sockets.status().message()));
      return false;
    }
    std::vector<std::pair<std::string, kc::PluginInfo>> candidates;
    for (const std::string& socket : *sockets) {
      struct stat info {};
      if (stat(socket.c_str(), &info) != 0) continue;
      const auto it = other_plugins.find(socket);
      if (it != other_plugins.end() && it->second.first == info.st_ino) continue;
      // A socket that does not answer yet (bound, not yet served) or any
      // more (its plugin is gone) is asked again on the next look.
      absl::StatusOr<kc::PluginInfo> plugin = kc::GetPluginInfo(socket, absl::Seconds(5));
      if (!plugin.ok()) continue;
      if (options_.driver.empty() ? plugin->type == "DRAPlugin" : plugin->name == options_.driver) {
        candidates.emplace_back(socket, *std::move(plugin));
      } else {
        other_plugins[socket] = {info.st_ino, plugin->name};
      }
    }
    if (candidates.size() > 1) {
      std::vector<std::string> names;
      for (const auto& [socket, plugin] : candidates) names.push_back(absl::StrCat(plugin.name, " (", socket, ")"));
      Fail("REG-1", absl::StrCat("several DRA plugins in ", options_.registry_dir, ": ", absl::StrJoin(names, ", "),
                                 "; choose one with --driver"));
      return false;
    }
    if (candidates.size() == 1) {
      registration_socket_ = candidates[0].first;
      info_ = std::move(candidates[0].second);
      present_at_start = first_look;
      break;
    }
    if (first_look && !options_.command.empty()) {
      absl::StatusOr<PluginProcess> started = PluginProcess::Start(options_.command);
      if (!started.ok()) {
        Fail("REG-1", std::string(started.status().message()));
        return false;
      }
      plugin_.emplace(*std::move(started));
    }
    first_look = false;
    if (plugin_ && !plugin_->how().empty()) {
      Fail("REG-1", absl::StrCat("the plugin ", plugin_->how(), " before its registration socket appeared"));
      return false;
    }
    if (absl::Now() > deadline) {
      std::string detail =
          absl::StrCat("no registration socket of ", options_.driver.empty() ? "a DRA plugin" : options_.driver, " in ",
                       options_.registry_dir, " within ", absl::FormatDuration(options_.wait));
      for (const auto& [socket, plugin] : other_plugins) {
        absl::StrAppend(&detail, "; found ", plugin.second, " (", socket, ")");
      }
      Fail("REG-1", std::move(detail));
      return false;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  Pass("REG-1", registration_socket_);

  // The kubelet uses the first of the plugin's services it knows.
  const std::vector<std::string>& versions = info_.supported_versions;
  const auto chosen = std::find_if(versions.begin(), versions.end(), [](const std::string& service) {
    return service == "v1.DRAPlugin" || service == "v1beta1.DRAPlugin";
  });
  if (chosen != versions.end() && *chosen == "v1beta1.DRAPlugin") api_ = kc::DraApi::kV1beta1;

  // At once, as the kubelet would: the plugin's DRA socket must answer now.
  dra_ = kc::DraClient::Create(info_.endpoint);
  if (present_at_start) {
    Skip("REG-6", "the plugin was registered before dractl sanity started; start sanity first to check this");
  } else if (const auto answer = dra_->NodePrepareResources(api_, {}, kCallTimeout); !answer.ok()) {
    Fail("REG-6", absl::StrCat("the first call after the registration socket appeared: ", answer.status().message()));
  } else {
    Pass("REG-6");
  }

  std::vector<std::string> name_problems = k8s::IsDns1123Subdomain(info_.name);
  if (info_.name.size() > 63) name_problems.push_back("must be no more than 63 characters");
  if (info_.type != "DRAPlugin") {
    Fail("REG-2", absl::StrCat("type \"", info_.type, "\": the kubelet has no handler for it"));
  } else if (!name_problems.empty()) {
    Fail("REG-2", absl::StrCat("name \"", info_.name, "\": ", absl::StrJoin(name_problems, "; ")));
  } else {
    Pass("REG-2", info_.name);
  }

  const auto v1 = std::find(versions.begin(), versions.end(), "v1.DRAPlugin");
  const auto v1beta1 = std::find(versions.begin(), versions.end(), "v1beta1.DRAPlugin");
  if (chosen == versions.end()) {
    Fail("REG-3", absl::StrCat("[", absl::StrJoin(versions, ", "),
                               "]: none of v1.DRAPlugin and v1beta1.DRAPlugin, the services the kubelet knows"));
  } else if (v1 != versions.end() && v1beta1 < v1) {
    Fail("REG-3", absl::StrCat("[", absl::StrJoin(versions, ", "),
                               "]: v1beta1 is listed first, so the kubelet uses it rather than v1"));
  } else {
    Pass("REG-3", absl::StrJoin(versions, ", "));
  }

  struct stat endpoint {};
  if (!info_.endpoint.starts_with("/")) {
    Fail("REG-4", absl::StrCat("endpoint \"", info_.endpoint, "\" is not an absolute path"));
  } else if (stat(info_.endpoint.c_str(), &endpoint) != 0) {
    Fail("REG-4", absl::StrCat(info_.endpoint, ": ", std::strerror(errno)));
  } else if (!S_ISSOCK(endpoint.st_mode)) {
    Fail("REG-4", absl::StrCat(info_.endpoint, ": not a Unix socket"));
  } else {
    Pass("REG-4", info_.endpoint);
  }

  const kc::Registration registration = kc::RegisterPlugin(registration_socket_);
  if (registration.status.ok()) {
    Pass("REG-5");
  } else {
    Fail("REG-5", std::string(registration.status.message()));
  }
  return results_.at("REG-4").outcome == Outcome::kPass && chosen != versions.end();
}

absl::Status SanityRun::ConnectApi() {
  absl::StatusOr<k8s::ClientConfig> config = k8s::LoadDefaultConfig(options_.kubeconfig);
  if (!config.ok()) return config.status();
  config->user_agent = "dractl-sanity";
  absl::StatusOr<std::shared_ptr<k8s::Client>> client = k8s::Client::Create(*std::move(config));
  if (!client.ok()) return client.status();
  client_ = *std::move(client);
  return absl::OkStatus();
}

// The devices the driver published for the node, newest generation of each
// pool, waiting for them to appear.
absl::Status SanityRun::FindDevices() {
  const absl::Time deadline = absl::Now() + options_.wait;
  while (true) {
    k8s::ListOptions list;
    list.field_selector = absl::StrCat("spec.driver=", info_.name);
    absl::StatusOr<k8s::ListResult> slices = client_->ListAll(k8s::kResourceSlices, "", list);
    if (!slices.ok()) return slices.status();
    std::set<std::string> nodes;
    std::map<std::string, std::pair<int64_t, std::vector<PublishedDevice>>> pools;
    for (const json& slice : slices->items) {
      const json& spec = slice.at("spec");
      const std::string node = spec.value("nodeName", "");
      if (spec.value("driver", "") != info_.name) continue;
      if (!options_.node.empty() && node != options_.node) continue;
      if (!node.empty()) nodes.insert(node);
      const std::string pool = spec.at("pool").value("name", "");
      const int64_t generation = spec.at("pool").value("generation", int64_t{0});
      auto& [pool_generation, pool_devices] = pools[pool];
      if (generation < pool_generation) continue;
      if (generation > pool_generation) pool_devices.clear();
      pool_generation = generation;
      for (const json& device : spec.value("devices", json::array())) {
        pool_devices.push_back({pool, device.value("name", "")});
      }
    }
    if (nodes.size() > 1) {
      return absl::FailedPreconditionError(absl::StrCat("driver ", info_.name, " published devices of nodes ",
                                                        absl::StrJoin(nodes, ", "), ": choose one with --node"));
    }
    devices_.clear();
    for (auto& [pool, entry] : pools) devices_.insert(devices_.end(), entry.second.begin(), entry.second.end());
    if (!devices_.empty()) {
      node_ = nodes.empty() ? options_.node : *nodes.begin();
      return absl::OkStatus();
    }
    if (absl::Now() > deadline) {
      return absl::NotFoundError(absl::StrCat("no ResourceSlice of driver ", info_.name,
                                              options_.node.empty() ? "" : " on node " + options_.node,
                                              " lists a device (waited ", absl::FormatDuration(options_.wait), ")"));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

// Creates a claim with one request per device and, unless `devices` is
// empty, allocates them (to `driver`) in its status, as the scheduler would.
absl::StatusOr<k8s::ClaimRef> SanityRun::CreateClaim(const std::string& name, std::vector<PublishedDevice> devices,
                                                     const std::string& driver) {
  json requests = json::array();
  json results = json::array();
  for (size_t i = 0; i < std::max<size_t>(devices.size(), 1); ++i) {
    const std::string request = absl::StrCat("req-", i);
    requests.push_back({{"name", request}, {"exactly", {{"deviceClassName", kDeviceClass}}}});
    if (i < devices.size()) {
      results.push_back(
          {{"request", request}, {"driver", driver}, {"pool", devices[i].pool}, {"device", devices[i].device}});
    }
  }
  const json claim = {{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceClaim"},
                      {"metadata", {{"name", name}, {"namespace", namespace_}}},
                      {"spec", {{"devices", {{"requests", requests}}}}}};
  absl::StatusOr<json> created = client_->Create(k8s::kResourceClaims, namespace_, claim);
  if (!created.ok()) return created.status();
  k8s::ClaimRef result{.namespace_ = namespace_, .name = name, .uid = (*created)["metadata"].value("uid", "")};
  claims_.push_back(result);
  if (!results.empty()) {
    (*created)["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
    if (absl::StatusOr<json> allocated = client_->UpdateStatus(k8s::kResourceClaims, namespace_, *created);
        !allocated.ok()) {
      return allocated.status();
    }
  }
  return result;
}

std::vector<ClaimAnswer> SanityRun::PrepareAll(kc::DraApi api, const std::vector<k8s::ClaimRef>& claims) {
  std::vector<ClaimAnswer> answers(claims.size());
  absl::StatusOr<std::map<std::string, kc::PrepareOutcome>> outcomes =
      dra_->NodePrepareResources(api, claims, kCallTimeout);
  for (size_t i = 0; i < claims.size(); ++i) {
    if (!outcomes.ok()) {
      answers[i].call = outcomes.status();
      continue;
    }
    const auto it = outcomes->find(claims[i].uid);
    if (it == outcomes->end()) {
      answers[i].missing = true;
      dra::MutexLock lock(&unanswered_mu_);
      unanswered_.push_back(absl::StrCat("no result for claim ", claims[i].ToString(), " (", claims[i].uid, ")"));
      continue;
    }
    answers[i].error = it->second.error;
    answers[i].devices = it->second.devices;
  }
  return answers;
}

// The error of unpreparing `claim`, empty on success.
std::string SanityRun::Unprepare(const k8s::ClaimRef& claim) {
  const k8s::ClaimRef claims[] = {claim};
  absl::StatusOr<std::map<std::string, std::string>> errors = dra_->NodeUnprepareResources(api_, claims, kCallTimeout);
  if (!errors.ok()) return absl::StrCat("the call failed: ", errors.status().message());
  const auto it = errors->find(claim.uid);
  if (it == errors->end()) return "the response had no result for the claim";
  return it->second;
}

// Whether two answers name the same devices, requests and CDI IDs, in any order.
bool SameDevices(const std::vector<kc::PreparedDevice>& a, const std::vector<kc::PreparedDevice>& b) {
  const auto keys = [](const std::vector<kc::PreparedDevice>& devices) {
    std::vector<std::string> keys;
    for (const kc::PreparedDevice& d : devices) {
      std::vector<std::string> requests = d.request_names;
      std::vector<std::string> ids = d.cdi_device_ids;
      std::sort(requests.begin(), requests.end());
      std::sort(ids.begin(), ids.end());
      keys.push_back(absl::StrCat(d.pool_name, "/", d.device_name, "|", absl::StrJoin(requests, ","), "|",
                                  absl::StrJoin(ids, ",")));
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  return keys(a) == keys(b);
}

void SanityRun::CheckPrepare() {
  absl::StatusOr<k8s::ClaimRef> good = CreateClaim("sanity-prepare", {devices_[0]}, info_.name);
  if (!good.ok()) {
    Fail("PRE-2", absl::StrCat("creating the claim: ", good.status().message()));
    return;
  }
  const ClaimAnswer first = Prepare(api_, *good);
  if (!first.prepared()) {
    Fail("PRE-2",
         absl::StrCat(good->ToString(), " on ", devices_[0].pool, "/", devices_[0].device, ": ", first.Describe()));
    return;
  }
  std::vector<std::string> wrong;
  for (const kc::PreparedDevice& device : first.devices) {
    if (device.pool_name != devices_[0].pool || device.device_name != devices_[0].device) {
      wrong.push_back(absl::StrCat("device ", device.pool_name, "/", device.device_name, " is not allocated"));
    }
    for (const std::string& request : device.request_names) {
      if (request != "req-0") wrong.push_back(absl::StrCat("request \"", request, "\" is not in the claim"));
    }
  }
  if (wrong.empty()) {
    Pass("PRE-2", DeviceList(first.devices));
  } else {
    Fail("PRE-2", absl::StrJoin(wrong, "; "));
  }
  CheckCdi(first.devices);

  const ClaimAnswer again = Prepare(api_, *good);
  if (!again.prepared()) {
    Fail("PRE-4", again.Describe());
  } else if (!SameDevices(first.devices, again.devices)) {
    Fail("PRE-4", absl::StrCat("first ", DeviceList(first.devices), ", then ", DeviceList(again.devices)));
  } else {
    Pass("PRE-4");
  }

  const bool v1 = std::count(info_.supported_versions.begin(), info_.supported_versions.end(), "v1.DRAPlugin");
  const bool v1beta1 =
      std::count(info_.supported_versions.begin(), info_.supported_versions.end(), "v1beta1.DRAPlugin");
  if (!v1 || !v1beta1) {
    Skip("PRE-5", "the plugin advertises one DRA service");
  } else {
    const ClaimAnswer beta = Prepare(kc::DraApi::kV1beta1, *good);
    if (!beta.prepared()) {
      Fail("PRE-5", absl::StrCat("v1beta1: ", beta.Describe()));
    } else if (!SameDevices(first.devices, beta.devices)) {
      Fail("PRE-5", absl::StrCat("v1: ", DeviceList(first.devices), "; v1beta1: ", DeviceList(beta.devices)));
    } else {
      Pass("PRE-5");
    }
  }

  CheckRefusals(*good);
  CheckUnprepare(*good);
}

void SanityRun::CheckRefusals(const k8s::ClaimRef& good) {
  const auto refused = [&](std::string_view id, const absl::StatusOr<k8s::ClaimRef>& claim, const k8s::ClaimRef& sent) {
    if (!claim.ok()) {
      Fail(id, absl::StrCat("creating the claim: ", claim.status().message()));
      return;
    }
    const ClaimAnswer answer = Prepare(api_, sent);
    if (answer.prepared()) {
      Fail(id, absl::StrCat(sent.ToString(), ": ", answer.Describe()));
    } else {
      Pass(id, answer.Describe());
    }
  };

  const absl::StatusOr<k8s::ClaimRef> unallocated = CreateClaim("sanity-unallocated", {}, info_.name);
  refused("PRE-6", unallocated, unallocated.ok() ? *unallocated : k8s::ClaimRef{});

  k8s::ClaimRef replaced = good;
  replaced.uid = "00000000-0000-4000-8000-000000000001";
  refused("PRE-7", good, replaced);

  refused(
      "PRE-8", good,
      k8s::ClaimRef{.namespace_ = namespace_, .name = "sanity-missing", .uid = "00000000-0000-4000-8000-000000000002"});

  const absl::StatusOr<k8s::ClaimRef> other =
      CreateClaim("sanity-other-driver", {{"other-pool", "other-device"}}, kOtherDriver);
  if (!other.ok()) {
    Fail("PRE-9", absl::StrCat("creating the claim: ", other.status().message()));
  } else {
    const ClaimAnswer answer = Prepare(api_, *other);
    if (answer.prepared() && !answer.devices.empty()) {
      Fail("PRE-9", answer.Describe());
    } else {
      Pass("PRE-9", answer.Describe());
    }
    if (answer.prepared()) Unprepare(*other);
  }

  if (!unallocated.ok()) {
    Skip("PRE-10", "no unallocated claim to send");
  } else {
    const std::vector<ClaimAnswer> answers = PrepareAll(api_, {good, *unallocated});
    const ClaimAnswer& good_answer = answers[0];
    const ClaimAnswer& bad_answer = answers[1];
    if (!good_answer.prepared() || bad_answer.prepared()) {
      Fail("PRE-10", absl::StrCat("a call with ", good.ToString(), " and the unallocated ", unallocated->ToString(),
                                  ": the first ", good_answer.Describe(), "; the second ", bad_answer.Describe()));
    } else {
      Pass("PRE-10");
    }
  }
}

void SanityRun::CheckUnprepare(const k8s::ClaimRef& good) {
  const std::string first = Unprepare(good);
  const std::string second = first.empty() ? Unprepare(good) : "";
  if (!first.empty()) {
    Fail("UNP-1", absl::StrCat(good.ToString(), ": ", first));
  } else if (!second.empty()) {
    Fail("UNP-1", absl::StrCat(good.ToString(), ", the second time: ", second));
  } else {
    Pass("UNP-1");
  }

  const k8s::ClaimRef unknown{
      .namespace_ = namespace_, .name = "sanity-never-prepared", .uid = "00000000-0000-4000-8000-000000000003"};
  if (const std::string error = Unprepare(unknown); !error.empty()) {
    Fail("UNP-2", error);
  } else {
    Pass("UNP-2");
  }

  absl::StatusOr<k8s::ClaimRef> deleted = CreateClaim("sanity-deleted", {devices_[0]}, info_.name);
  if (!deleted.ok()) {
    Fail("UNP-3", absl::StrCat("creating the claim: ", deleted.status().message()));
    return;
  }
  if (const ClaimAnswer answer = Prepare(api_, *deleted); !answer.prepared()) {
    Skip("UNP-3", absl::StrCat("the claim was not prepared: ", answer.Describe()));
    return;
  }
  if (absl::Status gone = client_->Delete(k8s::kResourceClaims, namespace_, deleted->name); !gone.ok()) {
    Fail("UNP-3", absl::StrCat("deleting the claim: ", gone.message()));
    return;
  }
  if (const std::string error = Unprepare(*deleted); !error.empty()) {
    Fail("UNP-3", error);
  } else {
    Pass("UNP-3");
  }
}

// Concurrent prepares of claims on different devices (or, with one device,
// of one claim), each answered as the same claim alone is; then concurrent
// unprepares.
void SanityRun::CheckConcurrency() {
  std::vector<k8s::ClaimRef> claims;
  const size_t distinct = std::min<size_t>(devices_.size(), static_cast<size_t>(options_.concurrency));
  for (size_t i = 0; i < distinct; ++i) {
    absl::StatusOr<k8s::ClaimRef> claim = CreateClaim(absl::StrCat("sanity-concurrent-", i), {devices_[i]}, info_.name);
    if (!claim.ok()) {
      Fail("PRE-11", absl::StrCat("creating the claim: ", claim.status().message()));
      return;
    }
    claims.push_back(*std::move(claim));
  }
  std::vector<ClaimAnswer> answers(static_cast<size_t>(options_.concurrency));
  {
    std::vector<std::jthread> callers;
    for (size_t i = 0; i < answers.size(); ++i) {
      callers.emplace_back([&, i] { answers[i] = Prepare(api_, claims[i % claims.size()]); });
    }
  }
  std::vector<std::string> problems;
  std::map<size_t, const ClaimAnswer*> first_of_claim;
  for (size_t i = 0; i < answers.size(); ++i) {
    const k8s::ClaimRef& claim = claims[i % claims.size()];
    if (!answers[i].prepared()) {
      problems.push_back(absl::StrCat(claim.ToString(), ": ", answers[i].Describe()));
      continue;
    }
    const auto [first, inserted] = first_of_claim.emplace(i % claims.size(), &answers[i]);
    if (!inserted && !SameDevices(first->second->devices, answers[i].devices)) {
      problems.push_back(absl::StrCat(claim.ToString(), ": ", DeviceList(first->second->devices), " and ",
                                      DeviceList(answers[i].devices)));
    }
  }
  std::vector<std::string> unprepare_errors(answers.size());
  {
    std::vector<std::jthread> callers;
    for (size_t i = 0; i < answers.size(); ++i) {
      callers.emplace_back([&, i] { unprepare_errors[i] = Unprepare(claims[i % claims.size()]); });
    }
  }
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!unprepare_errors[i].empty()) {
      problems.push_back(absl::StrCat(claims[i % claims.size()].ToString(), ": unprepare: ", unprepare_errors[i]));
    }
  }
  if (problems.empty()) {
    Pass("PRE-11", absl::StrCat(answers.size(), " callers, ", claims.size(), " claims"));
  } else {
    Fail("PRE-11", absl::StrJoin(problems, "; "));
  }
}

// Two unrelated claims allocated the same device (no shareID, no
// adminAccess), as a force-deleted pod's claim and its replacement's.
void SanityRun::CheckExclusivity() {
  const absl::StatusOr<k8s::ClaimRef> holder = CreateClaim("sanity-holder", {devices_[0]}, info_.name);
  const absl::StatusOr<k8s::ClaimRef> second = CreateClaim("sanity-second", {devices_[0]}, info_.name);
  if (!holder.ok() || !second.ok()) {
    Fail("PRE-12", absl::StrCat("creating the claims: ", (holder.ok() ? second.status() : holder.status()).message()));
    return;
  }
  const std::string device = absl::StrCat(devices_[0].pool, "/", devices_[0].device);
  if (const ClaimAnswer held = Prepare(api_, *holder); !held.prepared()) {
    Skip("PRE-12", absl::StrCat(holder->ToString(), " on ", device, " was not prepared: ", held.Describe()));
    return;
  }
  const ClaimAnswer refused = Prepare(api_, *second);
  const std::string unprepared = Unprepare(*holder);
  const ClaimAnswer after = unprepared.empty() ? Prepare(api_, *second) : ClaimAnswer{};
  if (refused.prepared() || after.prepared()) Unprepare(*second);
  if (refused.prepared()) {
    Fail("PRE-12", absl::StrCat(second->ToString(), " on ", device, " while ", holder->ToString(),
                                " holds it: ", refused.Describe()));
  } else if (!unprepared.empty()) {
    Fail("PRE-12", absl::StrCat("unprepare of ", holder->ToString(), ": ", unprepared));
  } else if (!after.prepared()) {
    Fail("PRE-12",
         absl::StrCat(second->ToString(), " after ", holder->ToString(), " was unprepared: ", after.Describe()));
  } else {
    Pass("PRE-12", refused.Describe());
  }
}

void SanityRun::CheckCdi(const std::vector<kc::PreparedDevice>& devices) {
  std::vector<std::string> ids;
  for (const kc::PreparedDevice& device : devices) {
    ids.insert(ids.end(), device.cdi_device_ids.begin(), device.cdi_device_ids.end());
  }
  if (ids.empty()) {
    Skip("PRE-3", "the prepared devices have no CDI IDs");
    return;
  }
  const CdiDirectory cdi_dir = ReadCdiDirectory(options_.cdi_dir);
  std::vector<std::string> problems;
  if (!cdi_dir.error.empty()) problems.push_back(cdi_dir.error);
  for (const std::string& id : ids) {
    if (absl::StatusOr<cdi::QualifiedName> name = cdi::ParseQualifiedName(id); !name.ok()) {
      problems.push_back(absl::StrCat("\"", id, "\": ", name.status().message()));
      continue;
    }
    const std::vector<std::string> files = cdi_dir.Resolve(id);
    if (files.empty()) {
      problems.push_back(absl::StrCat(id, ": no valid spec in ", options_.cdi_dir, " defines it"));
    } else if (files.size() > 1) {
      problems.push_back(absl::StrCat(id, ": defined by ", absl::StrJoin(files, " and "), " (a conflict)"));
    }
    cdi_spec_files_.insert(files.begin(), files.end());
  }
  if (problems.empty()) {
    Pass("PRE-3", absl::StrJoin(ids, ", "));
    return;
  }
  if (!cdi_dir.invalid.empty()) {
    problems.push_back(absl::StrCat("invalid spec files: ", absl::StrJoin(cdi_dir.invalid, "; ")));
  }
  Fail("PRE-3", absl::StrJoin(problems, "; "));
}

void SanityRun::CheckHealth() {
  const auto advertised = [&](const char* service) {
    return std::count(info_.supported_versions.begin(), info_.supported_versions.end(), service) > 0;
  };
  std::optional<kc::HealthApi> api;
  if (advertised(kV1Health)) {
    api = kc::HealthApi::kV1;
  } else if (advertised(kV1alpha1Health)) {
    api = kc::HealthApi::kV1alpha1;
  }
  if (!api) {
    for (const char* id : {"HLT-1", "HLT-2", "HLT-3", "HLT-4"}) {
      Skip(id, "the plugin advertises no DRAResourceHealth service");
    }
    return;
  }
  absl::StatusOr<std::unique_ptr<kc::HealthStream>> stream = dra_->WatchHealth(*api);
  absl::StatusOr<std::vector<kc::DeviceHealthEntry>> first =
      stream.ok() ? (*stream)->Next(options_.wait) : stream.status();
  if (!first.ok()) {
    Fail("HLT-1", std::string(first.status().message()));
    return;
  }
  Pass("HLT-1", absl::StrCat(first->size(), " devices"));

  std::set<PublishedDevice> reported;
  std::vector<std::string> long_messages;
  for (const kc::DeviceHealthEntry& entry : *first) {
    reported.insert({entry.pool_name, entry.device_name});
    if (entry.message.size() > kHealthMessageMaxLength) {
      long_messages.push_back(
          absl::StrCat(entry.pool_name, "/", entry.device_name, ": ", entry.message.size(), " bytes"));
    }
  }
  std::vector<std::string> missing;
  for (const PublishedDevice& device : devices_) {
    if (!reported.contains(device)) missing.push_back(absl::StrCat(device.pool, "/", device.device));
  }
  if (devices_.empty()) {
    Skip("HLT-2", "no published devices to compare with");
  } else if (!missing.empty()) {
    Fail("HLT-2", absl::StrCat("not in the list: ", absl::StrJoin(missing, ", ")));
  } else {
    Pass("HLT-2");
  }
  if (long_messages.empty()) {
    Pass("HLT-3");
  } else {
    Fail("HLT-3", absl::StrJoin(long_messages, "; "));
  }

  // The smallest timeout of the listed devices, each its own or the kubelet's.
  absl::Duration stale_after = absl::InfiniteDuration();
  for (const kc::DeviceHealthEntry& entry : *first) {
    stale_after =
        std::min(stale_after, entry.health_check_timeout_seconds > 0 ? absl::Seconds(entry.health_check_timeout_seconds)
                                                                     : kKubeletHealthTimeout);
  }
  if (first->empty()) {
    Pass("HLT-4", "the list names no device that could go stale");
    return;
  }
  const absl::Time first_seen = absl::Now();
  const absl::StatusOr<std::vector<kc::DeviceHealthEntry>> again = (*stream)->Next(stale_after);
  if (again.ok()) {
    Pass("HLT-4", absl::StrCat("again after ",
                               absl::FormatDuration(absl::Trunc(absl::Now() - first_seen, absl::Milliseconds(100)))));
  } else {
    Fail("HLT-4", absl::StrCat("no list within ", absl::FormatDuration(stale_after),
                               " of the first (the smallest health check timeout of its devices); the kubelet then "
                               "reads them as Unknown: ",
                               again.status().message()));
  }
}

void SanityRun::CheckFiles() {
  std::vector<std::string> writable;
  for (const std::string& socket : {registration_socket_, info_.endpoint}) {
    struct stat info {};
    if (stat(socket.c_str(), &info) == 0 && (info.st_mode & S_IWOTH) != 0) {
      writable.push_back(absl::StrFormat("%s (mode %04o)", socket, info.st_mode & 07777));
    }
  }
  if (writable.empty()) {
    Pass("FIL-1");
  } else {
    Fail("FIL-1", absl::StrCat("writable by others: ", absl::StrJoin(writable, ", ")));
  }

  if (cdi_spec_files_.empty()) {
    Skip("FIL-2", "no CDI spec file was found for the prepared devices");
    return;
  }
  writable.clear();
  for (const std::string& file : cdi_spec_files_) {
    struct stat info {};
    if (stat(file.c_str(), &info) == 0 && (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      writable.push_back(absl::StrFormat("%s (mode %04o)", file, info.st_mode & 07777));
    }
  }
  if (writable.empty()) {
    Pass("FIL-2", absl::StrJoin(cdi_spec_files_, ", "));
  } else {
    Fail("FIL-2", absl::StrCat("writable by group or others: ", absl::StrJoin(writable, ", ")));
  }
}

void SanityRun::CheckTermination() {
  if (!plugin_) {
    Skip("SIG-1", "neither --pid nor the plugin's command given");
    Skip("SIG-2", "neither --pid nor the plugin's command given");
    return;
  }
  if (plugin_->Exited()) {
    Fail("SIG-1", absl::StrCat("the plugin ", plugin_->how().empty() ? "had exited" : plugin_->how(),
                               " before it was sent SIGTERM"));
    Skip("SIG-2", "the plugin had exited");
    return;
  }
  if (kill(plugin_->pid(), SIGTERM) != 0) {
    Fail("SIG-1", absl::StrCat("kill(", plugin_->pid(), ", SIGTERM): ", std::strerror(errno)));
    return;
  }
  const absl::Time deadline = absl::Now() + options_.wait;
  while (!plugin_->Exited() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  if (!plugin_->Exited()) {
    Fail("SIG-1", absl::StrCat("process ", plugin_->pid(), " still runs ", absl::FormatDuration(options_.wait),
                               " after SIGTERM"));
    Skip("SIG-2", "the plugin did not exit");
    return;
  }
  const auto present = [](const std::string& path) {
    struct stat info {};
    return lstat(path.c_str(), &info) == 0;
  };
  const std::string how = plugin_->how().empty() ? "exited" : plugin_->how();
  if (present(registration_socket_)) {
    Fail("SIG-1", absl::StrCat("the plugin ", how, "; ", registration_socket_, " is left behind"));
  } else {
    Pass("SIG-1", how);
  }
  if (present(info_.endpoint)) {
    Fail("SIG-2", absl::StrCat(info_.endpoint, " is left behind"));
  } else {
    Pass("SIG-2");
  }
}

void SanityRun::CleanUp() {
  if (!client_) return;
  for (const k8s::ClaimRef& claim : claims_) {
    if (dra_) Unprepare(claim);
    (void)client_->Delete(k8s::kResourceClaims, namespace_, claim.name);
  }
  if (created_namespace_) (void)client_->Delete(kNamespaces, "", namespace_);
}

absl::StatusOr<std::vector<Result>> SanityRun::Run() {
  if (absl::Status connected = ConnectApi(); !connected.ok()) return connected;
  if (options_.pid > 0) plugin_.emplace(PluginProcess::Adopt(options_.pid));
  namespace_ = options_.namespace_;
  if (namespace_.empty()) {
    namespace_ = absl::StrCat("dra-sanity-", RandomSuffix());
    const json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", namespace_}}}};
    if (absl::StatusOr<json> created = client_->Create(kNamespaces, "", ns); !created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat("create namespace ", namespace_, ": ", created.status().message(),
                                       " (give an existing one with --namespace)"));
    }
    created_namespace_ = true;
  }

  std::string not_reached;
  if (!Register()) {
    not_reached = "the plugin has no usable DRA endpoint (see REG-1..REG-4)";
  } else if (absl::Status found = FindDevices(); !found.ok()) {
    not_reached = std::string(found.message());
    Fail("PRE-2", not_reached);
  } else {
    CheckPrepare();
    CheckConcurrency();
    CheckExclusivity();
    dra::MutexLock lock(&unanswered_mu_);
    if (unanswered_.empty()) {
      Pass("PRE-1");
    } else {
      Fail("PRE-1", absl::StrJoin(unanswered_, "; "));
    }
    CheckHealth();
  }
  if (!registration_socket_.empty()) CheckFiles();
  CleanUp();
  if (!registration_socket_.empty()) CheckTermination();
  plugin_.reset();  // a child still running is killed

  std::vector<Result> results;
  for (const Check& check : kChecks) {
    Skip(check.id, "not reached: " + not_reached);
    results.push_back(results_.at(check.id));
  }
  return results;
}

}  // namespace

std::span<const Check> Checks() { return kChecks; }

absl::StatusOr<std::vector<Result>> Run(const Options& options, const std::function<void(const Result&)>& progress) {
  return SanityRun(options, progress).Run();
}

}  // namespace dra::sanity
