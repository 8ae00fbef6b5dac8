// crash_harness: the example GPU and CPU drivers under the kubelet peer,
// made to die at random crash points (src/crashpoint/crash_point.h),
// killed with SIGKILL at random moments of start-ups and of random prepare
// and unprepare calls of random claims, or stopped with SIGTERM during a
// call, restarted, and checked (docs/reliability.md, "Crash points"):
//
//   - the driver starts again: its checkpoint loads;
//   - after its start-up clean-up, every claim file in the CDI dir and the
//     metadata dir belongs to a claim the checkpoint has, every prepared
//     claim in the checkpoint has its CDI spec, and the plugin data and
//     registry dirs hold nothing but the checkpoint and the sockets;
//   - every claim the kubelet was told is prepared can be unprepared, and a
//     prepare of it returns the devices (and CPUs) of its first prepare;
//   - no CPU is in two claims at once, neither among the claims the kubelet
//     holds prepared nor among those the checkpoint holds prepared;
//   - at the end everything unprepares, nothing is left on disk, and the
//     driver's pool is published whole.
//
// Some restarts also find damage on disk, as a bad disk or a careless hand
// leaves it (docs/reliability.md, "Damage"): a byte of a checkpoint line
// changed (any line but the last, whose damage is a commit cut short, which
// the crash points cover), the checkpoint overwritten with garbage, a
// prepared claim's CDI spec or a device metadata file overwritten. Then:
//
//   - the driver starts all the same; a damaged checkpoint is kept aside as
//     it was (<file>.unreadable-<time>), never deleted;
//   - every claim the kubelet holds prepared is still in the checkpoint,
//     sound or quarantined; a quarantined one is logged by UID and holds
//     every device of its allocation (the GPU driver's) until it is
//     prepared again or unprepared; damaged CDI specs and metadata files of
//     prepared claims are written again from the checkpoint;
//   - a quarantined CPU claim lost its CPU set with its record: its next
//     prepare may pin it to other CPUs (a known limit, docs/reliability.md).
//
// Prints a table per driver and per crash point; exits 1 on any violation.
//
//   crash_harness [--drivers=gpu,cpu] [--iterations=1000] [--damage=0.15]
//                 [--seed=N] [--peer=KUBELETPEER] [--list-points]
//
// --damage: the probability that a restart finds damage on disk.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cpu_driver.h"
#include "cpu_resources.h"
#include "cpuset.h"
#include "crash/example_node.h"
#include "crash/kubelet_peer.h"
#include "crashpoint/crash_point.h"
#include "dra/cdi/codec.h"
#include "dra/cdi/spec_dir.h"
#include "dra/k8s/resource_claim_json.h"
#include "example_driver_process.h"
#include "fake_sysfs.h"
#include "kubeletplugin/checkpoint.h"
#include "support/checkpoint_file.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::testing {
namespace {

using dra::internal::kCrashPoints;
using nlohmann::json;

constexpr absl::Duration kCallTimeout = absl::Seconds(20);
constexpr absl::Duration kStartTimeout = absl::Seconds(30);
// An armed point that has not fired after this many calls is given up: the
// driver restarts with another. Compaction, which the checkpoint.*_replace
// points wait for, comes once in 64 commits or more.
constexpr int kMaxCallsArmed = 80;
constexpr double kArmProbability = 0.6;          // at a restart
constexpr double kKillProbability = 0.15;        // per call of an instance without an armed point
constexpr double kStopProbability = 0.25;        // of those: SIGTERM, a clean stop, instead of SIGKILL
constexpr double kKillAtStartProbability = 0.1;  // per start of an instance without an armed point
constexpr double kPrepareProbability = 0.55;
constexpr int kMaxClaimsPerCall = 4;

struct Flags {
  std::vector<std::string> drivers = {"gpu", "cpu"};
  int iterations = 1000;
  double damage = 0.15;  // per restart after a death or stop: damage on disk too
  uint64_t seed = std::random_device()();
  std::string peer;
};

// What the kubelet knows of a claim.
enum class Known {
  kUnprepared,  // never prepared, or its last unprepare succeeded
  kPrepared,    // a prepare succeeded and no unprepare was tried since
  kUncertain,   // a call about it failed because the driver died
};

struct Claim {
  k8s::ClaimRef ref;
  int socket = -1;  // CPU claims: the socket, and how many of its CPUs
  int cpus = 0;
  std::vector<std::string> allocated;  // the names of the devices of its allocation
  Known known = Known::kUnprepared;
  // Since the last unprepare: the devices of the first prepare that
  // succeeded (JSON), and for a CPU claim its CPUs.
  std::string devices;
  std::vector<int> cpuset;
};

// One example driver as the harness runs it.
struct Scenario {
  std::string name;  // "gpu", "cpu"
  std::string binary;
  std::string driver_name;
  std::vector<std::string> flags;
  std::set<std::string> unreachable;  // crash points this driver never reaches
  int published_devices = 0;          // in its pool
  cdi::Kind claim_kind;               // of its per-claim CDI specs
  cdi::Format claim_format = cdi::Format::kJson;
};

struct Tally {
  std::string driver;
  int calls = 0;  // iterations: the random calls and the re-prepares after restarts
  int restarts = 0;
  int kills = 0;                       // SIGKILL at a random moment of a call or of a start
  int stops = 0;                       // SIGTERM at a random moment of a call
  int given_up = 0;                    // armed points that had not fired after kMaxCallsArmed calls
  int retries = 0;                     // calls the kubelet's side failed (re-registration) and sent again
  std::map<std::string, int> damaged;  // restarts that found damage, by kind
  int quarantined = 0;                 // quarantined entries found after a start
  std::map<std::string, int> armed;
  std::map<std::string, int> hit;
  std::vector<std::string> violations;
};

// The last `lines` lines of `text`.
std::string Tail(const std::string& text, int lines) {
  size_t start = text.size();
  for (int i = 0; i <= lines; ++i) {
    if (start == 0) return text;
    start = text.rfind('\n', start - 1);
    if (start == std::string::npos) return text;
  }
  return text.substr(start + 1);
}

// "dra crash point <name> hit <n>: _exit(137)" in a driver's log.
std::string CrashPointIn(const std::string& log) {
  constexpr std::string_view kPrefix = "dra crash point ";
  const size_t at = log.rfind(kPrefix);
  if (at == std::string::npos) return "";
  const size_t start = at + kPrefix.size();
  return log.substr(start, log.find(' ', start) - start);
}

class Run {
 public:
  Run(Scenario scenario, uint64_t seed, std::string peer_binary, double damage)
      : scenario_(std::move(scenario)), rng_(seed), peer_binary_(std::move(peer_binary)), damage_probability_(damage) {
    tally_.driver = scenario_.name;
    for (std::string_view point : kCrashPoints) {
      if (!scenario_.unreachable.contains(std::string(point))) points_.emplace_back(point);
    }
  }

  Tally Go(int iterations) {
    if (!SetUp()) return tally_;
    while (tally_.calls < iterations && !stopped_) Step();
    if (!stopped_) Finish();
    if (peer_ != nullptr) peer_.reset();
    driver_.Stop();
    return tally_;
  }

 private:
  // The node (API server, Node, dirs), the claims, the peer and the
  // first driver instance.
  bool SetUp() {
    absl::StatusOr<ExampleNode> node = StartExampleNode(dir_);
    if (!node.ok()) return Fail(node.status().ToString());
    node_ = *std::move(node);
    if (scenario_.name == "cpu") {
      // Two sockets of 4 cores with 2 threads: CPUs 0-3 and 8-11 on socket
      // 0, 4-7 and 12-15 on socket 1; CPU 0 is reserved.
      FakeMachine machine;
      machine.sockets = 2;
      machine.threads_per_core = 2;
      WriteFakeSysfs(dir_.Join("sysfs"), machine);
      for (int socket = 0; socket < 2; ++socket) {
        for (int core = 0; core < 4; ++core) {
          for (int thread = 0; thread < 2; ++thread) socket_of_[machine.CpuId(socket, core, thread)] = socket;
        }
      }
      capacity_ = {7, 8};
      scenario_.flags.insert(scenario_.flags.end(), {"--sysfs-root=" + dir_.Join("sysfs"),
                                                     "--nri-socket=", "--reserved-cpus=0", "--rescan-interval=0"});
    }
    if (!CreateClaims()) return false;
    absl::StatusOr<std::unique_ptr<KubeletPeer>> peer =
        KubeletPeer::Start(peer_binary_, dir_.Join("registry"), scenario_.driver_name, dir_.Join("peer.log"));
    if (!peer.ok()) return Fail(peer.status().ToString());
    peer_ = *std::move(peer);
    return Start(/*arm=*/false);
  }

  std::string Uuid() {
    std::uniform_int_distribution<int> hex(0, 15);
    std::string uuid;
    for (int i = 0; i < 32; ++i) {
      if (i == 8 || i == 12 || i == 16 || i == 20) uuid += '-';
      const int digit = i == 12 ? 4 : i == 16 ? 8 + hex(rng_) % 4 : hex(rng_);
      uuid += "0123456789abcdef"[digit];
    }
    return uuid;
  }

  // Claims allocated as the scheduler would: GPU claims of 1-3 GPUs, each
  // whole (one of gpu-0..3, never two claims the same one) or a share of one
  // (gpu-4..7); CPU claims of 1-3 CPUs of one socket.
  bool CreateClaims() {
    const bool gpu = scenario_.name == "gpu";
    const int count = gpu ? 12 : 10;
    int next_whole = 0;
    for (int i = 0; i < count; ++i) {
      Claim& claim = claims_.emplace_back();
      const std::string name = absl::StrCat(scenario_.name, "-claim-", i);
      std::vector<k8s::DeviceRequestAllocationResult> results;
      if (gpu) {
        const int devices = std::uniform_int_distribution<int>(1, 3)(rng_);
        for (int d = 0; d < devices; ++d) {
          k8s::DeviceRequestAllocationResult& result = results.emplace_back();
          result.request = absl::StrCat("gpu-", d);
          if (next_whole < 4 && Chance(0.5)) {
            result.device = absl::StrCat("gpu-", next_whole++);
          } else {
            result.device = absl::StrCat("gpu-", std::uniform_int_distribution<int>(4, 7)(rng_));
            result.share_id = Uuid();
            result.consumed_capacity["memory"] = k8s::Quantity::FromInt(int64_t{1} << 30);
          }
        }
      } else {
        claim.socket = std::uniform_int_distribution<int>(0, 1)(rng_);
        claim.cpus = std::uniform_int_distribution<int>(1, 3)(rng_);
        k8s::DeviceRequestAllocationResult& result = results.emplace_back();
        result.request = "cpus";
        result.device = cpu::SocketDeviceName(claim.socket);
        result.share_id = Uuid();
        result.consumed_capacity[cpu::CpuCapacityName(scenario_.driver_name, false)] =
            k8s::Quantity::FromInt(claim.cpus);
      }
      for (const k8s::DeviceRequestAllocationResult& result : results) claim.allocated.push_back(result.device);
      absl::StatusOr<k8s::ClaimRef> ref =
          CreateAllocatedClaim(*node_.client, scenario_.driver_name, name, std::move(results));
      if (!ref.ok()) return Fail(ref.status().ToString());
      claim.ref = *ref;
    }
    return true;
  }

  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(rng_)];
  }

  std::string PluginDir() const { return dir_.Join("plugins/" + scenario_.driver_name); }

  // Records a violation with where the run was and the driver's last words.
  void Violation(const std::string& what) {
    std::string message = absl::StrCat("[", scenario_.name, "] call ", tally_.calls, ", instance ", instance_,
                                       armed_.empty() ? "" : absl::StrCat(" (armed: ", armed_, ")"), ": ", what);
    std::cerr << "VIOLATION " << message << "\n  driver log tail:\n" << Tail(ReadFile(LogFile()), 15) << "\n";
    if (tally_.violations.size() < 3) {
      // The temp dir goes with the run: its state at the first violations
      // stays for a look (cp copies all but the sockets).
      const std::string kept = absl::StrCat(dir_.path(), "-violation-", tally_.violations.size() + 1);
      RunProcess({"/bin/cp", "-a", dir_.path(), kept}).IgnoreError();
      std::cerr << "  the driver's dirs, logs and checkpoint at this point: " << kept << "\n";
    }
    tally_.violations.push_back(std::move(message));
  }

  // A failure of the harness itself, or one after which the run cannot go
  // on (the driver does not start): a violation that ends the run.
  bool Fail(const std::string& what) {
    Violation(what);
    stopped_ = true;
    return false;
  }

  std::string LogFile() const { return dir_.Join(absl::StrCat("driver-", instance_, ".log")); }

  // Starts a driver instance, maybe with a crash point armed, until one is
  // registered with the peer; then checks what it started from.
  bool Start(bool arm) {
    if (arm && Chance(damage_probability_)) Damage();
    while (true) {
      ++instance_;
      armed_.clear();
      calls_armed_ = 0;
      std::vector<std::string> env;
      if (arm && Chance(kArmProbability)) {
        armed_ = Pick(points_);
        const int n = Pick(std::vector<int>{1, 1, 1, 2, 2, 3});
        env.push_back(absl::StrCat("DRA_CRASH_POINT=", armed_, ":", n));
        ++tally_.armed[armed_];
      }
      absl::StatusOr<ChildProcess> spawned = ChildProcess::Spawn(
          ExampleDriverArgv(scenario_.binary, scenario_.driver_name, dir_, /*http_port=*/0, scenario_.flags), LogFile(),
          env);
      if (!spawned.ok()) return Fail(spawned.status().ToString());
      driver_ = *std::move(spawned);
      const absl::Time spawned_at = absl::Now();
      if (arm && armed_.empty() && Chance(kKillAtStartProbability)) {
        // A crash somewhere in start-up: the checkpoint's load, the repair
        // of the claim files, the first publish.
        absl::SleepFor(typical_start_ * std::uniform_real_distribution<double>(0, 1)(rng_));
        if (!driver_.Exited()) {
          driver_.Kill();
          ++tally_.kills;
          continue;
        }
      }
      // The Helper logs this once the kubelet's plugin manager (the peer)
      // has registered the instance.
      std::string how;
      bool exited = false;
      const bool settled = PollUntil(
          [&] {
            exited = driver_.Exited(&how);
            return exited || absl::StrContains(ReadFile(LogFile()), "Registered with the kubelet");
          },
          kStartTimeout);
      if (settled && !exited) {
        typical_start_ = typical_start_ * 0.9 + (absl::Now() - spawned_at) * 0.1;
        break;
      }
      if (!exited)
        return Fail(absl::StrCat("the driver did not register within ", absl::FormatDuration(kStartTimeout)));
      if (!Died(how)) return Fail(absl::StrCat("the driver did not start: it ", how));
      arm = false;  // it died starting; the next instance must get further
    }
    ++tally_.restarts;
    checkpoint_damaged_ = false;
    if (damage_.has_value()) CheckDamage();
    CheckNode();
    recheck_ = true;
    return true;
  }

  // What a restart finds damaged on disk; for a damaged checkpoint, what it
  // held, to be found kept aside.
  struct DamageDone {
    std::string kind;
    std::string path;
    std::string content;
  };

  // Damages one file of the stopped driver's at random (see the top).
  void Damage() {
    const std::string checkpoint = testing::CheckpointFile(PluginDir());
    const std::string log = ReadFile(checkpoint);
    std::vector<std::string> kinds;
    if (log.find('\n') != std::string::npos) kinds = {"checkpoint line", "checkpoint garbage"};
    std::vector<std::string> specs;
    for (const Claim& claim : claims_) {
      if (claim.known == Known::kPrepared && std::filesystem::exists(SpecPath(claim.ref.uid))) {
        specs.push_back(SpecPath(claim.ref.uid));
      }
    }
    if (!specs.empty()) kinds.push_back("CDI spec");
    std::vector<std::string> metadata;
    std::error_code error;
    for (const auto& file : std::filesystem::recursive_directory_iterator(MetadataDir(), error)) {
      if (file.is_regular_file()) metadata.push_back(file.path());
    }
    if (!metadata.empty()) kinds.push_back("metadata file");
    if (kinds.empty()) return;

    DamageDone damage{Pick(kinds), checkpoint, log};
    if (damage.kind == "checkpoint line") {
      // Lines that end in a newline; of three or more, not the last.
      std::vector<size_t> starts = {0};
      for (size_t at = log.find('\n'); at != std::string::npos && at + 1 < log.size(); at = log.find('\n', at + 1)) {
        starts.push_back(at + 1);
      }
      const size_t complete = std::count(log.begin(), log.end(), '\n');
      const size_t last = complete >= 3 ? complete - 2 : complete - 1;
      const size_t line = std::uniform_int_distribution<size_t>(0, last)(rng_);
      const size_t end = log.find('\n', starts[line]);
      const size_t at = std::uniform_int_distribution<size_t>(starts[line], end - 1)(rng_);
      constexpr std::string_view kReplacements = "0a{}\":,x ";
      char replacement = damage.content[at];
      while (replacement == damage.content[at])
        replacement = Pick(std::vector<char>(kReplacements.begin(), kReplacements.end()));
      damage.content[at] = replacement;
    } else if (damage.kind == "checkpoint garbage") {
      damage.content.clear();
      const int length = std::uniform_int_distribution<int>(1, 512)(rng_);
      for (int i = 0; i < length; ++i)
        damage.content += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng_));
    } else {
      damage.path = Pick(damage.kind == "CDI spec" ? specs : metadata);
      damage.content = "damaged {";
    }
    WriteFile(damage.path, damage.content);
    damage_ = std::move(damage);
  }

  // After a start that found damage: a damaged checkpoint was kept aside as
  // it was. (CheckNode checks the rest.)
  void CheckDamage() {
    const DamageDone damage = *std::exchange(damage_, std::nullopt);
    ++tally_.damaged[damage.kind];
    checkpoint_damaged_ = absl::StartsWith(damage.kind, "checkpoint");
    if (!checkpoint_damaged_) return;
    const std::string prefix = std::filesystem::path(damage.path).filename().string() + ".unreadable-";
    for (const auto& file : std::filesystem::directory_iterator(PluginDir())) {
      const std::string name = file.path().filename();
      if (name.starts_with(prefix) && !kept_aside_.contains(name) && ReadFile(file.path()) == damage.content) {
        kept_aside_.insert(name);
        return;
      }
    }
    Violation(absl::StrCat("the damaged checkpoint (", damage.kind, ") was not kept aside as it was"));
  }

  // Quarantined entries under a UID no claim has (damage changed it in its
  // record): the kubelet never asks about them; the orphan check unprepares
  // them, as its claim has another UID (a minute later: not waited for).
  std::set<std::string> DamagedUids() const {
    std::set<std::string> uids;
    absl::StatusOr<std::unique_ptr<kubeletplugin::internal::Checkpoint>> checkpoint =
        kubeletplugin::internal::Checkpoint::Open(testing::CheckpointFile(PluginDir()));
    if (!checkpoint.ok()) return uids;
    for (const kubeletplugin::internal::CheckpointEntry& entry : (*checkpoint)->Entries()) {
      if (!entry.quarantined.empty() && std::none_of(claims_.begin(), claims_.end(), [&](const Claim& claim) {
            return claim.ref.uid == entry.claim.uid;
          })) {
        uids.insert(entry.claim.uid);
      }
    }
    return uids;
  }

  std::string MetadataDir() const { return PluginDir() + "/dra-device-metadata"; }

  // The driver exited on its own (`how`): true if an armed crash point ended
  // it, which is then counted; false (a violation) otherwise.
  bool Died(const std::string& how) {
    const std::string point = CrashPointIn(ReadFile(LogFile()));
    if (point.empty() || point != armed_ || how != "exited with status 137") {
      Violation(absl::StrCat("the driver ", how, " without reaching its armed crash point"));
      return false;
    }
    ++tally_.hit[point];
    armed_.clear();
    return true;
  }

  // After start-up: the checkpoint loads, nothing but it and the sockets is
  // in the plugin data and registry dirs, every claim file belongs to a
  // claim in the checkpoint, every prepared claim in it has its spec, no CPU
  // is held twice.
  void CheckNode() {
    absl::StatusOr<std::unique_ptr<kubeletplugin::internal::Checkpoint>> checkpoint =
        kubeletplugin::internal::Checkpoint::Open(testing::CheckpointFile(PluginDir()));
    if (!checkpoint.ok()) {
      Violation(absl::StrCat("the checkpoint does not load: ", checkpoint.status().ToString()));
      return;
    }
    std::map<std::string, kubeletplugin::internal::CheckpointEntry> entries;
    for (kubeletplugin::internal::CheckpointEntry& entry : (*checkpoint)->Entries()) {
      entries.emplace(entry.claim.uid, std::move(entry));
    }
    for (const auto& file : std::filesystem::directory_iterator(dir_.Join("cdi"))) {
      const std::string name = file.path().filename();
      // A start that lost checkpoint records keeps what it cannot account
      // for, the temp files of writes a crash cut short too; the next one
      // removes them.
      if (checkpoint_damaged_ && name.starts_with(".")) continue;
      for (const Claim& claim : claims_) {
        if (absl::StrContains(name, claim.ref.uid) && !entries.contains(claim.ref.uid)) {
          Violation(absl::StrCat("CDI dir: ", name, " belongs to claim ", claim.ref.ToString(),
                                 ", which the checkpoint does not have"));
        }
      }
    }
    for (const auto& file : std::filesystem::directory_iterator(PluginDir())) {
      const std::string name = file.path().filename();
      if (name != "checkpoint.json" && name != "dra-cpp-checkpoint" && name != "dra.sock" &&
          name != "dra-device-metadata" && !kept_aside_.contains(name)) {
        Violation(absl::StrCat("plugin data dir: ", name, " is left over"));
      }
    }
    for (const auto& file : std::filesystem::directory_iterator(dir_.Join("registry"))) {
      const std::string name = file.path().filename();
      if (name != scenario_.driver_name + "-reg.sock") Violation(absl::StrCat("registry dir: ", name, " is left over"));
    }
    for (const Claim& claim : claims_) {
      if (claim.known == Known::kPrepared && !entries.contains(claim.ref.uid)) {
        Violation(
            absl::StrCat("the checkpoint lost claim ", claim.ref.ToString(), ", which the kubelet holds prepared"));
      }
    }
    CheckQuarantinedAndHeld(entries);
    std::error_code error;
    for (const auto& file : std::filesystem::directory_iterator(MetadataDir(), error)) {
      const std::string name = file.path().filename();
      const bool known = std::any_of(entries.begin(), entries.end(), [&](const auto& entry) {
        return name == entry.second.claim.namespace_ + "_" + entry.second.claim.name;
      });
      if (!known) Violation(absl::StrCat("metadata dir: ", name, " belongs to no claim in the checkpoint"));
    }
    std::map<int, std::string> holder;
    for (const auto& [uid, entry] : entries) {
      if (entry.state != kubeletplugin::internal::ClaimState::kPrepared) continue;
      if (!entry.cdi_spec.empty() && !SpecFileHolds(uid, entry.cdi_spec)) {
        Violation(absl::StrCat("prepared claim ", entry.claim.ToString(), ": its CDI spec ", SpecPath(uid),
                               " is not the checkpoint's"));
      }
      for (const auto& [path, content] : entry.metadata_files) {
        if (ReadFile(path) != content) {
          Violation(absl::StrCat("prepared claim ", entry.claim.ToString(), ": its metadata file ", path,
                                 " is not the checkpoint's"));
        }
      }
      if (scenario_.name != "cpu") continue;
      const json data = json::parse(entry.driver_data, nullptr, false);
      absl::StatusOr<std::vector<int>> cpus = data.is_object() && data.value("cpus", json()).is_string()
                                                  ? cpu::ParseCpuList(data["cpus"].get<std::string>())
                                                  : absl::InvalidArgumentError("no cpus");
      if (!cpus.ok()) {
        Violation(absl::StrCat("prepared claim ", entry.claim.ToString(), ": driver data ", entry.driver_data));
        continue;
      }
      for (int id : *cpus) {
        if (auto [it, fresh] = holder.emplace(id, entry.claim.ToString()); !fresh) {
          Violation(absl::StrCat("the checkpoint holds CPU ", id, " prepared for both ", it->second, " and ",
                                 entry.claim.ToString()));
        }
      }
    }
  }

  // Each quarantined entry was logged. Each claim the kubelet holds
  // prepared holds the devices of its allocation (the GPU driver's), even
  // when its record was lost to damage; a CPU claim whose record was lost
  // lost its CPU set with it: its next prepare may choose others.
  void CheckQuarantinedAndHeld(const std::map<std::string, kubeletplugin::internal::CheckpointEntry>& entries) {
    const std::string log = ReadFile(LogFile());
    const std::vector<absl::string_view> lines = absl::StrSplit(log, '\n');
    for (const auto& [key, entry] : entries) {
      if (entry.quarantined.empty()) continue;
      ++tally_.quarantined;
      const std::string& uid = key;  // a lambda may not capture a structured binding (clang 14)
      if (std::none_of(lines.begin(), lines.end(), [&](absl::string_view line) {
            return absl::StrContains(line, "uarantined") && absl::StrContains(line, uid);
          })) {
        Violation(
            absl::StrCat("claim ", uid, " is quarantined (", entry.quarantined, "), and its start did not say so"));
      }
    }
    for (Claim& claim : claims_) {
      const auto it = entries.find(claim.ref.uid);
      if (claim.known != Known::kPrepared || it == entries.end()) continue;
      const kubeletplugin::internal::CheckpointEntry& entry = it->second;
      if (entry.state != kubeletplugin::internal::ClaimState::kPrepared) claim.cpuset.clear();
      if (scenario_.name != "gpu") continue;
      for (const std::string& device : claim.allocated) {
        if (std::none_of(entry.held.begin(), entry.held.end(),
                         [&](const kubeletplugin::internal::HeldDevice& held) { return held.device == device; })) {
          Violation(absl::StrCat("claim ", claim.ref.ToString(), ", which the kubelet holds prepared, does not hold ",
                                 device, entry.quarantined.empty() ? "" : " (quarantined: " + entry.quarantined + ")"));
        }
      }
    }
  }

  std::string SpecPath(const std::string& uid) const {
    return dir_.Join(absl::StrCat("cdi/", cdi::TransientSpecFileName(scenario_.claim_kind, uid),
                                  cdi::FileExtension(scenario_.claim_format)));
  }

  // Whether the claim's spec file holds the spec the checkpoint has as JSON.
  bool SpecFileHolds(const std::string& uid, const std::string& checkpointed) const {
    absl::StatusOr<cdi::Spec> file = cdi::DecodeSpec(ReadFile(SpecPath(uid)), scenario_.claim_format);
    absl::StatusOr<cdi::Spec> recorded = cdi::DecodeSpec(checkpointed, cdi::Format::kJson);
    return file.ok() && recorded.ok() && *file == *recorded;
  }

  // A CPU claim's CPUs, from the CDI spec the kubelet's runtime reads.
  absl::StatusOr<std::vector<int>> SpecCpus(const Claim& claim) const {
    const json spec = json::parse(ReadFile(SpecPath(claim.ref.uid)), nullptr, false);  // the CPU driver's is JSON
    const std::string prefix = cpu::CpusetEnvName(claim.ref.uid) + "=";
    if (spec.is_object() && spec.contains("devices")) {
      for (const json& device : spec["devices"]) {
        for (const json& env : device.value("containerEdits", json::object()).value("env", json::array())) {
          if (env.is_string() && absl::StartsWith(env.get<std::string>(), prefix)) {
            return cpu::ParseCpuList(env.get<std::string>().substr(prefix.size()));
          }
        }
      }
    }
    return absl::NotFoundError(absl::StrCat("no ", prefix, " in ", SpecPath(claim.ref.uid)));
  }

  // The CDI devices the runtime would find: "<kind>=<name>" of every spec.
  std::set<std::string> CdiDevices() const {
    std::set<std::string> ids;
    for (const auto& file : std::filesystem::directory_iterator(dir_.Join("cdi"))) {
      const std::string extension = file.path().extension();
      if (file.path().filename().string().starts_with(".") || (extension != ".json" && extension != ".yaml")) continue;
      absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(ReadFile(file.path()), cdi::Format::kYaml);  // YAML reads JSON
      if (!spec.ok()) continue;
      for (const cdi::Device& device : spec->devices) ids.insert(absl::StrCat(spec->kind, "=", device.name));
    }
    return ids;
  }

  // CPUs of each socket the kubelet may find taken: those of claims that
  // are or may be prepared.
  std::vector<int> Held() const {
    std::vector<int> held(capacity_.size(), 0);
    for (const Claim& claim : claims_) {
      if (claim.socket >= 0 && claim.known != Known::kUnprepared) held[claim.socket] += claim.cpus;
    }
    return held;
  }

  void Step() {
    std::string how;
    if (driver_.Exited(&how)) {  // a crash point in a background thread
      if (!Died(how)) return void(stopped_ = true);
      Start(/*arm=*/true);
      return;
    }
    if (absl::StartsWith(armed_, "publisher.")) {
      // Slices deleted behind the publisher's back get written again.
      for (int round = 0; round < 3 && !driver_.Exited(); ++round) {
        const int before = SliceCount();
        DeleteSlices();
        PollUntil([&] { return driver_.Exited() || SliceCount() == before; }, absl::Seconds(10),
                  absl::Milliseconds(50));
      }
      if (!driver_.Exited()) GiveUp();
      return;
    }
    if (!armed_.empty() && calls_armed_ >= kMaxCallsArmed) return GiveUp();

    std::vector<Claim*> chosen;
    bool prepare = true;
    if (recheck_) {
      // After a restart the kubelet's prepared claims must come back as they were.
      recheck_ = false;
      for (Claim& claim : claims_) {
        if (claim.known == Known::kPrepared) chosen.push_back(&claim);
      }
      if (chosen.empty()) return;
    } else {
      prepare = Chance(kPrepareProbability);
      std::vector<Claim*> candidates;
      for (Claim& claim : claims_) candidates.push_back(&claim);
      std::shuffle(candidates.begin(), candidates.end(), rng_);
      const int want = std::uniform_int_distribution<int>(1, kMaxClaimsPerCall)(rng_);
      std::vector<int> held = Held();
      for (Claim* claim : candidates) {
        if (static_cast<int>(chosen.size()) == want) break;
        // The scheduler never gives out more CPUs than a socket has.
        if (prepare && claim->socket >= 0 && claim->known == Known::kUnprepared) {
          if (held[claim->socket] + claim->cpus > capacity_[claim->socket]) continue;
          held[claim->socket] += claim->cpus;
        }
        chosen.push_back(claim);
      }
    }
    ++tally_.calls;
    Call(prepare, chosen, armed_.empty() && Chance(kKillProbability));
  }

  // The armed point did not fire: a clean restart arms another. The
  // publisher writes on its own, so the point may still fire during the
  // shutdown; that counts as a hit.
  void GiveUp() {
    const std::string stopped = driver_.Stop();
    if (stopped == "exited with status 0") {
      ++tally_.given_up;
    } else if (!Died(stopped)) {
      return void(stopped_ = true);
    }
    Start(/*arm=*/true);
  }

  std::vector<json> Slices() {
    k8s::ListOptions options;
    options.field_selector = "spec.driver=" + scenario_.driver_name;
    absl::StatusOr<k8s::ListResult> slices = node_.client->ListAll(k8s::kResourceSlices, "", options);
    return slices.ok() ? slices->items : std::vector<json>();
  }

  int SliceCount() { return static_cast<int>(Slices().size()); }

  void DeleteSlices() {
    for (const json& slice : Slices()) {
      node_.client->Delete(k8s::kResourceSlices, "", slice["metadata"]["name"].get<std::string>()).IgnoreError();
    }
  }

  // A failure on the kubelet's side, before the driver answered: the
  // plugin manager was re-registering a restarted driver ("not
  // registered"), or closed or had not yet opened its connection.
  static bool KubeletSide(const json& answer) {
    const std::string error = answer.value("error", "");
    return absl::StrContains(error, "is not registered") || absl::StrContains(error, "code = Unavailable") ||
           absl::StrContains(error, "code = Canceled");
  }

  // One kubelet call; with `kill`, the driver gets SIGKILL at a random
  // moment of it.
  void Call(bool prepare, const std::vector<Claim*>& claims, bool kill) {
    if (!armed_.empty()) ++calls_armed_;
    json command = {{"op", prepare ? "prepare" : "unprepare"},
                    {"claims", json::array()},
                    {"timeout", absl::FormatDuration(kCallTimeout)}};
    for (const Claim* claim : claims)
      command["claims"].push_back(absl::StrCat(claim->ref.ToString(), "/", claim->ref.uid));
    absl::StatusOr<int64_t> id = peer_->Send(command);
    if (!id.ok()) return void(Fail(id.status().ToString()));
    const absl::Time start = absl::Now();
    absl::Duration& typical = prepare ? typical_prepare_ : typical_unprepare_;
    std::string how;
    bool killed = false;
    if (kill) {
      // A random moment of a typical call of this kind, which the call may
      // outlast or not.
      absl::SleepFor(typical * std::uniform_real_distribution<double>(0, 1.2)(rng_));
      killed = !driver_.Exited(&how);
      if (killed && Chance(kStopProbability)) {
        // In-flight calls get the Helper's shutdown grace, then the driver exits 0.
        ++tally_.stops;
        if (const std::string stopped = driver_.Stop(); stopped != "exited with status 0") {
          Violation(absl::StrCat("SIGTERM during a call: the driver ", stopped));
        }
      } else if (killed) {
        driver_.Kill();
        ++tally_.kills;
      }
    }
    absl::StatusOr<json> answer = peer_->Receive(*id, kCallTimeout + absl::Seconds(10));
    if (!answer.ok()) return void(Fail(answer.status().ToString()));
    if (!kill) typical = typical * 0.9 + (absl::Now() - start) * 0.1;

    bool died = killed || driver_.Exited(&how);
    // The process may take a moment to be reaped after its sockets closed.
    if (answer->contains("error") && !died) died = PollUntil([&] { return driver_.Exited(&how); }, absl::Seconds(1));
    if (!died && KubeletSide(*answer)) {
      // As the kubelet's pod worker would, try again.
      ++tally_.retries;
      PollUntil(
          [&] {
            answer = peer_->Call(command, kCallTimeout + absl::Seconds(10));
            return !answer.ok() || !KubeletSide(*answer) || driver_.Exited(&how);
          },
          absl::Seconds(20), absl::Milliseconds(100));
      if (!answer.ok()) return void(Fail(answer.status().ToString()));
      died = driver_.Exited(&how);
    }
    if (answer->contains("error") && !died) {
      Violation(absl::StrCat(prepare ? "prepare" : "unprepare",
                             " failed while the driver was running: ", answer->at("error").get<std::string>()));
    }
    if (died && !killed && !Died(how)) return void(stopped_ = true);

    const json results = answer->value("response", json::object()).value("claims", json::object());
    const std::set<std::string> cdi_devices = prepare ? CdiDevices() : std::set<std::string>();
    for (Claim* claim : claims) {
      const json result = results.value(claim->ref.uid, json());
      if (result.is_null()) {
        // No answer: the driver died during the call.
        if (prepare && claim->known != Known::kPrepared) claim->known = Known::kUncertain;
        if (!prepare) Forget(*claim, Known::kUncertain);
        continue;
      }
      if (result.contains("error")) {
        // A driver told to stop during the call may refuse what it had not
        // begun ("the DRA plugin is stopping"); the kubelet tries again.
        const std::string error = result["error"].get<std::string>();
        if (!killed || !absl::StrContains(error, "stopping")) {
          Violation(absl::StrCat(prepare ? "prepare" : "unprepare", " of ", claim->ref.ToString(), " (",
                                 claim->known == Known::kPrepared ? "prepared" : "not prepared", ") failed: ", error));
        }
        if (prepare && claim->known != Known::kPrepared) claim->known = Known::kUncertain;
        if (!prepare) Forget(*claim, Known::kUncertain);
        continue;
      }
      if (prepare) {
        Prepared(*claim, result.value("devices", json::array()), cdi_devices);
      } else {
        Forget(*claim, Known::kUnprepared);
      }
    }
    if (died) Start(/*arm=*/true);
  }

  // An unprepare of `claim` ended as `known`. One that failed leaves a claim
  // the kubelet never had prepared as it was.
  void Forget(Claim& claim, Known known) {
    if (claim.known == Known::kUnprepared) return;
    claim.known = known;
    claim.devices.clear();
    claim.cpuset.clear();
  }

  // A prepare of `claim` succeeded with `devices`.
  void Prepared(Claim& claim, const json& devices, const std::set<std::string>& cdi_devices) {
    for (const json& device : devices) {
      for (const json& id : device.value("cdi_device_ids", json::array())) {
        if (!cdi_devices.contains(id.get<std::string>())) {
          Violation(absl::StrCat("prepared claim ", claim.ref.ToString(), ": CDI device ", id.get<std::string>(),
                                 " is in no spec file"));
        }
      }
    }
    const std::string answer = devices.dump();
    if (!claim.devices.empty() && answer != claim.devices) {
      Violation(absl::StrCat("prepare of ", claim.ref.ToString(), " returned other devices than before: ", answer,
                             ", was ", claim.devices));
    }
    if (claim.devices.empty()) claim.devices = answer;
    claim.known = Known::kPrepared;
    if (claim.socket < 0) return;
    absl::StatusOr<std::vector<int>> cpus = SpecCpus(claim);
    if (!cpus.ok())
      return Violation(absl::StrCat("prepared claim ", claim.ref.ToString(), ": ", cpus.status().message()));
    if (!claim.cpuset.empty() && *cpus != claim.cpuset) {
      Violation(absl::StrCat("prepared claim ", claim.ref.ToString(), " has CPUs ", cpu::FormatCpuList(*cpus), ", was ",
                             cpu::FormatCpuList(claim.cpuset)));
    }
    claim.cpuset = *cpus;
    if (static_cast<int>(cpus->size()) != claim.cpus) {
      Violation(absl::StrCat("prepared claim ", claim.ref.ToString(), " got CPUs ", cpu::FormatCpuList(*cpus),
                             ", wants ", claim.cpus));
    }
    for (int id : *cpus) {
      if (id == 0 || socket_of_.at(id) != claim.socket) {
        Violation(absl::StrCat("prepared claim ", claim.ref.ToString(), " got CPU ", id, ", not one of socket ",
                               claim.socket, "'s unreserved CPUs"));
      }
      for (const Claim& other : claims_) {
        if (&other != &claim && other.known == Known::kPrepared &&
            std::find(other.cpuset.begin(), other.cpuset.end(), id) != other.cpuset.end()) {
          Violation(
              absl::StrCat("CPU ", id, " is prepared for both ", other.ref.ToString(), " and ", claim.ref.ToString()));
        }
      }
    }
  }

  // Everything unprepares; after a clean restart nothing is left and the
  // pool is published whole, however the publisher's writes were cut short.
  void Finish() {
    std::string how;
    if (driver_.Exited(&how)) {
      if (!Died(how) || !Start(/*arm=*/false)) return;
    } else if (!armed_.empty()) {
      driver_.Stop();
      if (!Start(/*arm=*/false)) return;
    }
    std::vector<Claim*> all;
    for (Claim& claim : claims_) all.push_back(&claim);
    Call(/*prepare=*/false, all, /*kill=*/false);
    if (const std::string stopped = driver_.Stop(); stopped != "exited with status 0") {
      Violation(absl::StrCat("SIGTERM: the driver ", stopped));
    }
    if (!Start(/*arm=*/false)) return;
    std::vector<k8s::ClaimRef> refs;
    for (const Claim& claim : claims_) refs.push_back(claim.ref);
    for (const std::string& left : LeftAfterUnprepare(dir_, scenario_.driver_name, refs, DamagedUids())) {
      Violation(absl::StrCat("left after everything unprepared: ", left));
    }
    auto published = [&] {
      int devices = 0;
      for (const json& slice : Slices())
        devices += static_cast<int>(slice["spec"].value("devices", json::array()).size());
      return devices;
    };
    if (!PollUntil([&] { return published() == scenario_.published_devices; }, absl::Seconds(20),
                   absl::Milliseconds(100))) {
      Violation(absl::StrCat("the pool has ", published(), " devices published, want ", scenario_.published_devices));
    }
  }

  Scenario scenario_;
  std::mt19937_64 rng_;
  const std::string peer_binary_;
  const double damage_probability_;
  std::vector<std::string> points_;  // the crash points this driver can reach
  TempDir dir_;
  ExampleNode node_;
  std::unique_ptr<KubeletPeer> peer_;
  ChildProcess driver_;
  std::vector<Claim> claims_;
  std::map<int, int> socket_of_;  // CPU -> socket
  std::vector<int> capacity_;     // per socket, unreserved CPUs
  Tally tally_;
  int instance_ = 0;
  std::string armed_;  // the crash point of this instance, until it fires
  int calls_armed_ = 0;
  bool recheck_ = false;
  bool stopped_ = false;
  std::optional<DamageDone> damage_;  // done to the stopped driver's files, for its next start
  std::set<std::string> kept_aside_;  // files in the plugin dir a damaged checkpoint became
  bool checkpoint_damaged_ = false;   // at the last start
  absl::Duration typical_prepare_ = absl::Milliseconds(10);
  absl::Duration typical_unprepare_ = absl::Milliseconds(5);
  absl::Duration typical_start_ = absl::Milliseconds(100);
};

void PrintTables(const Flags& flags, const std::vector<Tally>& tallies) {
  std::cout << "\ncrash harness: seed " << flags.seed << ", " << flags.iterations << " iterations per driver\n\n";
  std::cout << "| driver | iterations | restarts | crash points armed | hit | given up | random kills | random "
               "stops | kubelet retries | restarts on damage | quarantined entries | violations |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Tally& t : tallies) {
    int armed = 0;
    int hit = 0;
    for (const auto& [point, n] : t.armed) armed += n;
    for (const auto& [point, n] : t.hit) hit += n;
    std::vector<std::string> damaged;
    for (const auto& [kind, n] : t.damaged) damaged.push_back(absl::StrCat(n, " ", kind));
    std::cout << "| " << t.driver << " | " << t.calls << " | " << t.restarts << " | " << armed << " | " << hit << " | "
              << t.given_up << " | " << t.kills << " | " << t.stops << " | " << t.retries << " | "
              << (damaged.empty() ? "0" : absl::StrJoin(damaged, ", ")) << " | " << t.quarantined << " | "
              << t.violations.size() << " |\n";
  }
  std::cout << "\n| crash point |";
  for (const Tally& t : tallies) std::cout << " " << t.driver << " armed | " << t.driver << " hit |";
  std::cout << "\n|---|";
  for (size_t i = 0; i < tallies.size(); ++i) std::cout << "---:|---:|";
  std::cout << "\n";
  for (std::string_view point : kCrashPoints) {
    std::cout << "| `" << point << "` |";
    for (const Tally& t : tallies) {
      const std::string name(point);
      std::cout << " " << (t.armed.contains(name) ? t.armed.at(name) : 0) << " | "
                << (t.hit.contains(name) ? t.hit.at(name) : 0) << " |";
    }
    std::cout << "\n";
  }
  for (const Tally& t : tallies) {
    for (const std::string& violation : t.violations) std::cout << "\nVIOLATION " << violation;
  }
  std::cout << std::endl;
}

int Usage(const std::string& problem) {
  std::cerr << "crash_harness: " << problem
            << "\nusage: crash_harness [--drivers=gpu,cpu] [--iterations=N] [--damage=P] [--seed=N] "
               "[--peer=KUBELETPEER] [--list-points]\n";
  return 2;
}

int Main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--list-points") {
      for (std::string_view point : kCrashPoints) std::cout << point << "\n";
      return 0;
    } else if (name == "--drivers") {
      flags.drivers = absl::StrSplit(value, ',');
    } else if (name == "--iterations") {
      if (!ParseNumber(value, flags.iterations) || flags.iterations < 1)
        return Usage("--iterations: a positive number");
    } else if (name == "--damage") {
      if (!absl::SimpleAtod(value, &flags.damage) || flags.damage < 0 || flags.damage > 1)
        return Usage("--damage: a probability, 0 to 1");
    } else if (name == "--seed") {
      if (!ParseNumber(value, flags.seed)) return Usage("--seed: a number");
    } else if (name == "--peer") {
      flags.peer = value;
    } else {
      return Usage("unknown flag " + arg);
    }
  }
  absl::StatusOr<std::string> peer = KubeletPeerBinary(flags.peer);
  if (!peer.ok()) {
    std::cerr << "crash_harness: " << peer.status() << "\n";
    return 1;
  }
  flags.peer = *peer;
  std::cout << "crash harness: seed " << flags.seed << " (--seed=" << flags.seed << " to run it again)" << std::endl;

  std::vector<Tally> tallies;
  for (size_t i = 0; i < flags.drivers.size(); ++i) {
    Scenario scenario;
    if (flags.drivers[i] == "gpu") {
      scenario = {"gpu",
                  DRA_GPU_DRIVER,
                  "gpu.example.com",
                  {"--num-devices=8", "--gpu-allow-multiple-allocations", "--gpu-device-status", "--device-metadata"},
                  {},
                  8,
                  {"k8s.gpu.example.com", "gpu"},  // dra-example-driver's (reference_takeover.h)
                  cdi::Format::kYaml};
    } else if (flags.drivers[i] == "cpu") {
      // One device per socket.
      scenario = {"cpu",
                  DRA_CPU_DRIVER,
                  "cpu.example.com",
                  {},
                  {"prepare.after_metadata_files", "status.before_write", "status.after_write"},
                  2,
                  {"cpu.example.com", "claim"}};
    } else {
      return Usage("--drivers: gpu and cpu, not " + flags.drivers[i]);
    }
    const absl::Time start = absl::Now();
    tallies.push_back(Run(std::move(scenario), flags.seed + i, flags.peer, flags.damage).Go(flags.iterations));
    std::cout << "[" << flags.drivers[i] << "] done in "
              << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(100))) << std::endl;
  }
  PrintTables(flags, tallies);
  for (const Tally& t : tallies) {
    if (!t.violations.empty() || t.calls < flags.iterations) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace dra::testing

int main(int argc, char** argv) { return dra::testing::Main(argc, argv); }
