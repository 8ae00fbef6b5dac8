// The prepared-claims checkpoint: which claims this driver has prepared on
// the node, durable across crashes and restarts.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/k8s/claim_ref.h"
#include "dra/kubeletplugin/driver.h"

namespace dra::kubeletplugin::internal {

enum class ClaimState {
  kPrepareStarted,  // durable before the driver is called
  kPrepared,        // durable, with the result, before the kubelet is answered
};

struct CheckpointEntry {
  k8s::ClaimRef claim;
  ClaimState state = ClaimState::kPrepareStarted;
  std::vector<Device> devices;  // set when kPrepared

  bool operator==(const CheckpointEntry&) const = default;
};

// A change to one claim's entry: set it, or erase it (nullopt).
struct CheckpointChange {
  std::string uid;
  std::optional<CheckpointEntry> entry;
};

// File format (JSON): {"version":1,"checksum":"<sha256 hex of data>","data":{"claims":{uid:{...}}}}.
// Thread-safe. Concurrent Commit calls share durable writes (group commit):
// a caller returns once a write that includes its change has reached disk.
class Checkpoint {
 public:
  // Loads `path` or starts empty if it does not exist. A file that does not
  // parse, has an unknown version or a wrong checksum is an error naming the
  // file; the file is left as it is.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(std::string path);

  // Replaces the entries in memory with the file's, for a file that another
  // process (the other instance in a rolling update) may have rewritten; the
  // caller holds the lock both processes write under. Waits for commits in
  // flight first; changes whose write failed are dropped with the rest of
  // memory. On error the entries in memory stay as they were.
  absl::Status Reload();

  std::optional<CheckpointEntry> Get(const std::string& uid) const;
  std::vector<CheckpointEntry> Entries() const;

  // Applies the changes and returns once they are durable. On a write error
  // the changes stay in memory and are written with the next commit. An entry
  // whose claim.uid differs from its change's uid is InvalidArgument, and then
  // nothing is applied.
  absl::Status Commit(std::vector<CheckpointChange> changes);

  // Durable writes made since Open (each is one temp-file + fsync + rename).
  uint64_t writes() const;
  const std::string& path() const { return path_; }

 private:
  explicit Checkpoint(std::string path);
  std::string Serialize() const;  // needs mu_

  const std::string path_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, CheckpointEntry> entries_;
  uint64_t applied_seq_ = 0;   // last change batch applied in memory
  uint64_t durable_seq_ = 0;   // last batch known to be on disk
  bool writing_ = false;
  uint64_t writes_ = 0;
  absl::Status last_write_status_;
  uint64_t last_failed_seq_ = 0;
};

}  // namespace dra::kubeletplugin::internal
