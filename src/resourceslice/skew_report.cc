#include "resourceslice/skew_report.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dra/k8s/field_error.h"
#include "resourceslice/canonical.h"

namespace dra::resourceslice {

absl::StatusOr<std::string> SkewReport::ServerVersion() {
  dra::MutexLock lock(&mu_);
  return ServerVersionLocked();
}

absl::StatusOr<std::string> SkewReport::ServerVersionLocked() {
  if (server_version_.empty()) {
    absl::StatusOr<std::string> version = client_->ServerVersion();
    if (!version.ok()) return version.status();
    server_version_ = *std::move(version);
  }
  return server_version_;
}

std::optional<std::string> SkewReport::Record(const std::string& pool, size_t index, const std::string& name,
                                              const k8s::ResourceSliceSpec& sent,
                                              const absl::StatusOr<k8s::ResourceSlice>& stored) {
  const bool same = !stored.ok() || SameSpec(sent, stored->spec);
  dra::MutexLock lock(&mu_);
  PoolSkews& skews = pools_[pool];
  if (same) {
    skews.by_index.erase(index);
    return std::nullopt;
  }
  skews.by_index[index] = {sent, stored->spec};
  std::vector<std::string> dropped = DroppedFields(sent, stored->spec);
  if (dropped.empty()) return std::nullopt;  // the server only added fields
  std::vector<std::string> gates = LikelyFeatureGates(dropped);
  absl::StatusOr<std::string> version = ServerVersionLocked();
  std::string message = absl::StrCat(
      "pool ", k8s::GoQuote(pool), ", slice ", index, " (", name, "): the API server",
      version.ok() ? absl::StrCat(" (", *version, ")") : "", " stored less than was sent, it dropped ",
      absl::StrJoin(dropped, ", "),
      gates.empty() ? std::string("; is the server older than this SDK?")
                    : absl::StrCat("; probably because these feature gates are off: ", absl::StrJoin(gates, ", ")),
      ". The slice is not rewritten until its desired content changes");
  if (!skews.reported.insert(message).second) return std::nullopt;
  return message;
}

std::map<size_t, Skew> SkewReport::SkewsOf(const std::string& pool) const {
  dra::MutexLock lock(&mu_);
  const auto it = pools_.find(pool);
  return it != pools_.end() ? it->second.by_index : std::map<size_t, Skew>();
}

void SkewReport::Forget(const std::string& pool) {
  dra::MutexLock lock(&mu_);
  pools_.erase(pool);
}

}  // namespace dra::resourceslice
