// Where the API server stores less of a slice than the publisher sent (an
// older server, a feature gate off): what it stored instead, which counts
// as published until the desired slice changes, and the report that says
// so, naming the fields it dropped, the feature gates that likely dropped
// them and the server's version.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_slice.h"
#include "resourceslice/pool_plan.h"

namespace dra::resourceslice {

// Thread-safe: the concurrent writes of one pool record their slices.
class SkewReport {
 public:
  explicit SkewReport(std::shared_ptr<k8s::Client> client) : client_(std::move(client)) {}

  // The server's version, asked once, when first needed (after a failure,
  // again the next time); other callers wait for that one GET.
  absl::StatusOr<std::string> ServerVersion() ABSL_LOCKS_EXCLUDED(mu_);

  // After a write of slice `index` of `pool`, named `name`: records whether
  // the server stored what was `sent` (`stored`: its answer). Returns the
  // problem to report when it dropped fields, each message once until
  // Forget(pool).
  std::optional<std::string> Record(const std::string& pool, size_t index, const std::string& name,
                                    const k8s::ResourceSliceSpec& sent,
                                    const absl::StatusOr<k8s::ResourceSlice>& stored) ABSL_LOCKS_EXCLUDED(mu_);

  // What the server stored instead for the slices of `pool`, by index.
  std::map<size_t, Skew> SkewsOf(const std::string& pool) const ABSL_LOCKS_EXCLUDED(mu_);

  // The desired `pool` changed: what was recorded and reported for it goes.
  void Forget(const std::string& pool) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct PoolSkews {
    std::map<size_t, Skew> by_index;
    std::set<std::string> reported;  // messages
  };

  absl::StatusOr<std::string> ServerVersionLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<k8s::Client> client_;
  mutable dra::Mutex mu_;
  std::string server_version_ ABSL_GUARDED_BY(mu_);  // "" until asked
  std::map<std::string, PoolSkews> pools_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dra::resourceslice
