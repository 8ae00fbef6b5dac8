// load_harness: the example GPU and CPU drivers, serialization off, under
// load from the kubelet peer's bench step (tests/e2e/kubeletpeer): --callers
// concurrent callers share the kubelet's one gRPC connection, each preparing
// one of its own claims and unpreparing it again, for --cycles
// prepare/unprepare cycles in all (or for --duration), after --warmup.
// Checks, per driver (docs/reliability.md, "Load and soak"):
//
//   - no call failed, and every cycle was counted;
//   - the driver's RSS grew by at most --max-rss-growth-kb and its open files
//     did not grow from the start of the timed run to its end;
//   - the driver stops cleanly, and nothing of a claim is left on disk.
//
// Prints a table with calls/s, prepare and unprepare p50/p99, and the
// driver's RSS, open files and threads at start and end; exits 1 on any
// violation.
//
//   load_harness [--drivers=gpu,cpu] [--callers=16] [--cycles=10000 | --duration=1h]
//                [--warmup=3s] [--max-rss-growth-kb=8192] [--peer=KUBELETPEER]
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cpu_resources.h"
#include "crash/example_node.h"
#include "example_driver_process.h"
#include "fake_sysfs.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::testing {
namespace {

using nlohmann::json;

struct Flags {
  std::vector<std::string> drivers = {"gpu", "cpu"};
  int callers = 16;
  int cycles = 10000;
  absl::Duration duration = absl::ZeroDuration();  // instead of cycles
  absl::Duration warmup = absl::Seconds(3);
  int64_t max_rss_growth_kb = 8192;
  std::string peer;
};

struct Result {
  std::string driver;
  json bench;  // the peer's bench line
  std::vector<std::string> violations;
};

// A UUID that names claim `i` of a run.
std::string ClaimUid(int i, int kind) { return absl::StrFormat("%08x-0000-4000-8000-%012x", kind, i); }

class Load {
 public:
  Load(std::string name, const Flags& flags) : flags_(flags) { result_.driver = std::move(name); }

  Result Go() {
    if (SetUp()) {
      Bench();
      Check();
    }
    if (driver_.pid() <= 0) return std::move(result_);
    if (const std::string stopped = driver_.Stop(); stopped != "exited with status 0") {
      Violation(absl::StrCat("SIGTERM: the driver ", stopped, "; its log: ", driver_log()));
    } else {
      for (const std::string& left : LeftAfterUnprepare(dir_, driver_name_, claims_)) {
        Violation(absl::StrCat("left after everything unprepared: ", left));
      }
    }
    return std::move(result_);
  }

 private:
  void Violation(const std::string& what) {
    result_.violations.push_back(absl::StrCat("[", result_.driver, "] ", what));
  }
  bool Fail(const std::string& what) {
    Violation(what);
    return false;
  }
  std::string driver_log() const { return dir_.Join("driver.log"); }

  // The node, two claims per caller allocated as the scheduler would, and
  // the driver.
  bool SetUp() {
    absl::StatusOr<ExampleNode> node = StartExampleNode(dir_);
    if (!node.ok()) return Fail(node.status().ToString());
    node_ = *std::move(node);
    std::string binary;
    // Without a client-side rate limit: the default (10 claim fetches per
    // second) would pace the prepares, not the driver.
    std::vector<std::string> driver_flags = {"--serialize=false", "--kube-api-qps=0"};
    const bool gpu = result_.driver == "gpu";
    if (gpu) {
      binary = DRA_GPU_DRIVER;
      driver_name_ = "gpu.example.com";
      driver_flags.insert(driver_flags.end(),
                          {absl::StrCat("--num-devices=", flags_.callers + 4), "--gpu-allow-multiple-allocations",
                           "--gpu-device-status", "--device-metadata"});
    } else {
      // Two sockets of 8 cores with 2 threads (32 CPUs, CPU 0 reserved).
      // Caller g's claims are all on socket g % 2, so that at most 15 of
      // each socket's CPUs are prepared at once.
      binary = DRA_CPU_DRIVER;
      driver_name_ = "cpu.example.com";
      FakeMachine machine;
      machine.sockets = 2;
      machine.cores_per_socket = 8;
      machine.threads_per_core = 2;
      WriteFakeSysfs(dir_.Join("sysfs"), machine);
      driver_flags.insert(driver_flags.end(), {"--sysfs-root=" + dir_.Join("sysfs"),
                                               "--nri-socket=", "--reserved-cpus=0", "--rescan-interval=0"});
    }
    for (int i = 0; i < 2 * flags_.callers; ++i) {
      k8s::DeviceRequestAllocationResult result;
      if (gpu) {
        // A whole GPU for each caller (gpu-0..callers-1), as the scheduler
        // gives them, and shares of four more.
        result.request = "gpu";
        if (i % 2 == 0) {
          result.device = absl::StrCat("gpu-", i / 2);
        } else {
          result.device = absl::StrCat("gpu-", flags_.callers + (i / 2) % 4);
          result.share_id = ClaimUid(i, 1);
          result.consumed_capacity["memory"] = k8s::Quantity::FromInt(int64_t{1} << 30);
        }
      } else {
        result.request = "cpus";
        result.device = cpu::SocketDeviceName((i % flags_.callers) % 2);
        result.share_id = ClaimUid(i, 1);
        result.consumed_capacity[cpu::CpuCapacityName(driver_name_, false)] = k8s::Quantity::FromInt(1);
      }
      absl::StatusOr<k8s::ClaimRef> ref =
          CreateAllocatedClaim(*node_.client, driver_name_, absl::StrCat(result_.driver, "-claim-", i), {result});
      if (!ref.ok()) return Fail(ref.status().ToString());
      claims_.push_back(*ref);
    }
    absl::StatusOr<ChildProcess> spawned =
        ChildProcess::Spawn(ExampleDriverArgv(binary, driver_name_, dir_, /*http_port=*/0, driver_flags), driver_log());
    if (!spawned.ok()) return Fail(spawned.status().ToString());
    driver_ = *std::move(spawned);
    return true;
  }

  // The peer registers the driver, then runs the bench step.
  void Bench() {
    std::vector<std::string> argv = {flags_.peer,
                                     "--registry-dir=" + dir_.Join("registry"),
                                     "--driver=" + driver_name_,
                                     "--steps=register,bench",
                                     "--timeout=60s",
                                     "--reconcile-period=10ms",
                                     absl::StrCat("--driver-pid=", driver_.pid()),
                                     absl::StrCat("--bench-concurrency=", flags_.callers),
                                     "--bench-unprepare-every=1",
                                     "--bench-warmup=" + GoDuration(flags_.warmup)};
    argv.push_back(flags_.duration > absl::ZeroDuration() ? "--bench-duration=" + GoDuration(flags_.duration)
                                                          : absl::StrCat("--bench-calls=", flags_.cycles));
    for (const k8s::ClaimRef& claim : claims_) {
      argv.push_back(absl::StrCat("--claim=", claim.namespace_, "/", claim.name, "/", claim.uid));
    }
    const std::string output = dir_.Join("peer.log");
    absl::StatusOr<ChildProcess> peer = ChildProcess::Spawn(argv, output);
    if (!peer.ok()) {
      Fail(peer.status().ToString());
      return;
    }
    // The peer's own timeouts end it: registration (60 s), then the bench.
    std::string how;
    PollUntil([&] { return peer->Exited(&how) || driver_.Exited(); }, absl::Hours(25), absl::Milliseconds(200));
    if (std::string driver_how; driver_.Exited(&driver_how)) {
      Fail(absl::StrCat("the driver ", driver_how, " under load; its log: ", driver_log()));
      return;
    }
    const std::string lines = ReadFile(output);
    for (const std::string& line : std::vector<std::string>(absl::StrSplit(lines, '\n'))) {
      const json event = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (event.is_object() && event.value("step", "") == "bench") result_.bench = event;
    }
    if (how != "exited with status 0" || result_.bench.is_null()) {
      Fail(absl::StrCat("the kubelet peer ", how, " without a bench result; its log: ", output));
    }
  }

  void Check() {
    const json& b = result_.bench;
    if (b.is_null()) return;
    if (b.value("errors", -1) != 0) {
      Violation(absl::StrCat(b.value("errors", -1), " calls failed, the first: ", b.value("first_error", "")));
    }
    const int count = b.value("count", 0);
    if (flags_.duration == absl::ZeroDuration() && count != flags_.cycles) {
      Violation(absl::StrCat(count, " prepares timed, want ", flags_.cycles));
    }
    if (b.value("unprepare_count", 0) != count) {
      Violation(absl::StrCat(b.value("unprepare_count", 0), " unprepares for ", count, " prepares"));
    }
    if (!b.contains("driver_vmrss_kb_start") || !b.contains("driver_fds_end")) {
      Violation("the peer could not read the driver's /proc");
      return;
    }
    const int64_t growth = b.value("driver_vmrss_kb_end", int64_t{0}) - b.value("driver_vmrss_kb_start", int64_t{0});
    if (growth > flags_.max_rss_growth_kb) {
      Violation(absl::StrCat("RSS grew by ", growth, " kB, more than ", flags_.max_rss_growth_kb, " kB"));
    }
    if (b.value("driver_fds_end", 0) > b.value("driver_fds_start", 0)) {
      Violation(
          absl::StrCat("open files grew from ", b.value("driver_fds_start", 0), " to ", b.value("driver_fds_end", 0)));
    }
  }

  // Go's duration syntax for whole milliseconds.
  static std::string GoDuration(absl::Duration d) { return absl::StrCat(absl::ToInt64Milliseconds(d), "ms"); }

  const Flags& flags_;
  Result result_;
  TempDir dir_;
  ExampleNode node_;
  std::string driver_name_;
  std::vector<k8s::ClaimRef> claims_;
  ChildProcess driver_;
};

void PrintTable(const Flags& flags, const std::vector<Result>& results) {
  std::cout
      << "\nload harness: " << flags.callers << " callers, "
      << (flags.duration > absl::ZeroDuration() ? absl::FormatDuration(flags.duration)
                                                : absl::StrCat(flags.cycles, " cycles"))
      << " per driver after " << absl::FormatDuration(flags.warmup) << " of warm-up, serialization off\n\n"
      << "| driver | cycles | errors | cycles/s | prepare p50 / p99 ms | unprepare p50 / p99 ms | RSS start / end "
         "MB | open files start / end | threads start / end | violations |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Result& r : results) {
    const json& b = r.bench;
    auto ms = [&](const char* key) { return absl::StrFormat("%.2f", b.value(key, 0.0) / 1000); };
    auto mb = [&](const char* key) { return absl::StrFormat("%.1f", b.value(key, 0.0) / 1024); };
    auto n = [&](const char* key) { return std::to_string(b.value(key, int64_t{-1})); };
    if (b.is_null()) {
      std::cout << "| " << r.driver << " | | | | | | | | | " << r.violations.size() << " |\n";
      continue;
    }
    std::cout << "| " << r.driver << " | " << n("count") << " | " << n("errors") << " | "
              << absl::StrFormat("%.0f", b.value("calls_per_s", 0.0)) << " | " << ms("p50_us") << " / " << ms("p99_us")
              << " | " << ms("unprepare_p50_us") << " / " << ms("unprepare_p99_us") << " | "
              << mb("driver_vmrss_kb_start") << " / " << mb("driver_vmrss_kb_end") << " | " << n("driver_fds_start")
              << " / " << n("driver_fds_end") << " | " << n("driver_threads_start") << " / " << n("driver_threads_end")
              << " | " << r.violations.size() << " |\n";
  }
  for (const Result& r : results) {
    for (const std::string& violation : r.violations) std::cout << "\nVIOLATION " << violation;
  }
  std::cout << std::endl;
}

int Usage(const std::string& problem) {
  std::cerr << "load_harness: " << problem
            << "\nusage: load_harness [--drivers=gpu,cpu] [--callers=16] [--cycles=10000 | --duration=1h] "
               "[--warmup=3s] [--max-rss-growth-kb=8192] [--peer=KUBELETPEER]\n";
  return 2;
}

int Main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--drivers") {
      flags.drivers = absl::StrSplit(value, ',');
      for (const std::string& driver : flags.drivers) {
        if (driver != "gpu" && driver != "cpu") return Usage("--drivers: gpu and cpu, not " + driver);
      }
    } else if (name == "--callers") {
      // More than 30 would put more than 15 CPU claims on a socket at once.
      if (!ParseNumber(value, flags.callers) || flags.callers < 1 || flags.callers > 30) {
        return Usage("--callers: 1 to 30");
      }
    } else if (name == "--cycles") {
      if (!ParseNumber(value, flags.cycles) || flags.cycles < 1) return Usage("--cycles: a positive number");
    } else if (name == "--duration" || name == "--warmup") {
      absl::Duration d;
      if (!absl::ParseDuration(value, &d) || d < absl::ZeroDuration()) return Usage(name + ": a duration like 1h");
      (name == "--duration" ? flags.duration : flags.warmup) = d;
    } else if (name == "--max-rss-growth-kb") {
      if (!ParseNumber(value, flags.max_rss_growth_kb) || flags.max_rss_growth_kb < 0) {
        return Usage("--max-rss-growth-kb: a number");
      }
    } else if (name == "--peer") {
      flags.peer = value;
    } else {
      return Usage("unknown flag " + arg);
    }
  }
  absl::StatusOr<std::string> peer = KubeletPeerBinary(flags.peer);
  if (!peer.ok()) {
    std::cerr << "load_harness: " << peer.status() << "\n";
    return 1;
  }
  flags.peer = *peer;

  std::vector<Result> results;
  for (const std::string& driver : flags.drivers) {
    const absl::Time start = absl::Now();
    results.push_back(Load(driver, flags).Go());
    std::cout << "[" << driver << "] done in "
              << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(100))) << std::endl;
  }
  PrintTable(flags, results);
  for (const Result& r : results) {
    if (!r.violations.empty()) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace dra::testing

int main(int argc, char** argv) { return dra::testing::Main(argc, argv); }
