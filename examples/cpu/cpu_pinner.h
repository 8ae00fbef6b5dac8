// CpuPinner: makes the runtime run each container where cpu_pinning.h says,
// as the node's NRI plugin. It remembers every container the runtime reports
// (the claims its environment names, the cpuset it was last given), gives a
// new container its cpuset in the creation's adjustment, moves the others
// when that changes the shared pool, and after the prepared claims change
// (ClaimsChanged) moves every container whose cpuset changed, from its own
// thread: never from within a runtime call. A lost connection is repaired by
// the Synchronize of the next one.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cpu_pinning.h"
#include "dra/log.h"
#include "nri_plugin.h"

namespace cpu {

// The prepared claims and online CPUs, as the driver has them now.
struct PinningState {
  std::map<std::string, ClaimPlacement> claims;  // by claim UID
  std::vector<int> online;
};

class CpuPinner : public nri::Handler {
 public:
  CpuPinner(nri::PluginOptions options, std::function<PinningState()> state, dra::Logger logger);
  ~CpuPinner() override;

  // The prepared claims or the online CPUs changed. Thread-safe; returns at once.
  void ClaimsChanged();
  // Prometheus text: whether the NRI plugin is connected, containers pinned.
  std::string Metrics() const;

  std::vector<nri::api::ContainerUpdate> Synchronize(const std::vector<nri::api::PodSandbox>& pods,
                                                     const std::vector<nri::api::Container>& containers) override;
  nri::api::CreateContainerResponse CreateContainer(const nri::api::PodSandbox& pod,
                                                    const nri::api::Container& container) override;
  void StopContainer(const nri::api::PodSandbox& pod, const nri::api::Container& container) override;
  void RemoveContainer(const nri::api::PodSandbox& pod, const nri::api::Container& container) override;

 private:
  struct Known {
    std::string name;  // namespace/pod/container, for the log
    std::set<std::string> claims;
    Placement given;  // what the runtime was last told (or reported)
    bool stopped = false;
  };

  // Updates for every live container whose placement differs from what it
  // was given. With mu_ held.
  std::vector<nri::api::ContainerUpdate> Moves(const PinningState& state) const;
  // Records `moves` as what their containers (those still known) were given.
  // With mu_ held.
  void Given(const std::vector<nri::api::ContainerUpdate>& moves);
  void Run();

  const std::function<PinningState()> state_;
  const dra::Logger logger_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Known> containers_;  // guarded by mu_; by container ID
  bool changed_ = false;                     // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::thread mover_;
  std::unique_ptr<nri::Plugin> plugin_;  // last: reports arrive once the rest exists
};

}  // namespace cpu
