// bench_slice_publisher publishes N devices on one node through
// dra::resourceslice::Publisher: the dra-cpp side of
// bench/publisher_go_vs_cpp.sh, whose Go side is bench/gosdk/cmd/publisher
// (the Go resourceslice controller). Both take the same flags and the same
// commands, so the script drives them alike. Public API only.
//
//   bench_slice_publisher --kubeconfig FILE --node NAME [--driver NAME]
//     [--devices N] [--qps Q --burst B]
//
// The devices: "gpu-00000".."gpu-<N-1>", each with the attributes model
// (string "a100"), index (int), driverVersion (version "1.2.3") and healthy
// (bool true) and the capacity memory (80Gi); one node-local pool named after
// the node (owner: the Node, whose UID the publisher looks up), cut into
// slices by SplitIntoSlices (at most 128 of these devices each).
//
// Commands on stdin, one per line; one JSON line on stdout answers each:
//   publish    give the publisher all devices (Update)
//   change K   toggle the model ("a100" <-> "h100") of K devices: device
//              N/K/2 + i*N/K for i < K (K=1: the middle device; K=100: every
//              100th device from the 50th), then Update
//   idle       wait until Publisher::Idle() has held for 500 ms without a break
//   quit       stop the publisher and exit
// publish and change answer {"update_ns": <CLOCK_REALTIME just before Update>};
// idle answers {"idle_ns": ..., "creates", "updates", "deletes", "errors"}.
// "ready" is printed once the publisher was started and given an empty
// DriverResources, and is idle (it has listed and watches its slices), as the
// Go controller is when StartController returns.
//
// Everything is the SDK's default (Options: drift repair 2 s after a watch
// event, backoff; ClientConfig: qps 10, burst 64) except --qps/--burst
// (0 keeps the defaults; a negative qps disables the rate limit).

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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
#include "dra/k8s/quantity.h"
#include "dra/resourceslice/publisher.h"
#include "dra/resourceslice/split.h"

namespace {

constexpr absl::Duration kQuietPeriod = absl::Milliseconds(500);

[[noreturn]] void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "bench_slice_publisher: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

dra::k8s::Device Gpu(int i, const std::string& model) {
  dra::k8s::Device device;
  device.name = absl::StrFormat("gpu-%05d", i);
  device.attributes["model"].string_value = model;
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

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig, node, driver = "gpu.example.com";
  int devices = 10000;
  double qps = 0;
  int burst = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--kubeconfig") {
      kubeconfig = value;
    } else if (flag == "--node") {
      node = value;
    } else if (flag == "--driver") {
      driver = value;
    } else if (flag == "--devices" && absl::SimpleAtoi(value, &devices) && devices > 0) {
    } else if (flag == "--qps" && absl::SimpleAtod(value, &qps)) {
    } else if (flag == "--burst" && absl::SimpleAtoi(value, &burst) && burst >= 0) {
    } else {
      kubeconfig.clear();
      break;
    }
  }
  if (kubeconfig.empty() || node.empty() || argc % 2 == 0) {
    std::fprintf(stderr, "usage: %s --kubeconfig FILE --node NAME [--driver NAME] [--devices N] [--qps Q --burst B]\n",
                 argv[0]);
    return 2;
  }

  absl::StatusOr<dra::k8s::ClientConfig> config = dra::k8s::LoadKubeconfig(kubeconfig);
  if (!config.ok()) Die("load the kubeconfig", config.status());
  if (qps != 0) config->qps = qps;
  if (burst != 0) config->burst = burst;
  auto client = dra::k8s::Client::Create(*config);
  if (!client.ok()) Die("create the client", client.status());

  dra::resourceslice::Options options;
  options.driver_name = driver;
  options.node_name = node;
  auto publisher = dra::resourceslice::Publisher::Start(*client, options, nullptr);  // errors: logged, counted
  if (!publisher.ok()) Die("start the publisher", publisher.status());

  const auto wait_idle = [&] {
    absl::Time since = absl::Now();
    while (absl::Now() - since < kQuietPeriod) {
      absl::SleepFor(absl::Milliseconds(5));
      if (!(*publisher)->Idle()) since = absl::Now();
    }
  };
  (*publisher)->Update({});
  wait_idle();
  Reply(absl::StrFormat(R"({"ready":true,"pid":%d})", getpid()));

  std::vector<std::string> models(static_cast<size_t>(devices), "a100");
  const auto resources = [&] {
    std::vector<dra::k8s::Device> list;
    list.reserve(models.size());
    for (int i = 0; i < devices; ++i) list.push_back(Gpu(i, models[static_cast<size_t>(i)]));
    dra::resourceslice::DriverResources desired;
    desired.pools[node].slices = dra::resourceslice::SplitIntoSlices(std::move(list));
    return desired;
  };

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    if (!(words >> command)) continue;
    if (command == "publish") {
      dra::resourceslice::DriverResources desired = resources();
      const int64_t now = RealtimeNs();
      (*publisher)->Update(std::move(desired));
      Reply(absl::StrFormat(R"({"update_ns":%d})", now));
    } else if (command == "change") {
      int k = 0;
      if (!(words >> k) || k <= 0 || k > devices) {
        Reply(R"({"error":"change K: K from 1 to the number of devices"})");
        continue;
      }
      const int step = devices / k;
      for (int i = 0; i < k; ++i) {
        std::string& model = models[static_cast<size_t>(step / 2 + i * step)];
        model = model == "a100" ? "h100" : "a100";
      }
      dra::resourceslice::DriverResources desired = resources();
      const int64_t now = RealtimeNs();
      (*publisher)->Update(std::move(desired));
      Reply(absl::StrFormat(R"({"update_ns":%d})", now));
    } else if (command == "idle") {
      wait_idle();
      const dra::resourceslice::PublisherStats stats = (*publisher)->Stats();
      Reply(absl::StrFormat(R"({"idle_ns":%d,"creates":%d,"updates":%d,"deletes":%d,"errors":%d})", RealtimeNs(),
                            stats.creates, stats.updates, stats.deletes, stats.errors));
    } else if (command == "quit") {
      (*publisher)->Stop();
      Reply(R"({"quit":true})");
      return 0;
    } else {
      Reply(absl::StrFormat(R"({"error":"unknown command %s"})", command));
    }
  }
  (*publisher)->Stop();
  return 0;
}
