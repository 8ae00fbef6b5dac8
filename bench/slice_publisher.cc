// bench_slice_publisher publishes N devices on one node through
// dra::resourceslice::Publisher: the dra-cpp side of
// bench/publisher_go_vs_cpp.sh, whose Go side is bench/gosdk/cmd/publisher
// (the Go resourceslice controller). Both take the same flags and the same
// commands, so the script drives them alike. Public API only.
//
//   bench_slice_publisher --kubeconfig FILE --node NAME [--nodes N]
//     [--driver NAME] [--devices N | --slices FILE] [--publish-at-start]
//     [--binding-reconciler none|node|central] [--qps Q --burst B]
//
// --nodes N (bench/scale): N simulated nodes NAME-0..NAME-<N-1> instead of
// the one node NAME, each with a client of its own (its own connections and
// rate limiter), a publisher and watches of its own, as N real nodes'
// drivers would have. Every command applies to all of them.
//
// --slices FILE: the pool's slices are the spec.devices and
// spec.sharedCounters of the items of FILE (a ResourceSliceList as JSON,
// bench/scale's bench_gpu_slices prints the example GPU driver's), the same
// on every node, instead of the --devices devices below.
//
// --publish-at-start: the publishers' first Update has the devices, as a
// driver restarted by a rollout does; "ready" then waits until they are idle.
//
// --binding-reconciler node: every simulated node also runs a
// resourceclaim::BindingConditionReconciler (BindingScope::kThisNode) on its
// client, as the example GPU driver's node plugin does with --fabric-attach;
// central: one reconciler for all nodes (kAllNodes) on a client of its own,
// as its --fabric-controller does. Their handler answers Ready. "idle" then
// also waits for them.
//
// The devices: "gpu-00000".."gpu-<N-1>", each with the attributes model
// (string "a100"), index (int), driverVersion (version "1.2.3") and healthy
// (bool true) and the capacity memory (80Gi); one node-local pool named after
// the node (owner: the Node, whose UID the publisher looks up), cut into
// slices by SplitIntoSlices (at most 128 of these devices each).
//
// Commands on stdin, one per line; one JSON line on stdout answers each:
//   publish    give the publisher all devices (Update)
//   change K   toggle the model of K devices ("h100" -> "a100", anything
//              else -> "h100"): device N/K/2 + i*N/K for i < K of the N
//              devices in slice order (K=1: the middle device; K=100: every
//              100th device from the 50th), then Update
//   idle       wait until Publisher::Idle() has held for 500 ms without a break
//   quit       stop the publisher and exit
// publish and change answer {"update_ns": <CLOCK_REALTIME just before the
// first node's Update>, "updated_ns": <just after the last node's>};
// idle answers {"idle_ns": ..., "creates", "updates", "deletes", "errors"}.
// "ready" is printed once the publisher was started and given an empty
// DriverResources (with --publish-at-start: the devices), and is idle (it has
// listed and watches its slices), as the Go controller is when StartController
// returns.
//
// Everything is the SDK's default (Options: drift repair 2 s after a watch
// event, backoff; ClientConfig: qps 10, burst 64) except --qps/--burst
// (0 keeps the defaults; a negative qps disables the rate limit).

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "dra/k8s/device_attributes.h"
#include "dra/k8s/quantity.h"
#include "dra/k8s/resource_slice_json.h"
#include "dra/resourceclaim/binding_condition_reconciler.h"
#include "dra/resourceslice/publisher.h"
#include "dra/resourceslice/split.h"

namespace {

constexpr absl::Duration kQuietPeriod = absl::Milliseconds(500);

[[noreturn]] void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "bench_slice_publisher: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

dra::k8s::Device Gpu(int i) {
  dra::k8s::Device device;
  device.name = absl::StrFormat("gpu-%05d", i);
  device.attributes["model"].string_value = "a100";
  device.attributes["index"].int_value = i;
  device.attributes["driverVersion"].version_value = "1.2.3";
  device.attributes["healthy"].bool_value = true;
  device.capacity["memory"].value =
      dra::k8s::Quantity::FromInt(int64_t{80} << 30, dra::k8s::Quantity::Format::kBinarySI);
  return device;
}

int64_t RealtimeNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Reply(const std::string& line) { std::cout << line << '\n' << std::flush; }

std::vector<dra::resourceslice::Slice> SyntheticSlices(int devices) {
  std::vector<dra::k8s::Device> list;
  list.reserve(static_cast<size_t>(devices));
  for (int i = 0; i < devices; ++i) list.push_back(Gpu(i));
  return dra::resourceslice::SplitIntoSlices(std::move(list));
}

absl::StatusOr<std::vector<dra::resourceslice::Slice>> SlicesFromFile(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json list = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!in || !list.is_object() || !list.contains("items") || !list["items"].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a ResourceSliceList as JSON"));
  }
  std::vector<dra::resourceslice::Slice> slices;
  for (const nlohmann::json& item : list["items"]) {
    absl::StatusOr<dra::k8s::ResourceSlice> slice = dra::k8s::ResourceSliceFromJson(item);
    if (!slice.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", slice.status().message()));
    slices.push_back({std::move(slice->spec.devices), std::move(slice->spec.shared_counters)});
  }
  if (slices.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no items"));
  return slices;
}

class ReadyAtOnce : public dra::resourceclaim::BindingHandler {
 public:
  dra::resourceclaim::BindingResult PrepareForBinding(const dra::CallContext&, const dra::k8s::ResourceClaim&,
                                                      const dra::k8s::DeviceRequestAllocationResult&) override {
    return dra::resourceclaim::BindingResult::Ready();
  }
};

std::unique_ptr<dra::resourceclaim::BindingConditionReconciler> StartReconciler(
    std::shared_ptr<dra::k8s::Client> client, const std::string& driver, const std::string& node,
    dra::resourceclaim::BindingHandler& handler) {
  dra::resourceclaim::BindingConditionReconcilerOptions options;
  options.driver_name = driver;
  options.node_name = node;
  if (node.empty()) options.scope = dra::resourceclaim::BindingScope::kAllNodes;
  auto reconciler = dra::resourceclaim::BindingConditionReconciler::Start(std::move(client), options, handler);
  if (!reconciler.ok()) Die("start the binding-condition reconciler", reconciler.status());
  return *std::move(reconciler);
}

// One simulated node: its own client, publisher and (--binding-reconciler
// node) reconciler.
struct Node {
  std::string name;
  std::unique_ptr<dra::resourceslice::Publisher> publisher;
  std::unique_ptr<dra::resourceclaim::BindingConditionReconciler> reconciler;
};

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig, node_name, driver = "gpu.example.com", slices_file, binding = "none";
  int devices = 10000, nodes = 1;
  bool publish_at_start = false;
  double qps = 0;
  int burst = 0;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (const auto it = std::find(args.begin(), args.end(), "--publish-at-start"); it != args.end()) {
    publish_at_start = true;
    args.erase(it);
  }
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& flag = args[i];
    const char* value = args[i + 1].c_str();
    if (flag == "--kubeconfig") {
      kubeconfig = value;
    } else if (flag == "--node") {
      node_name = value;
    } else if (flag == "--nodes" && absl::SimpleAtoi(value, &nodes) && nodes > 0) {
    } else if (flag == "--driver") {
      driver = value;
    } else if (flag == "--devices" && absl::SimpleAtoi(value, &devices) && devices > 0) {
    } else if (flag == "--slices") {
      slices_file = value;
    } else if (flag == "--binding-reconciler" &&
               (args[i + 1] == "none" || args[i + 1] == "node" || args[i + 1] == "central")) {
      binding = value;
    } else if (flag == "--qps" && absl::SimpleAtod(value, &qps)) {
    } else if (flag == "--burst" && absl::SimpleAtoi(value, &burst) && burst >= 0) {
    } else {
      kubeconfig.clear();
      break;
    }
  }
  if (kubeconfig.empty() || node_name.empty() || args.size() % 2 == 1) {
    std::fprintf(stderr,
                 "usage: %s --kubeconfig FILE --node NAME [--nodes N] [--driver NAME] [--devices N | --slices FILE] "
                 "[--publish-at-start] [--binding-reconciler none|node|central] [--qps Q --burst B]\n",
                 argv[0]);
    return 2;
  }

  std::vector<dra::resourceslice::Slice> slices;
  if (slices_file.empty()) {
    slices = SyntheticSlices(devices);
  } else {
    absl::StatusOr<std::vector<dra::resourceslice::Slice>> from_file = SlicesFromFile(slices_file);
    if (!from_file.ok()) Die("--slices", from_file.status());
    slices = *std::move(from_file);
  }
  std::vector<std::string*> models;  // the model attribute of every device, in slice order
  for (dra::resourceslice::Slice& slice : slices) {
    for (dra::k8s::Device& device : slice.devices) {
      dra::k8s::DeviceAttribute& model = device.attributes["model"];
      if (!model.string_value.has_value()) model = dra::k8s::StringAttribute("");
      models.push_back(&*model.string_value);
    }
  }

  absl::StatusOr<dra::k8s::ClientConfig> config = dra::k8s::LoadKubeconfig(kubeconfig);
  if (!config.ok()) Die("load the kubeconfig", config.status());
  if (qps != 0) config->qps = qps;
  if (burst != 0) config->burst = burst;
  ReadyAtOnce ready_at_once;
  std::unique_ptr<dra::resourceclaim::BindingConditionReconciler> central;
  if (binding == "central") {
    auto client = dra::k8s::Client::Create(*config);
    if (!client.ok()) Die("create the client", client.status());
    central = StartReconciler(*client, driver, "", ready_at_once);
  }
  std::vector<Node> simulated(static_cast<size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    Node& node = simulated[static_cast<size_t>(i)];
    node.name = nodes == 1 ? node_name : absl::StrCat(node_name, "-", i);
    auto client = dra::k8s::Client::Create(*config);
    if (!client.ok()) Die("create the client", client.status());
    dra::resourceslice::Options options;
    options.driver_name = driver;
    options.node_name = node.name;
    auto publisher = dra::resourceslice::Publisher::Start(*client, options, nullptr);  // errors: logged, counted
    if (!publisher.ok()) Die("start the publisher", publisher.status());
    node.publisher = *std::move(publisher);
    if (binding == "node") node.reconciler = StartReconciler(*client, driver, node.name, ready_at_once);
  }

  const auto idle = [&] {
    if (central != nullptr && !central->Idle()) return false;
    for (const Node& node : simulated) {
      if (!node.publisher->Idle() || (node.reconciler != nullptr && !node.reconciler->Idle())) return false;
    }
    return true;
  };
  const auto wait_idle = [&] {
    absl::Time since = absl::Now();
    while (absl::Now() - since < kQuietPeriod) {
      absl::SleepFor(absl::Milliseconds(5));
      if (!idle()) since = absl::Now();
    }
  };
  // In a cluster every node's driver calls Update on its own CPU; here one
  // thread calls it for every node while the nodes it already woke (3 threads
  // each) compete with it for the same cores: 1,000 nodes' last Update
  // returned 0.5 s after the first began, where the Go simulator's loop takes
  // 0.2-0.4 s (scale.sh reports both). The thread runs ahead of them while
  // it hands out the changes (Linux: nice applies to the calling thread;
  // refused without CAP_SYS_NICE, and then it runs as before).
  const auto update = [&] {
    const int64_t now = RealtimeNs();
    setpriority(PRIO_PROCESS, 0, -10);
    for (Node& node : simulated) {
      dra::resourceslice::DriverResources desired;
      desired.pools[node.name].slices = slices;
      node.publisher->Update(std::move(desired));
    }
    const int64_t done = RealtimeNs();
    setpriority(PRIO_PROCESS, 0, 0);
    return absl::StrFormat(R"({"update_ns":%d,"updated_ns":%d})", now, done);
  };
  if (publish_at_start) {
    update();
  } else {
    for (Node& node : simulated) node.publisher->Update({});
  }
  const auto stop = [&] {
    if (central != nullptr) central->Stop();
    for (Node& node : simulated) {
      if (node.reconciler != nullptr) node.reconciler->Stop();
      node.publisher->Stop();
    }
  };
  wait_idle();
  Reply(absl::StrFormat(R"({"ready":true,"pid":%d})", getpid()));

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    if (!(words >> command)) continue;
    if (command == "publish") {
      Reply(update());
    } else if (command == "change") {
      int k = 0;
      if (!(words >> k) || k <= 0 || static_cast<size_t>(k) > models.size()) {
        Reply(R"({"error":"change K: K from 1 to the number of devices"})");
        continue;
      }
      const size_t step = models.size() / static_cast<size_t>(k);
      for (size_t i = 0; i < static_cast<size_t>(k); ++i) {
        std::string& model = *models[step / 2 + i * step];
        model = model == "h100" ? "a100" : "h100";
      }
      Reply(update());
    } else if (command == "idle") {
      wait_idle();
      dra::resourceslice::PublisherStats total;
      for (const Node& node : simulated) {
        const dra::resourceslice::PublisherStats stats = node.publisher->Stats();
        total.creates += stats.creates;
        total.updates += stats.updates;
        total.deletes += stats.deletes;
        total.errors += stats.errors;
      }
      Reply(absl::StrFormat(R"({"idle_ns":%d,"creates":%d,"updates":%d,"deletes":%d,"errors":%d})", RealtimeNs(),
                            total.creates, total.updates, total.deletes, total.errors));
    } else if (command == "quit") {
      stop();
      Reply(R"({"quit":true})");
      return 0;
    } else {
      Reply(absl::StrFormat(R"({"error":"unknown command %s"})", command));
    }
  }
  stop();
  return 0;
}
