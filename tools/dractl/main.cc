// dractl: plays the kubelet's part against DRA kubelet plugins, to register
// them, prepare and unprepare claims and watch device health by hand.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "dractl/kubelet_client.h"
#include "dractl/sanity.h"

namespace {

namespace kc = dra::kubeletclient;
using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

constexpr char kUsage[] = R"(Usage: dractl <command> [flags]

Plays the kubelet's part against DRA kubelet plugins.

Commands:
  register   --registry-dir DIR [--json]
             Registers every plugin socket in DIR as the kubelet does: GetInfo,
             validation, NotifyRegistrationStatus.
  prepare    --endpoint SOCK --claim NS/NAME/UID [--claim ...] [--api v1|v1beta1] [--json]
             Calls NodePrepareResources and prints each claim's devices and CDI IDs.
  unprepare  --endpoint SOCK --claim NS/NAME/UID [--claim ...] [--api v1|v1beta1] [--json]
             Calls NodeUnprepareResources.
  health     --endpoint SOCK [--api v1|v1alpha1] [--count N] [--timeout SECONDS] [--json]
             Watches NodeWatchResources and prints N device health lists
             (default 1), waiting at most SECONDS (default 10) for each.
  sanity     --registry-dir DIR [--driver NAME] [--kubeconfig FILE] [--node NAME]
             [--namespace NS] [--cdi-dir DIR] [--pid PID] [--wait SECONDS]
             [--concurrency N] [--junit FILE] [--list] [-- PLUGIN COMMAND...]
             Checks a DRA kubelet plugin against what the kubelet expects of
             it (docs/sanity.md). It starts the plugin's command, if given
             after "--" (its output goes to stderr), registers the plugin found
             in DIR (waiting up to --wait, default 60, for it to appear), creates
             claims in NS (default: a namespace of its own) on the API server
             of FILE (default $KUBECONFIG, then in-cluster), allocates them to
             devices the driver published for the node, prepares and
             unprepares them, reads the health stream and the CDI specs in
             --cdi-dir (default /var/run/cdi) and, with --pid or a command,
             sends SIGTERM and checks that the plugin exits and removes its
             sockets.
             --list prints the checks and exits. Exit status 1 when a
             required check failed.
  help       Prints this text.

SOCK is the path of the plugin's DRA socket. --api defaults to v1.
--json prints one JSON document per line instead of text.

Exit status: 0 on success, 1 when a step or a claim failed, 2 on usage errors.
)";

int UsageError(absl::string_view message) {
  std::cerr << "dractl: " << message << "\n\n" << kUsage;
  return kExitUsage;
}

// Reports a failure that ends the command. With --json, stdout also gets
// {"error": ...} so that it always holds JSON.
int Fail(bool as_json, const absl::Status& status) {
  std::cerr << "dractl: " << status.message() << "\n";
  if (as_json) std::cout << json{{"error", std::string(status.message())}}.dump() << "\n";
  return kExitFailed;
}

// The flags of one command: "--name value" or "--name=value" for valued
// flags, a bare "--name" for switches.
class Flags {
 public:
  static absl::StatusOr<Flags> Parse(std::span<const std::string> args, const std::set<std::string>& valued,
                                     const std::set<std::string>& switches) {
    Flags flags;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--") {
        flags.command_.assign(args.begin() + static_cast<ptrdiff_t>(i) + 1, args.end());
        if (flags.command_.empty()) return absl::InvalidArgumentError("no command after \"--\"");
        break;
      }
      std::string name = args[i];
      std::optional<std::string> value;
      if (const size_t equals = name.find('='); name.starts_with("--") && equals != std::string::npos) {
        value = name.substr(equals + 1);
        name.resize(equals);
      }
      if (switches.contains(name)) {
        if (value) return absl::InvalidArgumentError(absl::StrCat(name, " takes no value"));
        flags.values_[name];
        continue;
      }
      if (!valued.contains(name))
        return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", args[i], "\""));
      if (!value) {
        if (++i == args.size()) return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
        value = args[i];
      }
      flags.values_[name].push_back(*value);
    }
    return flags;
  }

  bool Has(const std::string& name) const { return values_.contains(name); }

  // The last value given for `name`, or `fallback`.
  std::string Get(const std::string& name, const std::string& fallback = "") const {
    const auto it = values_.find(name);
    return it == values_.end() || it->second.empty() ? fallback : it->second.back();
  }

  std::vector<std::string> GetAll(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>() : it->second;
  }

  // What followed "--".
  const std::vector<std::string>& command() const { return command_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> command_;
};

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

int RunRegister(const Flags& flags) {
  const std::string dir = flags.Get("--registry-dir");
  if (dir.empty()) return UsageError("register needs --registry-dir");
  const bool as_json = flags.Has("--json");

  const absl::StatusOr<std::vector<std::string>> sockets = kc::DiscoverSockets(dir);
  if (!sockets.ok()) return Fail(as_json, sockets.status());
  std::vector<kc::Registration> registrations;
  for (const std::string& socket : *sockets) registrations.push_back(kc::RegisterPlugin(socket));

  if (as_json) {
    json plugins = json::array();
    for (const kc::Registration& r : registrations) {
      plugins.push_back({{"socket", r.socket_path},
                         {"type", r.info.type},
                         {"name", r.info.name},
                         {"endpoint", r.info.endpoint},
                         {"supported_versions", r.info.supported_versions},
                         {"service", r.chosen_service},
                         {"registered", r.status.ok()},
                         {"error", std::string(r.status.message())}});
    }
    std::cout << json{{"registry_dir", dir}, {"plugins", plugins}}.dump() << "\n";
  } else {
    if (registrations.empty()) std::cout << "no registration sockets in " << dir << "\n";
    for (const kc::Registration& r : registrations) {
      std::cout << r.socket_path << "\n"
                << "  name:     " << OrDash(r.info.name) << "\n"
                << "  endpoint: " << OrDash(r.info.endpoint) << "\n"
                << "  service:  " << OrDash(r.chosen_service) << "\n"
                << "  result:   " << (r.status.ok() ? "registered" : absl::StrCat("failed: ", r.status.message()))
                << "\n";
    }
  }
  const bool all_registered =
      std::all_of(registrations.begin(), registrations.end(), [](const auto& r) { return r.status.ok(); });
  return all_registered ? kExitOk : kExitFailed;
}

// What prepare and unprepare take.
struct ClaimCall {
  std::string endpoint;
  std::vector<dra::k8s::ClaimRef> claims;
  kc::DraApi api = kc::DraApi::kV1;
  std::string api_name;
  bool as_json = false;
};

absl::StatusOr<ClaimCall> ParseClaimCall(const Flags& flags) {
  ClaimCall call;
  call.endpoint = flags.Get("--endpoint");
  if (call.endpoint.empty()) return absl::InvalidArgumentError("--endpoint is required");
  for (const std::string& text : flags.GetAll("--claim")) {
    absl::StatusOr<dra::k8s::ClaimRef> claim = kc::ParseClaimArg(text);
    if (!claim.ok()) return claim.status();
    call.claims.push_back(*std::move(claim));
  }
  if (call.claims.empty()) return absl::InvalidArgumentError("at least one --claim NS/NAME/UID is required");
  call.api_name = flags.Get("--api", "v1");
  if (call.api_name == "v1") {
    call.api = kc::DraApi::kV1;
  } else if (call.api_name == "v1beta1") {
    call.api = kc::DraApi::kV1beta1;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--api must be v1 or v1beta1, not \"", call.api_name, "\""));
  }
  call.as_json = flags.Has("--json");
  return call;
}

std::string ClaimLabel(const dra::k8s::ClaimRef& claim) { return absl::StrCat(claim.ToString(), " (", claim.uid, ")"); }

json ClaimJson(const dra::k8s::ClaimRef& claim, const std::string& error) {
  json out = {{"namespace", claim.namespace_}, {"name", claim.name}, {"uid", claim.uid}, {"ok", error.empty()}};
  if (!error.empty()) out["error"] = error;
  return out;
}

// The kubelet treats a claim missing from the response as failed and retries.
constexpr char kMissingClaimError[] = "no result for this claim in the response";

// Prints the closing summary of prepare/unprepare and returns the exit code.
int FinishClaimCall(const ClaimCall& call, absl::string_view method, int failed, json claims) {
  if (call.as_json) {
    std::cout << json{{"endpoint", call.endpoint}, {"api", call.api_name}, {"claims", std::move(claims)}}.dump()
              << "\n";
  }
  if (failed == 0) return kExitOk;
  std::cerr << "dractl: " << call.endpoint << ": " << method << ": " << failed << " of " << call.claims.size()
            << " claims failed\n";
  return kExitFailed;
}

int RunPrepare(const Flags& flags) {
  const absl::StatusOr<ClaimCall> call = ParseClaimCall(flags);
  if (!call.ok()) return UsageError(call.status().message());
  const absl::StatusOr<std::map<std::string, kc::PrepareOutcome>> outcomes =
      kc::DraClient::Create(call->endpoint)->NodePrepareResources(call->api, call->claims);
  if (!outcomes.ok()) return Fail(call->as_json, outcomes.status());

  int failed = 0;
  json claims = json::array();
  for (const dra::k8s::ClaimRef& claim : call->claims) {
    const auto it = outcomes->find(claim.uid);
    const std::string error = it == outcomes->end() ? kMissingClaimError : it->second.error;
    json claim_json = ClaimJson(claim, error);
    if (!error.empty()) {
      ++failed;
      if (!call->as_json) std::cout << ClaimLabel(claim) << ": failed: " << error << "\n";
      claims.push_back(std::move(claim_json));
      continue;
    }
    if (!call->as_json) std::cout << ClaimLabel(claim) << ": prepared\n";
    claim_json["devices"] = json::array();
    for (const kc::PreparedDevice& device : it->second.devices) {
      json device_json = {{"requests", device.request_names},
                          {"pool", device.pool_name},
                          {"device", device.device_name},
                          {"cdi_device_ids", device.cdi_device_ids}};
      if (device.share_id) device_json["share_id"] = *device.share_id;
      claim_json["devices"].push_back(std::move(device_json));
      if (!call->as_json) {
        std::cout << "  " << device.pool_name << "/" << device.device_name << " requests=["
                  << absl::StrJoin(device.request_names, ",") << "] cdi=[" << absl::StrJoin(device.cdi_device_ids, ",")
                  << "]";
        if (device.share_id) std::cout << " share_id=" << *device.share_id;
        std::cout << "\n";
      }
    }
    claims.push_back(std::move(claim_json));
  }
  return FinishClaimCall(*call, "NodePrepareResources", failed, std::move(claims));
}

int RunUnprepare(const Flags& flags) {
  const absl::StatusOr<ClaimCall> call = ParseClaimCall(flags);
  if (!call.ok()) return UsageError(call.status().message());
  const absl::StatusOr<std::map<std::string, std::string>> errors =
      kc::DraClient::Create(call->endpoint)->NodeUnprepareResources(call->api, call->claims);
  if (!errors.ok()) return Fail(call->as_json, errors.status());

  int failed = 0;
  json claims = json::array();
  for (const dra::k8s::ClaimRef& claim : call->claims) {
    const auto it = errors->find(claim.uid);
    const std::string error = it == errors->end() ? kMissingClaimError : it->second;
    if (!error.empty()) ++failed;
    claims.push_back(ClaimJson(claim, error));
    if (!call->as_json) {
      std::cout << ClaimLabel(claim) << ": " << (error.empty() ? "unprepared" : "failed: " + error) << "\n";
    }
  }
  return FinishClaimCall(*call, "NodeUnprepareResources", failed, std::move(claims));
}

void PrintHealthList(int number, const std::vector<kc::DeviceHealthEntry>& devices, bool as_json) {
  if (as_json) {
    json list = json::array();
    for (const kc::DeviceHealthEntry& d : devices) {
      list.push_back({{"pool", d.pool_name},
                      {"device", d.device_name},
                      {"health", d.health},
                      {"message", d.message},
                      {"last_updated_time", d.last_updated_time},
                      {"health_check_timeout_seconds", d.health_check_timeout_seconds}});
    }
    std::cout << json{{"devices", std::move(list)}}.dump() << std::endl;
    return;
  }
  std::cout << "health list " << number << ": " << devices.size() << (devices.size() == 1 ? " device\n" : " devices\n");
  for (const kc::DeviceHealthEntry& d : devices) {
    std::cout << "  " << d.pool_name << "/" << d.device_name << ": " << d.health << " (updated "
              << absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(d.last_updated_time),
                                  absl::UTCTimeZone());
    if (d.health_check_timeout_seconds > 0) std::cout << ", timeout " << d.health_check_timeout_seconds << "s";
    std::cout << ")";
    if (!d.message.empty()) std::cout << " " << d.message;
    std::cout << "\n";
  }
  std::cout.flush();
}

int RunHealth(const Flags& flags) {
  const std::string endpoint = flags.Get("--endpoint");
  if (endpoint.empty()) return UsageError("--endpoint is required");
  const std::string api_name = flags.Get("--api", "v1");
  kc::HealthApi api;
  if (api_name == "v1") {
    api = kc::HealthApi::kV1;
  } else if (api_name == "v1alpha1") {
    api = kc::HealthApi::kV1alpha1;
  } else {
    return UsageError(absl::StrCat("--api must be v1 or v1alpha1, not \"", api_name, "\""));
  }
  int count = 0;
  if (!absl::SimpleAtoi(flags.Get("--count", "1"), &count) || count < 1) {
    return UsageError("--count must be a positive integer");
  }
  double timeout_seconds = 0;
  if (!absl::SimpleAtod(flags.Get("--timeout", "10"), &timeout_seconds) || !(timeout_seconds > 0)) {
    return UsageError("--timeout must be a positive number of seconds");
  }
  const bool as_json = flags.Has("--json");

  const std::unique_ptr<kc::DraClient> client = kc::DraClient::Create(endpoint);
  absl::StatusOr<std::unique_ptr<kc::HealthStream>> stream = client->WatchHealth(api);
  if (!stream.ok()) return Fail(as_json, stream.status());
  for (int number = 1; number <= count; ++number) {
    const absl::StatusOr<std::vector<kc::DeviceHealthEntry>> devices = (*stream)->Next(absl::Seconds(timeout_seconds));
    if (!devices.ok()) return Fail(as_json, devices.status());
    PrintHealthList(number, *devices, as_json);
  }
  return kExitOk;
}

int RunSanity(const Flags& flags) {
  namespace sanity = dra::sanity;
  if (flags.Has("--list")) {
    for (const sanity::Check& check : sanity::Checks()) {
      std::cout << absl::StrFormat("%-6s %-11s %s\n       from: %s\n", check.id,
                                   check.level == sanity::Level::kRequired ? "required" : "recommended", check.rule,
                                   check.source);
    }
    return kExitOk;
  }
  sanity::Options options;
  options.registry_dir = flags.Get("--registry-dir");
  if (options.registry_dir.empty()) return UsageError("sanity needs --registry-dir");
  options.driver = flags.Get("--driver");
  options.kubeconfig = flags.Get("--kubeconfig");
  options.node = flags.Get("--node");
  options.namespace_ = flags.Get("--namespace");
  options.cdi_dir = flags.Get("--cdi-dir", options.cdi_dir);
  if (flags.Has("--pid") && (!absl::SimpleAtoi(flags.Get("--pid"), &options.pid) || options.pid <= 0)) {
    return UsageError("--pid must be a process ID");
  }
  options.command = flags.command();
  if (options.pid > 0 && !options.command.empty()) return UsageError("give --pid or a command, not both");
  double wait_seconds = 0;
  if (!absl::SimpleAtod(flags.Get("--wait", "60"), &wait_seconds) || !(wait_seconds > 0)) {
    return UsageError("--wait must be a positive number of seconds");
  }
  options.wait = absl::Seconds(wait_seconds);
  if (!absl::SimpleAtoi(flags.Get("--concurrency", "8"), &options.concurrency) || options.concurrency < 1) {
    return UsageError("--concurrency must be a positive integer");
  }

  const absl::Time start = absl::Now();
  const absl::StatusOr<std::vector<sanity::Result>> results =
      sanity::Run(options, [](const sanity::Result& result) { sanity::WriteResult(std::cout, result); });
  if (!results.ok()) return Fail(false, results.status());
  sanity::WriteSummary(std::cout, *results);
  if (const std::string junit = flags.Get("--junit"); !junit.empty()) {
    std::ofstream file(junit);
    file << sanity::JUnitXml(*results, absl::Now() - start);
    if (!file.flush()) return Fail(false, absl::UnavailableError(absl::StrCat("write ", junit)));
  }
  return sanity::Failed(*results) ? kExitFailed : kExitOk;
}

struct Command {
  std::string name;
  std::set<std::string> valued_flags;
  int (*run)(const Flags&);
  std::set<std::string> switches = {"--json"};
};

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"register", {"--registry-dir"}, RunRegister},
      {"prepare", {"--endpoint", "--claim", "--api"}, RunPrepare},
      {"unprepare", {"--endpoint", "--claim", "--api"}, RunUnprepare},
      {"health", {"--endpoint", "--api", "--count", "--timeout"}, RunHealth},
      {"sanity",
       {"--registry-dir", "--driver", "--kubeconfig", "--node", "--namespace", "--cdi-dir", "--pid", "--wait",
        "--concurrency", "--junit"},
       RunSanity,
       {"--list"}},
  };
  return commands;
}

bool IsHelp(const std::string& arg) { return arg == "help" || arg == "--help" || arg == "-h"; }

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return UsageError("no command given");
  const std::span<const std::string> command_args(args.begin() + 1, args.end());
  // A plugin's command after "--" may have its own --help.
  const auto own_args_end = std::find(command_args.begin(), command_args.end(), "--");
  if (IsHelp(args[0]) || std::any_of(command_args.begin(), own_args_end,
                                     [](const std::string& arg) { return arg == "--help" || arg == "-h"; })) {
    std::cout << kUsage;
    return kExitOk;
  }
  const auto command = std::find_if(Commands().begin(), Commands().end(),
                                    [&](const Command& candidate) { return candidate.name == args[0]; });
  if (command == Commands().end()) return UsageError(absl::StrCat("unknown command \"", args[0], "\""));
  const absl::StatusOr<Flags> flags = Flags::Parse(command_args, command->valued_flags, command->switches);
  if (!flags.ok()) return UsageError(flags.status().message());
  if (!flags->command().empty() && command->name != "sanity") {
    return UsageError(absl::StrCat(command->name, " takes no command after \"--\""));
  }
  return command->run(*flags);
}
