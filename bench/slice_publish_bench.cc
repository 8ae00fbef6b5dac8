// bench_slice_publish: what publishing 10,000 devices on one node costs.
//
// A resourceslice::Publisher runs against the fake API server
// (tests/support/fakeapiserver, HTTPS on loopback) and publishes one
// node-local pool of N devices (default 10,000) split by SplitIntoSlices.
// Measured, each from Update() until the publisher is Idle():
//   - first publish: creates (must be ceil(N/128)), wall time, bytes sent;
//   - identical republish: writes (must be 0);
//   - one device changed: writes (must be 1), bytes sent.
// Writes are the ResourceSlice writes the fake server carried out (its
// request log, by response code); bytes its counter (bytesReceived: request
// bodies as the server read them). Peak RSS is this process's
// (publisher, its cache and client, and the benchmark's own copy of the
// devices), not the fake server's.
//
// Prints one Markdown table on stdout; errors go to stderr.
//
//   cmake --build <build> --target bench_slice_publish && <build>/bench/bench_slice_publish
//   options: --devices N (10000) --qps Q (0: no client-side rate limit; client-go-like 10)

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/resourceslice/publisher.h"
#include "dra/resourceslice/split.h"
#include "support/fake_apiserver.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kNode[] = "bench-node";

[[noreturn]] void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "bench_slice_publish: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

dra::k8s::Device Gpu(int i) {
  dra::k8s::Device device;
  device.name = absl::StrCat("gpu-", i);
  device.attributes["index"].int_value = i;
  device.attributes["model"].string_value = "a100";
  device.attributes["driverVersion"].version_value = "1.2.3";
  device.capacity["memory"].value =
      dra::k8s::Quantity::FromInt(int64_t{80} << 30, dra::k8s::Quantity::Format::kBinarySI);
  return device;
}

struct Counters {
  int64_t creates = 0;
  int64_t writes = 0;   // ResourceSlice writes the server carried out
  int64_t refused = 0;  // protobuf bodies the fake server refused (415); the client then sends JSON
  int64_t bytes = 0;
};

// From the server's request log (the last 1,000 requests: more than any
// step here makes).
Counters Read(const dra::testing::FakeApiServer& server) {
  absl::StatusOr<std::string> body = server.Admin("GET", "/fake/requests");
  if (!body.ok()) Die("read the request counters", body.status());
  json requests = json::parse(*body);
  Counters c;
  for (const json& request : requests["requests"]) {
    if (request.value("resource", "") != "resourceslices") continue;
    const std::string verb = request.value("verb", "");
    const int code = request.value("code", 0);
    if (code == 415) {
      ++c.refused;
    } else if (code / 100 == 2 && verb != "GET" && verb != "LIST" && verb != "WATCH") {
      ++c.writes;
      c.creates += verb == "CREATE" ? 1 : 0;
    }
  }
  c.bytes = requests.value("bytesReceived", int64_t{0});
  return c;
}

void Reset(const dra::testing::FakeApiServer& server) {
  absl::StatusOr<std::string> r = server.Admin("POST", "/fake/reset", "{}");
  if (!r.ok()) Die("reset the request counters", r.status());
}

// Updates and waits until the publisher has nothing left to do; seconds.
double PublishAndWait(dra::resourceslice::Publisher& publisher, dra::resourceslice::DriverResources resources) {
  const Clock::time_point start = Clock::now();
  publisher.Update(std::move(resources));
  while (!publisher.Idle()) absl::SleepFor(absl::Microseconds(200));
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The resident set now, from /proc/self/statm.
double RssMb() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

long PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 10000;
  double qps = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--devices" && absl::SimpleAtoi(argv[i + 1], &devices) && devices > 0) continue;
    if (flag == "--qps" && absl::SimpleAtod(argv[i + 1], &qps)) continue;
    std::fprintf(stderr, "usage: %s [--devices N] [--qps Q]\n", argv[0]);
    return 2;
  }

  dra::testing::FakeApiServer::Options server_options;
  server_options.extra_args = {"--quiet"};
  auto server = dra::testing::FakeApiServer::Start(server_options);
  if (!server.ok()) Die("start the fake API server", server.status());
  dra::k8s::ClientConfig config;
  config.server = (*server)->url();
  config.ca_file = (*server)->ca_file();
  config.bearer_token = (*server)->admin_token();
  config.qps = qps;
  auto client = dra::k8s::Client::Create(config);
  if (!client.ok()) Die("create the client", client.status());
  auto node = (*client)->Create(dra::k8s::kNodes, "",
                                json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kNode}}}});
  if (!node.ok()) Die("create the Node", node.status());

  dra::resourceslice::Options options;
  options.driver_name = kDriver;
  options.node_name = kNode;
  std::atomic<int64_t> errors{0};
  auto publisher =
      dra::resourceslice::Publisher::Start(*client, options, [&](const absl::Status& status, std::string_view context) {
        ++errors;
        std::fprintf(stderr, "publisher error (%.*s): %s\n", static_cast<int>(context.size()), context.data(),
                     status.ToString().c_str());
      });
  if (!publisher.ok()) Die("start the publisher", publisher.status());

  std::vector<dra::k8s::Device> list;
  for (int i = 0; i < devices; ++i) list.push_back(Gpu(i));
  dra::resourceslice::DriverResources resources;
  resources.pools[kNode].slices = dra::resourceslice::SplitIntoSlices(std::move(list));
  const size_t slices = resources.pools[kNode].slices.size();
  const double rss_before = RssMb();

  Reset(**server);
  const double first = PublishAndWait(**publisher, resources);
  const Counters c1 = Read(**server);

  Reset(**server);
  const double same = PublishAndWait(**publisher, resources);
  const Counters c2 = Read(**server);

  Reset(**server);
  resources.pools[kNode].slices[slices / 2].devices[7].attributes["model"].string_value = "h100";
  const double one = PublishAndWait(**publisher, resources);
  const Counters c3 = Read(**server);

  const long rss_kb = PeakRssKb();
  (*publisher)->Stop();

  const size_t expected_creates = (static_cast<size_t>(devices) + 127) / 128;
  std::printf("Publishing %d devices on one node (%zu slices), fake API server over HTTPS, client qps %s\n\n", devices,
              slices, qps > 0 ? absl::StrCat(qps).c_str() : "unlimited");
  std::printf("| step | writes | wall time | bytes sent | check |\n|---|---|---|---|---|\n");
  std::printf("| first publish | %lld creates | %.3f s | %s | %s (ceil(%d/128) = %zu) |\n",
              static_cast<long long>(c1.creates), first, absl::StrFormat("%.2f MB", c1.bytes / 1e6).c_str(),
              c1.creates == static_cast<int64_t>(expected_creates) && c1.writes == c1.creates ? "ok" : "WRONG", devices,
              expected_creates);
  const int64_t refused = c1.refused + c2.refused + c3.refused;
  std::printf("| identical republish | %lld | %.3f s | %lld B | %s (0 writes) |\n", static_cast<long long>(c2.writes),
              same, static_cast<long long>(c2.bytes), c2.writes == 0 ? "ok" : "WRONG");
  std::printf("| one device changed | %lld | %.3f s | %s | %s (1 write) |\n", static_cast<long long>(c3.writes), one,
              absl::StrFormat("%.1f kB", c3.bytes / 1e3).c_str(), c3.writes == 1 ? "ok" : "WRONG");
  std::printf(
      "\npeak RSS of the publishing process: %.1f MB (%.1f MB before the first Update, with the "
      "benchmark's own copy of the devices); publisher errors: %lld\n",
      rss_kb / 1024.0, rss_before, static_cast<long long>(errors.load()));
  std::printf("protobuf bodies refused by the fake server (415; the client asks once, then sends JSON): %lld%s\n",
              static_cast<long long>(refused), refused <= 1 ? "" : " WRONG (at most 1)");
  return c1.creates == static_cast<int64_t>(expected_creates) && c1.writes == c1.creates && c2.writes == 0 &&
                 c3.writes == 1 && refused <= 1 && errors == 0
             ? 0
             : 1;
}
