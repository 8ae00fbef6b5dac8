// Inflates a gzip stream of one member or several in a row (RFC 1952
// allows that), fed in pieces of any size. kube-apiserver gzips a
// watch-list stream (WatchListCompression) as one member per flush, which
// libcurl's own decoding does not take past the first.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace dra::k8s::internal {

class GzipMembers {
 public:
  GzipMembers();
  ~GzipMembers();
  GzipMembers(const GzipMembers&) = delete;
  GzipMembers& operator=(const GzipMembers&) = delete;

  // Appends what `data` inflates to to `out`. DataLoss for bytes that are
  // no gzip; the stream is unusable after an error.
  absl::Status Inflate(std::string_view data, std::string& out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dra::k8s::internal
