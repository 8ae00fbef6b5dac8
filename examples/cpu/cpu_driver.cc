#include "cpu_driver.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "cpuset.h"
#include "nlohmann/json.hpp"

namespace cpu {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
using nlohmann::json;

namespace {

// The number after `prefix` in `name` ("cpu-socket-1" -> 1).
std::optional<int> Suffix(absl::string_view name, absl::string_view prefix) {
  int id = 0;
  if (!absl::ConsumePrefix(&name, prefix) || !absl::SimpleAtoi(name, &id) || id < 0) return std::nullopt;
  return id;
}

std::string EnvName(absl::string_view prefix, const std::string& uid) {
  return absl::StrCat(prefix, absl::StrReplaceAll(uid, {{"-", "_"}}));
}

}  // namespace

std::string CpusetEnvName(const std::string& claim_uid) { return EnvName("DRA_CPUSET_", claim_uid); }
std::string MemsEnvName(const std::string& claim_uid) { return EnvName("DRA_MEMS_", claim_uid); }
std::string CpusetAnnotation(const std::string& driver_name) { return driver_name + "/cpuset"; }

CpuDriver::CpuDriver(PublishOptions publish, Topology topology, dra::Logger logger)
    : publish_(std::move(publish)), logger_(std::move(logger)), allocator_(std::move(topology), publish_.reserved) {}

absl::StatusOr<kp::PrepareResults> CpuDriver::PrepareResourceClaims(const dra::CallContext& ctx,
                                                                    std::span<const k8s::ResourceClaim> claims) {
  kp::PrepareResults results;
  {
    std::scoped_lock lock(mu_);
    for (const k8s::ResourceClaim& claim : claims) {
      kp::PrepareResult& result = results[claim.metadata.uid];
      result = Prepare(claim);
      if (result.status.ok()) {
        ctx.logger().Info("Prepared claim", {{"claim", claim.metadata.namespace_ + "/" + claim.metadata.name},
                                             {"uid", claim.metadata.uid},
                                             {"cpus", FormatCpuList(HeldCpus(claim.metadata.uid))}});
      }
    }
  }
  PinningChanged();
  return results;
}

kp::PrepareResult CpuDriver::Prepare(const k8s::ResourceClaim& claim) {
  const std::string& uid = claim.metadata.uid;
  if (auto it = prepared_.find(uid); it != prepared_.end()) return it->second;
  kp::PrepareResult result;
  auto fail = [&](absl::Status status) {
    allocator_.Release(uid);
    result.status = std::move(status);
    result.devices.clear();
    return result;
  };
  const Topology& topology = allocator_.topology();
  std::set<int> mems;
  for (const k8s::DeviceRequestAllocationResult& allocated : claim.status.allocation->devices.results) {
    const std::string& name = allocated.device;
    const std::optional<int> socket = Suffix(name, "cpu-socket-");
    const std::optional<int> numa = Suffix(name, publish_.numa_device_prefix);
    if (socket.has_value() || numa.has_value()) {
      // Either spelling: an allocation made before the names were published
      // bare (a server upgraded to 1.38) keeps the qualified one.
      auto consumed = allocated.consumed_capacity.find(CpuCapacityName(publish_.driver_name, true));
      if (consumed == allocated.consumed_capacity.end()) {
        consumed = allocated.consumed_capacity.find(CpuCapacityName(publish_.driver_name, false));
      }
      if (consumed == allocated.consumed_capacity.end()) {
        return fail(
            absl::InvalidArgumentError(absl::StrCat("device ", name, ": the allocation has no consumedCapacity ",
                                                    CpuCapacityName(publish_.driver_name, publish_.bare_capacity_names),
                                                    " (the cluster needs the DRAConsumableCapacity feature)")));
      }
      const int64_t count = consumed->second.Value();
      const std::vector<int> group = socket ? topology.SocketCpus(*socket) : topology.NumaCpus(*numa);
      absl::StatusOr<std::vector<int>> cpus =
          allocator_.Allocate(uid, socket ? absl::StrCat("socket ", *socket) : absl::StrCat("NUMA node ", *numa), group,
                              static_cast<int>(count));
      if (!cpus.ok()) return fail(cpus.status());
    } else if (const std::optional<int> id = Suffix(name, "cpu-")) {
      if (absl::Status taken = allocator_.Take(uid, {*id}); !taken.ok()) {
        return fail(absl::Status(taken.code(), absl::StrCat("device ", name, ": ", taken.message())));
      }
    } else if (const std::optional<int> node = Suffix(name, "memory-numa-")) {
      mems.insert(*node);
    } else {
      return fail(absl::InvalidArgumentError(absl::StrCat("device ", name, " is not one this driver publishes")));
    }
    result.devices.push_back(kp::Device::ForAllocation(allocated));
  }
  const std::vector<int> cpus = HeldCpus(uid);
  dra::cdi::ContainerEdits edits;
  if (!cpus.empty()) edits.env.push_back(absl::StrCat(CpusetEnvName(uid), "=", FormatCpuList(cpus)));
  if (!mems.empty())
    edits.env.push_back(absl::StrCat(MemsEnvName(uid), "=", FormatCpuList({mems.begin(), mems.end()})));
  for (kp::Device& device : result.devices) {
    device.cdi_edits = edits;
    if (!cpus.empty()) device.cdi_annotations[CpusetAnnotation(publish_.driver_name)] = FormatCpuList(cpus);
  }
  result.driver_data = json{{"cpus", FormatCpuList(cpus)}, {"mems", FormatCpuList({mems.begin(), mems.end()})}}.dump();
  prepared_[uid] = result;
  if (!mems.empty()) mems_[uid] = {mems.begin(), mems.end()};
  return result;
}

absl::StatusOr<kp::UnprepareResults> CpuDriver::UnprepareResourceClaims(const dra::CallContext& ctx,
                                                                        std::span<const k8s::ClaimRef> claims) {
  kp::UnprepareResults results;
  {
    std::scoped_lock lock(mu_);
    for (const k8s::ClaimRef& claim : claims) {
      allocator_.Release(claim.uid);
      prepared_.erase(claim.uid);
      mems_.erase(claim.uid);
      results[claim.uid] = absl::OkStatus();
      ctx.logger().Info("Unprepared claim", {{"claim", claim.ToString()}, {"uid", claim.uid}});
    }
  }
  PinningChanged();
  return results;
}

void CpuDriver::RestorePreparedClaims(std::span<const kp::PreparedClaim> claims) {
  {
    std::scoped_lock lock(mu_);
    for (const kp::PreparedClaim& claim : claims) {
      json data = json::parse(claim.driver_data, nullptr, /*allow_exceptions=*/false);
      absl::StatusOr<std::vector<int>> cpus =
          data.is_object() && data.value("cpus", json()).is_string()
              ? ParseCpuList(data["cpus"].get<std::string>())
              : absl::StatusOr<std::vector<int>>(absl::InvalidArgumentError("no \"cpus\" string"));
      if (!cpus.ok()) {
        logger_.Error("A prepared claim's CPUs cannot be read from the checkpoint",
                      {{"claim", claim.claim.ToString()}, {"uid", claim.claim.uid}, {"err", cpus.status().ToString()}});
        continue;
      }
      // A CPU reserved or offline since is not handed out anyway.
      std::vector<int> usable;
      for (int id : *cpus) {
        if (allocator_.topology().Find(id) != nullptr && !allocator_.reserved().contains(id)) usable.push_back(id);
      }
      if (absl::Status taken = allocator_.Take(claim.claim.uid, usable); !taken.ok()) {
        logger_.Error("A prepared claim's CPUs are held twice in the checkpoint",
                      {{"claim", claim.claim.ToString()}, {"uid", claim.claim.uid}, {"err", taken.ToString()}});
        continue;
      }
      // Checkpoints written before the driver kept "mems" have none.
      if (const json mems_text = data.value("mems", json()); mems_text.is_string()) {
        absl::StatusOr<std::vector<int>> mems = ParseCpuList(mems_text.get<std::string>());
        if (mems.ok() && !mems->empty()) mems_[claim.claim.uid] = *mems;
      }
      kp::PrepareResult& restored = prepared_[claim.claim.uid];
      restored.devices = claim.devices;
      restored.driver_data = claim.driver_data;
      logger_.Info("Restored prepared claim", {{"claim", claim.claim.ToString()}, {"cpus", FormatCpuList(*cpus)}});
    }
  }
  // The NRI plugin starts before the Helper restores the claims, so the
  // runtime's Synchronize may have been answered without them.
  PinningChanged();
}

std::vector<int> CpuDriver::HeldCpus(const std::string& uid) const {
  auto it = allocator_.held().find(uid);
  return it == allocator_.held().end() ? std::vector<int>{} : it->second;
}

dra::resourceslice::DriverResources CpuDriver::Resources() const {
  std::scoped_lock lock(mu_);
  dra::resourceslice::DriverResources resources;
  resources.pools[publish_.node_name] = NodePool(allocator_.topology(), publish_);
  return resources;
}

void CpuDriver::SetTopology(Topology topology) {
  {
    std::scoped_lock lock(mu_);
    allocator_.SetTopology(std::move(topology));
  }
  PinningChanged();
}

std::string CpuDriver::Metrics() const {
  std::scoped_lock lock(mu_);
  int allocatable = 0;
  for (const Cpu& cpu : allocator_.topology().cpus) allocatable += allocator_.reserved().contains(cpu.id) ? 0 : 1;
  std::string out;
  auto gauge = [&](const char* name, const char* help, int64_t value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n", name, " ", value, "\n");
  };
  gauge("dra_cpu_allocatable_cpus", "Online CPUs that are not reserved.", allocatable);
  gauge("dra_cpu_allocated_cpus", "CPUs held by prepared claims.", allocator_.allocated_cpus());
  gauge("dra_cpu_reserved_cpus", "CPUs kept for the system (--reserved-cpus).",
        static_cast<int64_t>(allocator_.reserved().size()));
  gauge("dra_cpu_active_claims", "Prepared claims.", static_cast<int64_t>(prepared_.size()));
  return out;
}

std::map<std::string, std::vector<int>> CpuDriver::Held() const {
  std::scoped_lock lock(mu_);
  return allocator_.held();
}

void CpuDriver::OnPinningChanged(std::function<void()> changed) {
  std::scoped_lock lock(mu_);
  pinning_changed_ = std::move(changed);
}

void CpuDriver::PinningChanged() const {
  std::function<void()> changed;
  {
    std::scoped_lock lock(mu_);
    changed = pinning_changed_;
  }
  changed();
}

PinningState CpuDriver::Pinning() const {
  std::scoped_lock lock(mu_);
  PinningState state;
  for (const auto& [uid, result] : prepared_) {
    ClaimPlacement& claim = state.claims[uid];
    claim.cpus = HeldCpus(uid);
    if (auto it = mems_.find(uid); it != mems_.end()) claim.mems = it->second;
  }
  for (const Cpu& cpu : allocator_.topology().cpus) state.online.push_back(cpu.id);
  return state;
}

}  // namespace cpu
