#include "support/test_driver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dra/k8s/device_attributes.h"

namespace dra::testing {

std::string TestDriver::CdiId(const std::string& uid, const std::string& device) {
  return absl::StrCat(kTestDriverName, "/gpu=", uid, "-", device);
}

void TestDriver::ReturnCdiEdits(std::optional<cdi::ContainerEdits> edits) {
  std::lock_guard<std::mutex> lock(mu_);
  return_cdi_edits_ = true;
  cdi_edits_ = std::move(edits);
}

void TestDriver::ReturnMetadata() {
  std::lock_guard<std::mutex> lock(mu_);
  return_metadata_ = true;
}

absl::Status TestDriver::Enter(const dra::CallContext& ctx) {
  std::unique_lock<std::mutex> lock(mu_);
  deadlines_.push_back(ctx.deadline());
  ++inside_;
  max_concurrent_ = std::max(max_concurrent_.load(), inside_);
  cv_.notify_all();
  if (overlap_window_ > absl::ZeroDuration()) {
    // Once overlap has been seen, nobody needs to wait any more.
    cv_.wait_for(lock, absl::ToChronoNanoseconds(overlap_window_), [&] { return max_concurrent_ > 1; });
  }
  cv_.wait(lock, [&] { return !hold_calls_; });
  if (!wait_for_cancellation_) return absl::OkStatus();
  lock.unlock();
  ctx.WaitForCancellation(absl::InfiniteDuration());
  lock.lock();
  cancellations_.push_back(ctx.status());
  return ctx.status();
}

void TestDriver::WaitForCancellation() {
  std::lock_guard<std::mutex> lock(mu_);
  wait_for_cancellation_ = true;
}

std::vector<absl::Time> TestDriver::deadlines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deadlines_;
}

std::vector<absl::Status> TestDriver::cancellations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancellations_;
}

void TestDriver::HoldCalls() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_calls_ = true;
}

void TestDriver::ReleaseCalls() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_calls_ = false;
  cv_.notify_all();
}

int TestDriver::calls_inside() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inside_;
}

void TestDriver::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  --inside_;
}

absl::StatusOr<kubeletplugin::PrepareResults> TestDriver::PrepareResourceClaims(
    const dra::CallContext& ctx, std::span<const k8s::ResourceClaim> claims) {
  ++prepare_calls_;
  const absl::Status cancelled = Enter(ctx);
  kubeletplugin::PrepareResults results;
  std::shared_ptr<const resourceclaim::ClaimStatusWriter> writer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writer = status_writer_;
    for (const k8s::ResourceClaim& claim : claims) {
      const std::string& uid = claim.metadata.uid;
      kubeletplugin::PrepareResult& result = results[uid];
      if (!cancelled.ok()) {
        result.status = cancelled;
        continue;
      }
      if (fail_uids_.count(uid) > 0) {
        result.status = absl::InternalError("injected failure");
        continue;
      }
      for (const auto& allocated : claim.status.allocation->devices.results) {
        if (allocated.driver != kTestDriverName) {
          result.status = absl::InternalError("got another driver's device " + allocated.device);
          break;
        }
        kubeletplugin::Device& device = result.devices.emplace_back(kubeletplugin::Device{
            {allocated.request}, allocated.pool, allocated.device, {CdiId(uid, allocated.device)}, allocated.share_id});
        if (return_metadata_) {
          kubeletplugin::DeviceMetadata& metadata = device.metadata.emplace();
          metadata.attributes["model"] = k8s::StringAttribute("a100");
          metadata.attributes[k8s::kPciBusIdAttribute] = k8s::StringAttribute("0000:3b:00.0");
          metadata.network_data.emplace().interface_name = "net-" + allocated.device;
        }
        if (return_cdi_edits_) {
          device.cdi_device_ids.clear();
          if (!extra_cdi_id_.empty()) device.cdi_device_ids.push_back(extra_cdi_id_);
          cdi::ContainerEdits& edits = device.cdi_edits.emplace();
          if (cdi_edits_.has_value()) {
            edits = *cdi_edits_;
          } else {
            edits.env = {"DEVICE=" + allocated.device};
            edits.device_nodes.emplace_back().path = "/dev/" + allocated.device;
          }
        }
      }
      prepared_.push_back(uid);
    }
  }
  if (writer != nullptr) {
    for (const k8s::ResourceClaim& claim : claims) {
      kubeletplugin::PrepareResult& result = results[claim.metadata.uid];
      if (!result.status.ok()) continue;
      std::vector<k8s::AllocatedDeviceStatus> entries;
      for (const kubeletplugin::Device& device : result.devices) {
        k8s::AllocatedDeviceStatus& entry = entries.emplace_back();
        entry.driver = kTestDriverName;
        entry.pool = device.pool_name;
        entry.device = device.device_name;
        entry.share_id = device.share_id;
        entry.data = nlohmann::json{{"preparedBy", "test-driver"}};
        k8s::Condition& ready = entry.conditions.emplace_back();
        ready.type = "Ready";
        ready.status = "True";
        ready.reason = "Prepared";
      }
      result.status = writer->Apply(ctx, k8s::ClaimRefOf(claim), std::move(entries));
    }
  }
  Leave();
  return results;
}

void TestDriver::AlsoReturnCdiId(std::string id) {
  std::lock_guard<std::mutex> lock(mu_);
  extra_cdi_id_ = std::move(id);
}

void TestDriver::WriteDeviceStatus(std::shared_ptr<const resourceclaim::ClaimStatusWriter> writer) {
  std::lock_guard<std::mutex> lock(mu_);
  status_writer_ = std::move(writer);
}

absl::StatusOr<kubeletplugin::UnprepareResults> TestDriver::UnprepareResourceClaims(
    const dra::CallContext& ctx, std::span<const k8s::ClaimRef> claims) {
  ++unprepare_calls_;
  const absl::Status cancelled = Enter(ctx);
  kubeletplugin::UnprepareResults results;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const k8s::ClaimRef& claim : claims) {
      results[claim.uid] = cancelled;
      if (cancelled.ok()) unprepared_.push_back(claim.uid);
    }
  }
  Leave();
  return results;
}

void TestDriver::HandleError(const absl::Status& status, kubeletplugin::ErrorSeverity severity,
                             std::string_view context) {
  const std::string_view name = kubeletplugin::ErrorSeverityName(severity);
  std::lock_guard<std::mutex> lock(mu_);
  errors_.push_back(absl::StrCat(absl::string_view(context.data(), context.size()), " (",
                                 absl::string_view(name.data(), name.size()), "): ", status.message()));
}

void TestDriver::FailClaim(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_uids_.insert(uid);
}

void TestDriver::UnfailClaim(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_uids_.erase(uid);
}

void TestDriver::SetOverlapWindow(absl::Duration window) {
  std::lock_guard<std::mutex> lock(mu_);
  overlap_window_ = window;
}

std::vector<std::string> TestDriver::prepared_uids() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prepared_;
}

std::vector<std::string> TestDriver::unprepared_uids() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unprepared_;
}

std::vector<std::string> TestDriver::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

k8s::ResourceClaim AllocatedClaim(const std::string& ns, const std::string& name, const std::string& uid,
                                  const std::vector<std::string>& devices) {
  k8s::ResourceClaim claim;
  claim.metadata.namespace_ = ns;
  claim.metadata.name = name;
  claim.metadata.uid = uid;
  k8s::AllocationResult allocation;
  for (const std::string& device : devices) {
    k8s::DeviceRequestAllocationResult result;
    result.request = "gpu";
    result.driver = kTestDriverName;
    result.pool = "pool-a";
    result.device = device;
    allocation.devices.results.push_back(result);
  }
  k8s::DeviceRequestAllocationResult other;
  other.request = "nic";
  other.driver = "nic.example.com";
  other.pool = "pool-n";
  other.device = "nic-0";
  allocation.devices.results.push_back(other);
  claim.status.allocation = allocation;
  return claim;
}

}  // namespace dra::testing
