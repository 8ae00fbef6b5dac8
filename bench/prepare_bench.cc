// bench_prepare: NodePrepareResources through the Helper vs a raw grpc++
// unary call with the same messages on the same kind of socket, in one
// process and one run, plus the prepared-claims checkpoint's durable writes
// per call.
//
// Latency part. Five servers run side by side, each on a Unix socket:
//   raw            a grpc++ DRAPlugin v1 service that answers every claim with
//                  the response the Helper gives (checked byte for byte)
//   helper/tmpfs   Helper + trivial driver, checkpoint on, data dir on tmpfs
//   helper/tmpfs   the same, unprepared after every call (checkpoint at 0 claims)
//   helper/disk    the same with the data dir on the real disk
//   helper/off     the same with the checkpoint off (reference)
// One client thread, one channel and stub per server, closed loop. Every
// prepare names a fresh claim UID, so the checkpoint takes its real path
// (PrepareStarted write, driver, Prepared write). Only the prepare call is
// timed; every --batch prepares are unprepared in one untimed call to keep
// the checkpoint small. The servers are measured in interleaved rounds so
// that drift on a shared machine hits all of them alike. Durable checkpoint
// writes of the Helper runs are read from its /metrics, for prepare calls
// only.
//
// Write-count part. ClaimPreparer + Checkpoint driven directly (no gRPC), so
// Checkpoint::writes() is readable: 1 caller; 16 concurrent callers with
// serialization off (group commit shares writes) and on; 16 claims in one call.
//
// Phases (--phases, off by default): a second table timing Checkpoint::Commit,
// WriteFileAtomically and ClaimPreparer::Prepare in a loop, to see where a
// checkpointed prepare spends its time.
//
// Prints one Markdown table on stdout; progress and errors go to stderr.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "bench/one_device_allocation.h"
#include "bench/unprepare_all_driver.h"
#include "dra/k8s/claim_ref.h"
#include "dra/k8s/resource_claim.h"
#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/kubeletplugin/options.h"
#include "dra/log.h"
#include "dra/v1/api.grpc.pb.h"
#include "fileutil/atomic_file.h"
#include "kubeletplugin/call_serializer.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/claim_preparer.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace kp = ::dra::kubeletplugin::internal;
using Clock = std::chrono::steady_clock;
using dra::k8s::ClaimRef;
using dra::kubeletplugin::Device;
using dra::kubeletplugin::Driver;
using dra::kubeletplugin::InMemoryClaimSource;

constexpr char kDriverName[] = "gpu.example.com";
constexpr char kNamespace[] = "bench";
using dra::bench::kBenchDevice;
using dra::bench::kBenchPool;
using dra::bench::kBenchRequest;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "bench_prepare: %s\n", message.c_str());
  std::exit(1);
}

// ---------------------------------------------------------------------------
// What every server answers for one claim.

std::string CdiId(const std::string& uid) { return std::string(kDriverName) + "/claim=" + uid; }

// A Kubernetes-looking UID, unique per (series, index).
std::string Uid(unsigned series, uint64_t index) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-0000-4000-8000-%012llx", series, static_cast<unsigned long long>(index));
  return buf;
}

ClaimRef Ref(unsigned series, uint64_t index) {
  return ClaimRef{kNamespace, "claim-" + std::to_string(series) + "-" + std::to_string(index), Uid(series, index)};
}

dra::k8s::ResourceClaim AllocatedClaim(const ClaimRef& ref) {
  dra::k8s::ResourceClaim claim;
  claim.metadata.namespace_ = ref.namespace_;
  claim.metadata.name = ref.name;
  claim.metadata.uid = ref.uid;
  claim.status.allocation = dra::bench::OneDeviceAllocation(kDriverName, ref.uid);
  return claim;
}

// The trivial driver: one device per claim, nothing else.
class TrivialDriver : public dra::bench::UnprepareAllDriver {
 public:
  absl::StatusOr<dra::kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext&, std::span<const dra::k8s::ResourceClaim> claims) override {
    dra::kubeletplugin::PrepareResults results;
    for (const dra::k8s::ResourceClaim& claim : claims) {
      const auto& allocated = claim.status.allocation->devices.results.front();
      results[claim.metadata.uid].devices.push_back(
          Device{{allocated.request}, allocated.pool, allocated.device, {CdiId(claim.metadata.uid)}, std::nullopt});
    }
    return results;
  }
};

// Only warnings and errors reach stderr.
class QuietSink : public dra::LogSink {
 public:
  void Write(const dra::LogRecord& record) override {
    if (record.severity == dra::LogSeverity::kInfo) return;
    std::fprintf(stderr, "%s\n", dra::FormatLogRecord(record, dra::LogFormat::kKlogText).c_str());
  }
};

// The raw server: what any grpc++ DRA plugin must do at least.
class RawDraService final : public v1::DRAPlugin::Service {
 public:
  grpc::Status NodePrepareResources(grpc::ServerContext*, const v1::NodePrepareResourcesRequest* request,
                                    v1::NodePrepareResourcesResponse* response) override {
    auto& claims = *response->mutable_claims();
    for (const v1::Claim& claim : request->claims()) {
      v1::NodePrepareResourceResponse& out = claims[claim.uid()];
      out.set_error("");
      v1::Device* device = out.add_devices();
      device->add_request_names(kBenchRequest);
      device->set_pool_name(kBenchPool);
      device->set_device_name(kBenchDevice);
      device->add_cdi_device_ids(CdiId(claim.uid()));
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const v1::NodeUnprepareResourcesRequest* request,
                                      v1::NodeUnprepareResourcesResponse* response) override {
    auto& claims = *response->mutable_claims();
    for (const v1::Claim& claim : request->claims()) claims[claim.uid()].set_error("");
    return grpc::Status::OK;
  }
};

// ---------------------------------------------------------------------------
// Helpers for files and numbers.

std::string MakeTempDir(const std::string& parent, const std::string& prefix) {
  std::string pattern = parent + "/" + prefix + "XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) Die("mkdtemp " + pattern + ": " + std::strerror(errno));
  return pattern;
}

std::string FsType(const std::string& path) {
  struct statfs st;
  if (statfs(path.c_str(), &st) != 0) return "?";
  switch (static_cast<unsigned long>(st.f_type)) {
    case 0x01021994:
      return "tmpfs";
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794c7630:
      return "overlayfs";
    case 0x6969:
      return "nfs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "fs 0x%lx", static_cast<unsigned long>(st.f_type));
      return buf;
    }
  }
}

struct Stats {
  size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0;  // microseconds
};

Stats Summarize(std::vector<double> samples_us) {
  Stats s;
  s.n = samples_us.size();
  if (s.n == 0) return s;
  std::sort(samples_us.begin(), samples_us.end());
  auto at = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(s.n)));
    return samples_us[std::clamp<size_t>(rank, 1, s.n) - 1];
  };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  return s;
}

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// Reads dra_checkpoint_writes_total from a Helper's /metrics (plain HTTP on
// loopback), between timed sections only.
class CheckpointWriteCounter {
 public:
  explicit CheckpointWriteCounter(int port) : port_(port), last_(Read()) {}

  // Durable writes since the last call.
  uint64_t Drain() {
    const uint64_t now = Read();
    const uint64_t delta = now - last_;
    last_ = now;
    return delta;
  }

 private:
  uint64_t Read() const {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("connect to /metrics");
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
    if (send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) Die("send /metrics");
    std::string response;
    char buffer[4096];
    for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) response.append(buffer, n);
    close(fd);
    const std::string key = "\ndra_checkpoint_writes_total ";
    const size_t at = response.find(key);
    if (at == std::string::npos) Die("no dra_checkpoint_writes_total in /metrics");
    return std::stoull(response.substr(at + key.size()));
  }

  const int port_;
  uint64_t last_;
};

// ---------------------------------------------------------------------------
// Latency part.

struct Target {
  std::string label;
  std::string checkpoint;  // where the checkpoint lives, "-" for none
  unsigned series = 0;     // claim UID series, unique per target
  size_t batch = 100;      // unprepare after this many prepares
  std::string socket;
  // Servers (one of the two).
  std::unique_ptr<RawDraService> raw_service;
  std::unique_ptr<grpc::Server> raw_server;
  std::unique_ptr<TrivialDriver> driver;
  std::shared_ptr<InMemoryClaimSource> claims;
  std::unique_ptr<dra::kubeletplugin::Helper> helper;
  std::unique_ptr<CheckpointWriteCounter> writes;
  // Client.
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::DRAPlugin::Stub> stub;
  // Progress and results.
  uint64_t next_index = 0;
  uint64_t planned_calls = 0;
  std::vector<double> samples_us;
  double timed_seconds = 0;        // sum of the timed prepare calls
  uint64_t prepare_writes = 0;     // durable writes during timed prepares
  uint64_t measured_prepares = 0;  // prepares whose writes were counted
};

void Connect(Target& t) {
  t.channel = grpc::CreateChannel("unix:" + t.socket, grpc::InsecureChannelCredentials());
  if (!t.channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    Die("cannot connect to " + t.socket);
  }
  t.stub = v1::DRAPlugin::NewStub(t.channel);
}

v1::NodePrepareResourcesRequest PrepareRequest(std::span<const ClaimRef> refs) {
  v1::NodePrepareResourcesRequest request;
  for (const ClaimRef& ref : refs) {
    v1::Claim* claim = request.add_claims();
    claim->set_namespace_(ref.namespace_);
    claim->set_name(ref.name);
    claim->set_uid(ref.uid);
  }
  return request;
}

void Unprepare(Target& t, std::span<const ClaimRef> refs) {
  v1::NodeUnprepareResourcesRequest request;
  for (const ClaimRef& ref : refs) {
    v1::Claim* claim = request.add_claims();
    claim->set_namespace_(ref.namespace_);
    claim->set_name(ref.name);
    claim->set_uid(ref.uid);
  }
  v1::NodeUnprepareResourcesResponse response;
  grpc::ClientContext context;
  grpc::Status status = t.stub->NodeUnprepareResources(&context, request, &response);
  if (!status.ok()) Die(t.label + ": NodeUnprepareResources: " + status.error_message());
  for (const ClaimRef& ref : refs) {
    auto it = response.claims().find(ref.uid);
    if (it == response.claims().end() || !it->second.error().empty()) {
      Die(t.label + ": unprepare of " + ref.uid + " failed");
    }
  }
}

// `calls` closed-loop prepares of one fresh claim each; unprepares every
// `batch` untimed. Records samples when `record`.
void RunChunk(Target& t, uint64_t calls, bool record) {
  const size_t batch = t.batch;
  std::vector<ClaimRef> pending;
  pending.reserve(batch);
  auto flush = [&] {
    if (pending.empty()) return;
    if (t.writes) {
      const uint64_t w = t.writes->Drain();
      if (record) {
        t.prepare_writes += w;
        t.measured_prepares += pending.size();
      }
    }
    Unprepare(t, pending);
    if (t.writes) t.writes->Drain();  // the unprepare's own write: not counted
    pending.clear();
  };
  if (t.writes) t.writes->Drain();
  for (uint64_t i = 0; i < calls; ++i) {
    const ClaimRef ref = Ref(t.series, t.next_index++);
    const v1::NodePrepareResourcesRequest request = PrepareRequest(std::span(&ref, 1));
    v1::NodePrepareResourcesResponse response;
    grpc::ClientContext context;
    const Clock::time_point start = Clock::now();
    const grpc::Status status = t.stub->NodePrepareResources(&context, request, &response);
    const Clock::duration took = Clock::now() - start;
    if (!status.ok()) Die(t.label + ": NodePrepareResources: " + status.error_message());
    auto it = response.claims().find(ref.uid);
    if (it == response.claims().end() || !it->second.error().empty() || it->second.devices_size() != 1) {
      Die(t.label + ": unexpected answer for " + ref.uid + ": " + response.ShortDebugString());
    }
    if (record) {
      t.samples_us.push_back(Micros(took));
      t.timed_seconds += std::chrono::duration<double>(took).count();
    }
    pending.push_back(ref);
    if (pending.size() == batch) flush();
  }
  flush();
}

void StartRaw(Target& t, const std::string& dir) {
  t.socket = dir + "/raw.sock";
  t.raw_service = std::make_unique<RawDraService>();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + t.socket, grpc::InsecureServerCredentials());
  builder.RegisterService(t.raw_service.get());
  t.raw_server = builder.BuildAndStart();
  if (t.raw_server == nullptr) Die("raw server on " + t.socket + " did not start");
}

void StartHelper(Target& t, const std::string& data_dir, const std::string& registrar_dir, bool checkpoint,
                 uint64_t claims_needed) {
  t.driver = std::make_unique<TrivialDriver>();
  t.claims = std::make_shared<InMemoryClaimSource>();
  for (uint64_t i = 0; i < claims_needed; ++i) t.claims->Put(AllocatedClaim(Ref(t.series, i)));
  fs::create_directories(registrar_dir);
  dra::kubeletplugin::Options options;
  options.driver_name = kDriverName;
  options.registrar_dir = registrar_dir;
  options.plugin_data_dir = data_dir;
  options.claim_source = t.claims;
  options.checkpoint = checkpoint;
  options.cdi.enabled = false;  // CDI IDs only: no spec files, no scan of /var/run/cdi
  options.shutdown_grace = absl::Seconds(1);
  options.http_endpoint = "127.0.0.1:0";
  options.logger = dra::Logger(std::make_shared<QuietSink>());
  absl::StatusOr<std::unique_ptr<dra::kubeletplugin::Helper>> helper =
      dra::kubeletplugin::Helper::Start(*t.driver, std::move(options));
  if (!helper.ok()) Die(t.label + ": Helper::Start: " + helper.status().ToString());
  t.helper = *std::move(helper);
  t.socket = t.helper->dra_socket_path();
  if (checkpoint) t.writes = std::make_unique<CheckpointWriteCounter>(t.helper->http_port());
}

// The Helper must answer byte for byte what the raw server answers, or the
// comparison is not of the same messages.
void CheckSameResponse(Target& raw, Target& helper) {
  const ClaimRef ref = Ref(helper.series, helper.next_index++);
  const v1::NodePrepareResourcesRequest request = PrepareRequest(std::span(&ref, 1));
  std::string bytes[2];
  Target* targets[2] = {&raw, &helper};
  for (int i = 0; i < 2; ++i) {
    v1::NodePrepareResourcesResponse response;
    grpc::ClientContext context;
    grpc::Status status = targets[i]->stub->NodePrepareResources(&context, request, &response);
    if (!status.ok()) Die(targets[i]->label + ": " + status.error_message());
    bytes[i] = response.SerializeAsString();
    Unprepare(*targets[i], std::span(&ref, 1));
  }
  if (bytes[0] != bytes[1]) Die("raw and Helper responses differ; the comparison would not be fair");
}

// ---------------------------------------------------------------------------
// Write-count part: ClaimPreparer + Checkpoint without gRPC.

struct DirectResult {
  std::string label;
  std::string checkpoint;
  uint64_t calls = 0;
  int claims_per_call = 0;
  uint64_t max_entries = 0;  // claims in the checkpoint when a call starts: 0..max_entries
  Stats stats;
  double calls_per_second = 0;
  double writes_per_call = 0;
  std::string check;
};

DirectResult RunDirect(const std::string& label, const std::string& parent_dir, int callers, int claims_per_call,
                       bool serialize, int rounds, int calls_per_caller_per_round, unsigned series) {
  const std::string dir = MakeTempDir(parent_dir, "dra-bench-direct-");
  TrivialDriver driver;
  InMemoryClaimSource claims;
  const uint64_t total_claims = static_cast<uint64_t>(rounds) * callers * calls_per_caller_per_round * claims_per_call;
  for (uint64_t i = 0; i < total_claims; ++i) claims.Put(AllocatedClaim(Ref(series, i)));
  absl::StatusOr<std::unique_ptr<kp::Checkpoint>> checkpoint = kp::Checkpoint::Open(dir + "/checkpoint.json");
  if (!checkpoint.ok()) Die("Checkpoint::Open: " + checkpoint.status().ToString());
  kp::Executor executor({});
  absl::StatusOr<std::unique_ptr<kp::CallSerializer>> serializer = kp::CallSerializer::Create(serialize, "", executor);
  if (!serializer.ok()) Die("CallSerializer::Create: " + serializer.status().ToString());
  const dra::Logger logger(std::make_shared<QuietSink>());
  kp::CallTracker calls(logger);
  kp::HelperMetrics metrics;
  dra::WorkPool work_pool(kp::kMaxConcurrentFetches - 1);
  const kp::ClaimFiles no_files(nullptr, nullptr);
  kp::ClaimPreparer preparer(driver, kDriverName, claims, **checkpoint, /*checkpoint_shared=*/false, no_files,
                             **serializer, calls, metrics, work_pool, dra::kubeletplugin::DeviceExclusivityOptions());

  std::vector<std::vector<double>> samples(callers);
  uint64_t prepare_writes = 0;
  double wall_seconds = 0;
  std::atomic<bool> failed{false};
  for (int round = 0; round < rounds; ++round) {
    const uint64_t base = static_cast<uint64_t>(round) * callers * calls_per_caller_per_round * claims_per_call;
    const uint64_t writes_before = (*checkpoint)->writes();
    const Clock::time_point round_start = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < callers; ++c) {
      threads.emplace_back([&, c] {
        for (int k = 0; k < calls_per_caller_per_round; ++k) {
          std::vector<ClaimRef> refs;
          const uint64_t first = base + (static_cast<uint64_t>(c) * calls_per_caller_per_round + k) * claims_per_call;
          for (int j = 0; j < claims_per_call; ++j) refs.push_back(Ref(series, first + j));
          const Clock::time_point start = Clock::now();
          absl::StatusOr<kp::ClaimOutcomes> outcomes = preparer.Prepare(refs);
          samples[c].push_back(Micros(Clock::now() - start));
          if (!outcomes.ok() || outcomes->size() != refs.size()) {
            failed = true;
            continue;
          }
          for (const auto& [uid, outcome] : *outcomes) {
            if (!outcome.error.empty() || outcome.devices.size() != 1) failed = true;
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    wall_seconds += std::chrono::duration<double>(Clock::now() - round_start).count();
    prepare_writes += (*checkpoint)->writes() - writes_before;
    // Untimed and not counted: unprepare the round's claims in one call.
    std::vector<ClaimRef> all;
    const uint64_t round_claims = static_cast<uint64_t>(callers) * calls_per_caller_per_round * claims_per_call;
    for (uint64_t i = 0; i < round_claims; ++i) all.push_back(Ref(series, base + i));
    absl::StatusOr<kp::ClaimOutcomes> unprepared = preparer.Unprepare(all);
    if (!unprepared.ok()) Die(label + ": Unprepare: " + unprepared.status().ToString());
  }
  if (failed || driver.errors() > 0) Die(label + ": a prepare failed");
  if (!(*checkpoint)->Entries().empty()) Die(label + ": checkpoint not empty after unprepare");

  DirectResult result;
  result.label = label;
  result.checkpoint = FsType(parent_dir);
  result.calls = static_cast<uint64_t>(rounds) * callers * calls_per_caller_per_round;
  result.claims_per_call = claims_per_call;
  result.max_entries = static_cast<uint64_t>(callers) * calls_per_caller_per_round * claims_per_call - claims_per_call;
  std::vector<double> all_samples;
  for (const auto& s : samples) all_samples.insert(all_samples.end(), s.begin(), s.end());
  result.stats = Summarize(std::move(all_samples));
  result.calls_per_second = static_cast<double>(result.calls) / wall_seconds;
  result.writes_per_call = static_cast<double>(prepare_writes) / static_cast<double>(result.calls);
  // The rule: at most two durable writes per call (started, prepared), never
  // per claim. Serialized calls cannot share, so exactly two; concurrent
  // unserialized calls should share some (group commit).
  if (result.writes_per_call > 2.0) {
    result.check = "FAIL: > 2";
  } else if (serialize || callers == 1) {
    result.check = result.writes_per_call == 2.0 ? "= 2 ok" : "ok (< 2)";
  } else {
    result.check = result.writes_per_call < 2.0 ? "< 2 ok (shared)" : "= 2 (no sharing)";
  }
  fs::remove_all(dir);
  return result;
}

// ---------------------------------------------------------------------------
// Phases (--phases): where a checkpointed prepare spends its time, without gRPC.

struct PhaseRow {
  std::string phase;
  std::string where;
  Stats stats;
};

template <typename Fn>
Stats TimeIt(int reps, Fn&& fn) {
  std::vector<double> samples;
  samples.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    const Clock::time_point start = Clock::now();
    fn(i);
    samples.push_back(Micros(Clock::now() - start));
  }
  return Summarize(std::move(samples));
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Die(what + ": " + status.ToString());
}

kp::CheckpointChange PreparedChange(const ClaimRef& ref) {
  Device device{{kBenchRequest}, kBenchPool, kBenchDevice, {CdiId(ref.uid)}, ref.uid};
  return kp::CheckpointChange{ref.uid, kp::CheckpointEntry{ref, kp::ClaimState::kPrepared, {std::move(device)}}};
}

std::vector<PhaseRow> RunPhases(const std::string& tmpfs_dir, const std::string& disk_dir) {
  std::vector<PhaseRow> rows;
  unsigned series = 200;
  for (const std::string& parent : {tmpfs_dir, disk_dir}) {
    const std::string where = FsType(parent);
    const int reps = where == "tmpfs" ? 2000 : 100;
    const std::string dir = MakeTempDir(parent, "dra-bench-phases-");
    for (int entries : {0, 10, 100}) {
      // A checkpoint holding `entries` prepared claims; each timed Commit
      // adds or removes one more, alternately, so the size stays put.
      const std::string path = dir + "/checkpoint-" + std::to_string(entries) + ".json";
      absl::StatusOr<std::unique_ptr<kp::Checkpoint>> checkpoint = kp::Checkpoint::Open(path);
      Check(checkpoint.status(), "Checkpoint::Open");
      std::vector<kp::CheckpointChange> fill;
      for (int i = 0; i < entries; ++i) fill.push_back(PreparedChange(Ref(series, i)));
      Check((*checkpoint)->Commit(std::move(fill)), "Commit");
      const ClaimRef extra = Ref(series, entries);
      const Stats commit = TimeIt(reps, [&](int i) {
        std::vector<kp::CheckpointChange> change;
        if (i % 2 == 0) {
          change.push_back(PreparedChange(extra));
        } else {
          change.push_back({extra.uid, std::nullopt});
        }
        Check((*checkpoint)->Commit(std::move(change)), "Commit");
      });
      absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(path);
      Check(content.status(), "read checkpoint");
      const std::string copy = dir + "/copy.json";
      const Stats write =
          TimeIt(reps, [&](int) { Check(dra::internal::WriteFileAtomically(copy, *content), "write"); });
      const std::string size =
          " (" + std::to_string(entries) + " claims, " + std::to_string(content->size()) + " bytes)";
      rows.push_back({"Checkpoint::Commit of 1 change" + size, where, commit});
      rows.push_back({"WriteFileAtomically of that file" + size, where, write});
      ++series;
    }
    fs::remove_all(dir);
  }

  // The preparer's whole work for one claim, without gRPC: with the
  // checkpoint (kept at 0 claims by an untimed unprepare after each prepare)
  // and without it.
  TrivialDriver driver;
  InMemoryClaimSource claims;
  const int reps = 5000;
  for (int i = 0; i < reps; ++i) claims.Put(AllocatedClaim(Ref(series, i)));
  const Stats get = TimeIt(reps, [&](int i) {
    if (!claims.GetClaim(Ref(series, i), dra::CallContext::Background()).ok()) Die("GetClaim");
  });
  rows.push_back({"InMemoryClaimSource::GetClaim (" + std::to_string(reps) + " claims held)", "memory", get});
  kp::Executor executor({});
  absl::StatusOr<std::unique_ptr<kp::CallSerializer>> serializer = kp::CallSerializer::Create(true, "", executor);
  Check(serializer.status(), "CallSerializer::Create");
  const dra::Logger logger(std::make_shared<QuietSink>());
  const std::string dir = MakeTempDir(tmpfs_dir, "dra-bench-phases-");
  absl::StatusOr<std::unique_ptr<kp::Checkpoint>> checkpoint = kp::Checkpoint::Open(dir + "/checkpoint.json");
  Check(checkpoint.status(), "Checkpoint::Open");
  const std::unique_ptr<kp::Checkpoint> off = kp::Checkpoint::Off();
  for (kp::Checkpoint* ckpt : {checkpoint->get(), off.get()}) {
    kp::HelperMetrics metrics;
    kp::CallTracker calls(logger);
    dra::WorkPool work_pool(kp::kMaxConcurrentFetches - 1);
    const kp::ClaimFiles no_files(nullptr, nullptr);
    kp::ClaimPreparer preparer(driver, kDriverName, claims, *ckpt, false, no_files, **serializer, calls, metrics,
                               work_pool, dra::kubeletplugin::DeviceExclusivityOptions());
    std::vector<double> samples;
    for (int i = 0; i < reps; ++i) {
      const ClaimRef ref = Ref(series, i);
      const Clock::time_point start = Clock::now();
      absl::StatusOr<kp::ClaimOutcomes> outcomes = preparer.Prepare(std::span(&ref, 1));
      samples.push_back(Micros(Clock::now() - start));
      if (!outcomes.ok() || !outcomes->at(ref.uid).error.empty()) Die("Prepare");
      if (!preparer.Unprepare(std::span(&ref, 1)).ok()) Die("Unprepare");
    }
    rows.push_back({ckpt->records() ? "ClaimPreparer::Prepare, 1 claim, checkpoint on (0 claims)"
                                    : "ClaimPreparer::Prepare, 1 claim, checkpoint off",
                    ckpt->records() ? FsType(tmpfs_dir) : "memory", Summarize(std::move(samples))});
  }
  fs::remove_all(dir);
  return rows;
}

// ---------------------------------------------------------------------------

struct Flags {
  uint64_t calls = 5000;
  uint64_t warmup = 500;
  size_t batch = 100;
  uint64_t round = 500;
  int callers = 16;
  std::string tmpfs_dir = "/dev/shm";
  std::string disk_dir = "/var/tmp";
  double disk_budget_seconds = 60;
  bool phases = false;
};

void Usage() {
  std::fprintf(stderr,
               "usage: bench_prepare [--calls N] [--warmup N] [--batch N] [--round N] [--callers N]\n"
               "                     [--tmpfs-dir DIR] [--disk-dir DIR] [--disk-budget SECONDS]\n"
               "  --calls N        timed prepares per server (default 5000)\n"
               "  --warmup N       untimed prepares per server first (default 500)\n"
               "  --batch N        unprepare after every N prepares, untimed (default 100)\n"
               "  --round N        prepares per server per interleaved round (default 500)\n"
               "  --callers N      concurrent callers in the write-count part (default 16)\n"
               "  --tmpfs-dir DIR  parent of the tmpfs data dirs (default /dev/shm)\n"
               "  --disk-dir DIR   parent of the real-disk data dir (default /var/tmp)\n"
               "  --disk-budget S  cap the disk run's calls to about S seconds (default 60)\n"
               "  --phases         also print a second table: checkpoint and preparer phases\n");
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        Usage();
        Die(arg + " needs a value");
      }
      return argv[++i];
    };
    auto number = [&]() -> uint64_t {
      const std::string v = value();
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n == 0) Die(arg + ": not a positive number: " + v);
      return n;
    };
    if (arg == "--calls") {
      flags.calls = number();
    } else if (arg == "--warmup") {
      flags.warmup = number();
    } else if (arg == "--batch") {
      flags.batch = number();
    } else if (arg == "--round") {
      flags.round = number();
    } else if (arg == "--callers") {
      flags.callers = static_cast<int>(number());
    } else if (arg == "--tmpfs-dir") {
      flags.tmpfs_dir = value();
    } else if (arg == "--disk-dir") {
      flags.disk_dir = value();
    } else if (arg == "--disk-budget") {
      flags.disk_budget_seconds = static_cast<double>(number());
    } else if (arg == "--phases") {
      flags.phases = true;
    } else if (arg == "-h" || arg == "--help") {
      Usage();
      std::exit(0);
    } else {
      Usage();
      Die("unknown flag " + arg);
    }
  }
  return flags;
}

// The 1-minute load average: other work on the machine shows up here.
std::string LoadAverage() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", load);
  return buf;
}

std::string Fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);  // as the drivers do
  const Flags flags = ParseFlags(argc, argv);
  const std::string load_before = LoadAverage();
  const std::string tmpfs_root = MakeTempDir(flags.tmpfs_dir, "dra-bench-");
  const std::string disk_root = MakeTempDir(flags.disk_dir, "dra-bench-");
  if (FsType(tmpfs_root) != "tmpfs") std::fprintf(stderr, "note: %s is not tmpfs\n", tmpfs_root.c_str());
  if (FsType(disk_root) == "tmpfs") std::fprintf(stderr, "note: %s is tmpfs, not a disk\n", disk_root.c_str());

  // Claims each Helper may be asked for: warm-up, timed calls, the response check.
  const uint64_t claims_needed = flags.warmup + flags.calls + 1;
  std::vector<std::unique_ptr<Target>> targets;
  auto add = [&](std::string label, std::string checkpoint, size_t batch) -> Target& {
    targets.push_back(std::make_unique<Target>());
    Target& t = *targets.back();
    t.label = std::move(label);
    t.checkpoint = std::move(checkpoint);
    t.series = static_cast<unsigned>(targets.size());
    t.batch = batch;
    t.planned_calls = flags.calls;
    return t;
  };
  const std::string tmpfs_where = FsType(tmpfs_root) + " " + flags.tmpfs_dir;
  const std::string disk_where = FsType(disk_root) + " " + flags.disk_dir;
  Target& raw = add("raw grpc++ server", "-", flags.batch);
  Target& on_tmpfs = add("Helper, checkpoint on", tmpfs_where, flags.batch);
  // The same with the checkpoint kept at 0 claims between calls: the cost of
  // a checkpoint write grows with the claims it holds.
  Target& on_tmpfs_small = add("Helper, checkpoint on", tmpfs_where, 1);
  Target& on_disk = add("Helper, checkpoint on", disk_where, flags.batch);
  Target& off = add("Helper, checkpoint off", "-", flags.batch);

  std::fprintf(stderr, "starting servers under %s and %s\n", tmpfs_root.c_str(), disk_root.c_str());
  fs::create_directories(tmpfs_root + "/raw");
  StartRaw(raw, tmpfs_root + "/raw");
  StartHelper(on_tmpfs, tmpfs_root + "/tmpfs", tmpfs_root + "/reg-tmpfs", true, claims_needed);
  StartHelper(on_tmpfs_small, tmpfs_root + "/tmpfs-small", tmpfs_root + "/reg-tmpfs-small", true, claims_needed);
  StartHelper(on_disk, disk_root + "/disk", tmpfs_root + "/reg-disk", true, claims_needed);
  StartHelper(off, tmpfs_root + "/off", tmpfs_root + "/reg-off", false, claims_needed);
  for (auto& t : targets) Connect(*t);
  for (Target* t : {&on_tmpfs, &on_tmpfs_small, &on_disk, &off}) CheckSameResponse(raw, *t);

  // Warm-up, also used to keep the disk run inside its time budget.
  for (auto& t : targets) {
    const uint64_t warmup = t.get() == &on_disk ? std::min<uint64_t>(flags.warmup, 200) : flags.warmup;
    const Clock::time_point start = Clock::now();
    RunChunk(*t, warmup, /*record=*/false);
    const double per_call = std::chrono::duration<double>(Clock::now() - start).count() / warmup;
    if (t.get() == &on_disk && per_call * flags.calls > flags.disk_budget_seconds) {
      t->planned_calls = std::max<uint64_t>(t->batch, static_cast<uint64_t>(flags.disk_budget_seconds / per_call));
      std::fprintf(stderr, "note: disk run capped at %llu calls (%.0f us per call incl. unprepare)\n",
                   static_cast<unsigned long long>(t->planned_calls), per_call * 1e6);
    }
  }

  // Interleaved rounds, rotating which server goes first.
  std::fprintf(stderr, "measuring %llu calls per server in rounds of %llu\n",
               static_cast<unsigned long long>(flags.calls), static_cast<unsigned long long>(flags.round));
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (size_t k = 0; k < targets.size(); ++k) {
      Target& t = *targets[(round + k) % targets.size()];
      const uint64_t done = t.samples_us.size();
      if (done >= t.planned_calls) continue;
      any = true;
      RunChunk(t, std::min(flags.round, t.planned_calls - done), /*record=*/true);
    }
    if (!any) break;
  }

  // Write-count part.
  std::fprintf(stderr, "counting checkpoint writes\n");
  const int rounds = 10;
  const int per_caller = 4;
  std::vector<DirectResult> direct;
  unsigned series = 100;
  for (const std::string& parent : {flags.tmpfs_dir, flags.disk_dir}) {
    direct.push_back(RunDirect("ClaimPreparer direct, 1 caller, serialize on", parent, 1, 1, true, rounds,
                               per_caller * flags.callers, series++));
    direct.push_back(RunDirect("ClaimPreparer direct, " + std::to_string(flags.callers) + " callers, serialize off",
                               parent, flags.callers, 1, false, rounds, per_caller, series++));
    direct.push_back(RunDirect("ClaimPreparer direct, " + std::to_string(flags.callers) + " callers, serialize on",
                               parent, flags.callers, 1, true, rounds, per_caller, series++));
    direct.push_back(
        RunDirect("ClaimPreparer direct, 1 caller, 16 claims/call", parent, 1, 16, true, rounds, per_caller, series++));
  }

  std::vector<PhaseRow> phases;
  if (flags.phases) {
    std::fprintf(stderr, "timing phases\n");
    phases = RunPhases(flags.tmpfs_dir, flags.disk_dir);
  }

  // Tear down: client channels first, so that server shutdown does not wait
  // for an idle client's poller.
  for (auto& t : targets) {
    t->stub.reset();
    t->channel.reset();
  }
  for (auto& t : targets) {
    if (t->helper) t->helper->Stop();
    if (t->raw_server) {
      t->raw_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      t->raw_server->Wait();
    }
  }
  int driver_errors = 0;
  for (auto& t : targets) {
    if (t->driver) driver_errors += t->driver->errors();
  }

  // The table.
  const Stats base = Summarize(raw.samples_us);
  std::printf(
      "| path | checkpoint dir | claims in checkpoint | claims/call | calls | p50 us | p90 us | p99 us | "
      "calls/s | p50 ratio | p99 ratio | durable writes/call |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  auto entries = [](uint64_t max) { return max == 0 ? std::string("0") : "0-" + std::to_string(max); };
  for (auto& t : targets) {
    const Stats s = Summarize(t->samples_us);
    const bool checkpointed = t->writes != nullptr;
    const std::string writes =
        checkpointed ? Fmt("%.2f", static_cast<double>(t->prepare_writes) / static_cast<double>(t->measured_prepares))
                     : "-";
    std::printf("| %s | %s | %s | 1 | %zu | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %s |\n", t->label.c_str(),
                t->checkpoint.c_str(), checkpointed ? entries(t->batch - 1).c_str() : "-", s.n, s.p50, s.p90, s.p99,
                static_cast<double>(s.n) / t->timed_seconds, s.p50 / base.p50, s.p99 / base.p99, writes.c_str());
  }
  for (const DirectResult& r : direct) {
    std::printf("| %s | %s | %s | %d | %llu | %.0f | %.0f | %.0f | %.0f | - | - | %.2f %s |\n", r.label.c_str(),
                r.checkpoint.c_str(), entries(r.max_entries).c_str(), r.claims_per_call,
                static_cast<unsigned long long>(r.calls), r.stats.p50, r.stats.p90, r.stats.p99, r.calls_per_second,
                r.writes_per_call, r.check.c_str());
  }

  std::printf("\n");
  for (const Target* t : {&on_tmpfs, &on_tmpfs_small}) {
    const Stats s = Summarize(t->samples_us);
    const double ratio = s.p50 / base.p50;
    std::printf("Target, checkpoint on tmpfs holding %s claims: p50 ratio %.2f %s 1.2 (%s); p99 ratio %.2f.\n",
                entries(t->batch - 1).c_str(), ratio, ratio <= 1.2 ? "<=" : ">", ratio <= 1.2 ? "met" : "MISSED",
                s.p99 / base.p99);
  }
  std::printf(
      "gRPC rows: one client, one channel per server, closed loop, %llu warm-up calls each (disk: up to 200), fresh "
      "claim UID "
      "per call, untimed unprepare after every N prepares (N-1 = the most claims in the checkpoint), "
      "servers interleaved in rounds of %llu calls; %u CPUs, load average %s before, %s after. Direct "
      "rows: no gRPC, writes from Checkpoint::writes().\n",
      static_cast<unsigned long long>(flags.warmup), static_cast<unsigned long long>(flags.round),
      std::thread::hardware_concurrency(), load_before.c_str(), LoadAverage().c_str());
  if (driver_errors > 0) std::printf("WARNING: %d driver errors (see stderr).\n", driver_errors);

  if (!phases.empty()) {
    std::printf("\n| phase (no gRPC) | where | reps | p50 us | p90 us | p99 us |\n|---|---|---:|---:|---:|---:|\n");
    for (const PhaseRow& row : phases) {
      std::printf("| %s | %s | %zu | %.1f | %.1f | %.1f |\n", row.phase.c_str(), row.where.c_str(), row.stats.n,
                  row.stats.p50, row.stats.p90, row.stats.p99);
    }
  }

  fs::remove_all(tmpfs_root);
  fs::remove_all(disk_root);
  return 0;
}
