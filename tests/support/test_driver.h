// A Driver for tests: prepares every allocated device of its own with one CDI
// ID, records what it was asked, and can be told to fail claims.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dra/kubeletplugin/driver.h"
#include "dra/resourceclaim/claim_status_writer.h"

namespace dra::testing {

inline constexpr char kTestDriverName[] = "gpu.example.com";

class TestDriver : public kubeletplugin::Driver {
 public:
  explicit TestDriver(bool reports_health = false) : reports_health_(reports_health) {}

  absl::StatusOr<kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext& ctx, std::span<const k8s::ResourceClaim> claims) override;
  absl::StatusOr<kubeletplugin::UnprepareResults> UnprepareResourceClaims(
      const dra::CallContext& ctx, std::span<const k8s::ClaimRef> claims) override;
  // Recorded as "<context> (<severity>): <message>".
  void HandleError(const absl::Status& status, kubeletplugin::ErrorSeverity severity,
                   std::string_view context) override;
  bool ReportsDeviceHealth() const override { return reports_health_; }

  // Claims (by UID) whose preparation fails with "injected failure", until
  // UnfailClaim.
  void FailClaim(const std::string& uid);
  void UnfailClaim(const std::string& uid);
  // From now on, return CDI edits for the Helper to write instead of CDI IDs:
  // per device, env DEVICE=<device> and the device node /dev/<device>, or
  // `edits` when given (to return invalid ones).
  void ReturnCdiEdits(std::optional<cdi::ContainerEdits> edits = std::nullopt);
  // With ReturnCdiEdits: each device also lists `id`, of a spec the driver
  // writes itself (a node-wide one).
  void AlsoReturnCdiId(std::string id);
  // From now on, give each device Device::metadata: attribute model="a100",
  // resource.kubernetes.io/pciBusID and network data with interface
  // "net-<device>".
  void ReturnMetadata();
  // From now on, after preparing a claim, write a Ready condition (reason
  // "Prepared") and data {"preparedBy": "test-driver"} for each of its
  // devices with `writer`; a failed write fails the claim.
  void WriteDeviceStatus(std::shared_ptr<const resourceclaim::ClaimStatusWriter> writer);
  // While set, each call waits up to this long for another call to be inside
  // the driver at the same time, so that overlap is observable.
  void SetOverlapWindow(absl::Duration window);
  // While held, every call waits inside the driver until ReleaseCalls(),
  // deaf to its CallContext, as a hung driver.
  void HoldCalls();
  void ReleaseCalls();
  // From now on, every call waits until its CallContext is cancelled and
  // then fails its claims with the context's status, as a driver that waits
  // on hardware and honours cancellation.
  void WaitForCancellation();
  // Calls inside the driver right now.
  int calls_inside() const;

  int prepare_calls() const { return prepare_calls_; }
  int unprepare_calls() const { return unprepare_calls_; }
  int max_concurrent_calls() const { return max_concurrent_; }
  std::vector<std::string> prepared_uids() const;
  std::vector<std::string> unprepared_uids() const;
  std::vector<std::string> errors() const;
  // Each call's CallContext deadline, and the statuses calls returned
  // because their context was cancelled, in order.
  std::vector<absl::Time> deadlines() const;
  std::vector<absl::Status> cancellations() const;

  // "gpu.example.com/gpu=<uid>-<device>"
  static std::string CdiId(const std::string& uid, const std::string& device);

 private:
  // Counts the call in; holds it as told. Returns the context's status if
  // the call waited for its cancellation.
  absl::Status Enter(const dra::CallContext& ctx);
  void Leave();

  const bool reports_health_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> fail_uids_;
  std::vector<std::string> prepared_;
  std::vector<std::string> unprepared_;
  std::vector<std::string> errors_;
  absl::Duration overlap_window_ = absl::ZeroDuration();
  bool hold_calls_ = false;
  bool wait_for_cancellation_ = false;
  std::vector<absl::Time> deadlines_;
  std::vector<absl::Status> cancellations_;
  bool return_cdi_edits_ = false;
  bool return_metadata_ = false;
  std::optional<cdi::ContainerEdits> cdi_edits_;
  std::string extra_cdi_id_;
  std::shared_ptr<const resourceclaim::ClaimStatusWriter> status_writer_;
  int inside_ = 0;
  std::atomic<int> prepare_calls_{0};
  std::atomic<int> unprepare_calls_{0};
  std::atomic<int> max_concurrent_{0};
};

// A claim allocated to `devices` (pool "pool-a") of kTestDriverName, with
// request name "gpu", plus one result of another driver that must be hidden
// from ours.
k8s::ResourceClaim AllocatedClaim(const std::string& ns, const std::string& name, const std::string& uid,
                                  const std::vector<std::string>& devices = {"gpu-0"});

}  // namespace dra::testing
