// A base for the benchmarks' drivers: unprepare always succeeds, errors are
// printed and counted. Subclasses write PrepareResourceClaims.
#pragma once

#include <atomic>
#include <iostream>
#include <span>
#include <string_view>

#include "dra/kubeletplugin/driver.h"

namespace dra::bench {

class UnprepareAllDriver : public kubeletplugin::Driver {
 public:
  absl::StatusOr<kubeletplugin::UnprepareResults> UnprepareResourceClaims(
      const dra::CallContext&, std::span<const k8s::ClaimRef> claims) override {
    kubeletplugin::UnprepareResults results;
    for (const k8s::ClaimRef& claim : claims) results[claim.uid] = absl::OkStatus();
    return results;
  }

  void HandleError(const absl::Status& status, kubeletplugin::ErrorSeverity, std::string_view context) override {
    std::cerr << "driver error (" << context << "): " << status << "\n";
    errors_.fetch_add(1);
  }

  int errors() const { return errors_.load(); }

 private:
  std::atomic<int> errors_{0};
};

}  // namespace dra::bench
