// bench_claim_fetch: what a NodePrepareResources call costs when its claims
// come from the API server, for 1 claim vs 64 claims in one call.
//
// A Helper with ApiClaimSource (checkpoint on, a trivial driver) runs against
// the fake API server (tests/support/fakeapiserver) with a latency added to
// every API request (/fake/delay: 2 ms and 10 ms by default), driven by the
// kubelet-like client over the DRA socket. Every round creates fresh claims
// (allocated through /status, as the scheduler would) with the delay off, so
// the checkpoint never answers and every claim is fetched; then times one
// 1-claim call and one 64-claim call with the delay on (in alternating
// order), and unprepares them untimed. The first --warmup rounds are not
// counted (they open the client's connections).
//
// The Helper's API client has no client-side rate limit (qps 0): this
// measures the fetch pipeline. The client's default burst (64) lets one such
// call through unpaced too, but not round after round at 10 QPS.
//
// Prints one Markdown table on stdout; progress and errors go to stderr.
//
//   cmake --build <build> --target bench_claim_fetch && <build>/bench/bench_claim_fetch
//   options: --rounds N (20) --warmup N (2) --claims N (64) --delays 2,10

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "bench/one_device_allocation.h"
#include "bench/unprepare_all_driver.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/kubeletplugin/api_claim_source.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/options.h"
#include "dra/log.h"
#include "dractl/kubelet_client.h"
#include "support/claim_object.h"
#include "support/discard_logger.h"
#include "support/fake_apiserver.h"
#include "support/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using dra::k8s::ClaimRef;
using nlohmann::json;

constexpr char kDriverName[] = "gpu.example.com";
constexpr char kNamespace[] = "bench";

[[noreturn]] void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "bench_claim_fetch: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

// One CDI ID per device.
class BenchDriver : public dra::bench::UnprepareAllDriver {
 public:
  absl::StatusOr<dra::kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext&, std::span<const dra::k8s::ResourceClaim> claims) override {
    dra::kubeletplugin::PrepareResults results;
    for (const dra::k8s::ResourceClaim& claim : claims) {
      dra::kubeletplugin::PrepareResult& result = results[claim.metadata.uid];
      for (const auto& allocated : claim.status.allocation->devices.results) {
        dra::kubeletplugin::Device device;
        device.requests = {allocated.request};
        device.pool_name = allocated.pool;
        device.device_name = allocated.device;
        device.cdi_device_ids = {absl::StrCat(kDriverName, "/gpu=", claim.metadata.uid, "-", allocated.device)};
        result.devices.push_back(std::move(device));
      }
    }
    return results;
  }
};

struct Flags {
  int rounds = 20;
  int warmup = 2;
  int claims = 64;
  std::vector<int> delays_ms = {2, 10};
};

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  auto usage = [] {
    std::fprintf(stderr, "usage: bench_claim_fetch [--rounds N] [--warmup N] [--claims N] [--delays MS,MS,...]\n");
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || i + 1 >= argc) usage();
    const std::string value = argv[++i];
    int* target = arg == "--rounds"   ? &flags.rounds
                  : arg == "--warmup" ? &flags.warmup
                  : arg == "--claims" ? &flags.claims
                                      : nullptr;
    if (target != nullptr) {
      if (!absl::SimpleAtoi(value, target) || *target < 0) usage();
    } else if (arg == "--delays") {
      flags.delays_ms.clear();
      for (absl::string_view part : absl::StrSplit(value, ',')) {
        int ms = 0;
        if (!absl::SimpleAtoi(part, &ms) || ms < 0) usage();
        flags.delays_ms.push_back(ms);
      }
    } else {
      usage();
    }
  }
  if (flags.rounds < 1 || flags.claims < 1 || flags.delays_ms.empty()) usage();
  return flags;
}

std::shared_ptr<dra::k8s::Client> MakeClient(const dra::testing::FakeApiServer& server) {
  dra::k8s::ClientConfig config;
  config.server = server.url();
  config.ca_file = server.ca_file();
  config.bearer_token = server.admin_token();
  config.qps = 0;
  absl::StatusOr<std::shared_ptr<dra::k8s::Client>> client = dra::k8s::Client::Create(config);
  if (!client.ok()) Die("API client", client.status());
  return *client;
}

void SetDelay(const dra::testing::FakeApiServer& server, int ms) {
  absl::StatusOr<std::string> r = server.Admin("POST", "/fake/delay", json{{"milliseconds", ms}}.dump());
  if (!r.ok()) Die("set delay", r.status());
}

// A claim with one device of ours, allocated through /status.
ClaimRef CreateAllocatedClaim(dra::k8s::Client& client, const std::string& name) {
  absl::StatusOr<json> created =
      client.Create(dra::k8s::kResourceClaims, kNamespace, dra::testing::NewClaimObject(kNamespace, name));
  if (!created.ok()) Die("create claim " + name, created.status());
  absl::StatusOr<dra::k8s::ResourceClaim> claim = dra::k8s::ResourceClaimFromJson(*created);
  if (!claim.ok()) Die("decode claim " + name, claim.status());
  claim->status.allocation = dra::bench::OneDeviceAllocation(kDriverName, claim->metadata.uid);
  absl::StatusOr<dra::k8s::ResourceClaim> allocated = client.UpdateResourceClaimStatus(*claim);
  if (!allocated.ok()) Die("allocate claim " + name, allocated.status());
  return ClaimRef{kNamespace, name, claim->metadata.uid};
}

// Milliseconds one NodePrepareResources call takes; every claim must succeed.
double TimedPrepare(dra::kubeletclient::DraClient& kubelet, const std::vector<ClaimRef>& refs) {
  const Clock::time_point start = Clock::now();
  auto prepared = kubelet.NodePrepareResources(dra::kubeletclient::DraApi::kV1, refs);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!prepared.ok()) Die("NodePrepareResources", prepared.status());
  for (const ClaimRef& ref : refs) {
    auto it = prepared->find(ref.uid);
    if (it == prepared->end() || !it->second.error.empty()) {
      Die("NodePrepareResources",
          absl::InternalError(
              absl::StrCat("claim ", ref.ToString(), ": ", it == prepared->end() ? "no answer" : it->second.error)));
    }
  }
  return ms;
}

double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);  // as the drivers do
  const Flags flags = ParseFlags(argc, argv);

  dra::testing::FakeApiServer::Options server_options;
  server_options.extra_args = {"--quiet", "--exit-with-parent"};
  absl::StatusOr<std::unique_ptr<dra::testing::FakeApiServer>> server =
      dra::testing::FakeApiServer::Start(server_options);
  if (!server.ok()) Die("start the fake API server", server.status());
  std::shared_ptr<dra::k8s::Client> setup = MakeClient(**server);

  dra::testing::TempDir dir;
  const std::string registry = dir.Join("plugins_registry");
  std::filesystem::create_directories(registry);
  BenchDriver driver;
  dra::kubeletplugin::Options options;
  options.driver_name = kDriverName;
  options.node_name = "node-1";
  options.registrar_dir = registry;
  options.plugin_data_dir = dir.Join("plugins/gpu.example.com");
  options.claim_source = std::make_shared<dra::kubeletplugin::ApiClaimSource>(MakeClient(**server));
  options.logger = dra::testing::DiscardLogger();
  options.cdi.enabled = false;  // CDI IDs only: no spec files, no scan of /var/run/cdi
  absl::StatusOr<std::unique_ptr<dra::kubeletplugin::Helper>> helper =
      dra::kubeletplugin::Helper::Start(driver, std::move(options));
  if (!helper.ok()) Die("start the Helper", helper.status());
  std::unique_ptr<dra::kubeletclient::DraClient> kubelet =
      dra::kubeletclient::DraClient::Create((*helper)->dra_socket_path());

  // samples[delay][claims] in ms
  std::map<int, std::map<int, std::vector<double>>> samples;
  int next_claim = 0;
  const Clock::time_point bench_start = Clock::now();
  for (int delay : flags.delays_ms) {
    for (int round = 0; round < flags.warmup + flags.rounds; ++round) {
      SetDelay(**server, 0);
      std::vector<ClaimRef> one{CreateAllocatedClaim(*setup, absl::StrCat("c", next_claim++))};
      std::vector<ClaimRef> many;
      for (int i = 0; i < flags.claims; ++i)
        many.push_back(CreateAllocatedClaim(*setup, absl::StrCat("c", next_claim++)));

      SetDelay(**server, delay);
      double ms_one = 0;
      double ms_many = 0;
      if (round % 2 == 0) {
        ms_one = TimedPrepare(*kubelet, one);
        ms_many = TimedPrepare(*kubelet, many);
      } else {
        ms_many = TimedPrepare(*kubelet, many);
        ms_one = TimedPrepare(*kubelet, one);
      }
      if (round >= flags.warmup) {
        samples[delay][1].push_back(ms_one);
        samples[delay][flags.claims].push_back(ms_many);
      }

      // Untimed: keeps the checkpoint small. Unprepare does not read the API.
      many.insert(many.end(), one.begin(), one.end());
      auto unprepared = kubelet->NodeUnprepareResources(dra::kubeletclient::DraApi::kV1, many);
      if (!unprepared.ok()) Die("NodeUnprepareResources", unprepared.status());
    }
    std::fprintf(stderr, "delay %d ms: %d rounds done\n", delay, flags.rounds);
  }
  SetDelay(**server, 0);
  std::fprintf(stderr, "took %.1f s\n", std::chrono::duration<double>(Clock::now() - bench_start).count());

  std::printf("| claims | delay | p50 ms | ratio %d/1 |\n", flags.claims);
  std::printf("|---:|---:|---:|---:|\n");
  for (int delay : flags.delays_ms) {
    const double p50_one = Percentile(samples[delay][1], 0.5);
    const double p50_many = Percentile(samples[delay][flags.claims], 0.5);
    std::printf("| 1 | %d ms | %.2f | |\n", delay, p50_one);
    std::printf("| %d | %d ms | %.2f | %.2f |\n", flags.claims, delay, p50_many, p50_many / p50_one);
  }
  return 0;
}
