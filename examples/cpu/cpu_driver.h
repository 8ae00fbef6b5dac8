// CpuDriver: the example CPU driver's kubelet side. It turns allocation
// results (a number of CPUs of a socket or NUMA node, or single CPUs, and
// memory of a NUMA node) into concrete CPUs through the CpuAllocator, hands
// them to the container as CDI edits (DRA_CPUSET_<claim>) and keeps them in
// the SDK's checkpoint (PrepareResult::driver_data), so that a restart never
// hands a CPU out twice.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cpu_allocator.h"
#include "cpu_pinner.h"
#include "cpu_resources.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/log.h"
#include "dra/resourceslice/driver_resources.h"

namespace cpu {

class CpuDriver : public dra::kubeletplugin::Driver {
 public:
  // `publish` says how the devices are published (mode, grouping, reserved
  // CPUs).
  CpuDriver(PublishOptions publish, Topology topology, dra::Logger logger);

  absl::StatusOr<dra::kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext& ctx, std::span<const dra::k8s::ResourceClaim> claims) override;
  absl::StatusOr<dra::kubeletplugin::UnprepareResults> UnprepareResourceClaims(
      const dra::CallContext& ctx, std::span<const dra::k8s::ClaimRef> claims) override;
  void RestorePreparedClaims(std::span<const dra::kubeletplugin::PreparedClaim> claims) override;

  // What to publish now. Thread-safe.
  dra::resourceslice::DriverResources Resources() const;
  // CPUs went offline or online: later claims are picked from `topology`.
  void SetTopology(Topology topology);
  // Prometheus text: allocatable, allocated and reserved CPUs, active claims.
  std::string Metrics() const;
  // CPUs each prepared claim holds, by claim UID.
  std::map<std::string, std::vector<int>> Held() const;
  // The prepared claims' CPUs and NUMA memory, and the online CPUs.
  PinningState Pinning() const;
  // `changed` is called, outside the driver's lock, after the prepared
  // claims or the online CPUs changed.
  void OnPinningChanged(std::function<void()> changed);

 private:
  // Both called with mu_ held.
  dra::kubeletplugin::PrepareResult Prepare(const dra::k8s::ResourceClaim& claim);
  std::vector<int> HeldCpus(const std::string& uid) const;
  // Calls pinning_changed_ outside the lock; mu_ must not be held.
  void PinningChanged() const;

  const PublishOptions publish_;
  const dra::Logger logger_;
  mutable std::mutex mu_;
  CpuAllocator allocator_;  // guarded by mu_
  // Prepared claims by UID, answered again as they were (with the checkpoint
  // off the kubelet's repeats reach the driver).
  std::map<std::string, dra::kubeletplugin::PrepareResult> prepared_;  // guarded by mu_
  // NUMA nodes of prepared claims' memory devices, by UID.
  std::map<std::string, std::vector<int>> mems_;   // guarded by mu_
  std::function<void()> pinning_changed_ = [] {};  // guarded by mu_
};

// The environment variable a claim's cpuset goes in: DRA_CPUSET_<uid with
// '-' as '_'>.
std::string CpusetEnvName(const std::string& claim_uid);
// The CDI annotation with the same set: "<driver>/cpuset".
std::string CpusetAnnotation(const std::string& driver_name);
// The NUMA nodes of a claim's memory devices: DRA_MEMS_<uid with '_'>.
std::string MemsEnvName(const std::string& claim_uid);

}  // namespace cpu
