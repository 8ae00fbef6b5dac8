// The prepared-claims checkpoint: which claims this driver has prepared on
// the node, durable across crashes and restarts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "dra/k8s/claim_ref.h"
#include "kubeletplugin/checkpoint_codec.h"

namespace dra::kubeletplugin::internal {

// A change to one claim's entry: set it, or erase it (nullopt).
struct CheckpointChange {
  std::string uid;
  std::optional<CheckpointEntry> entry;
};

// The file (its format in checkpoint_codec.h) is an append-only log of
// lines: a header and a snapshot, then change records.
//
// Each durable write is one line plus fdatasync: a change record carries the
// net effect of one (group) commit on every claim it touched, so a commit is
// on disk whole or not at all. Header and snapshot are only written together,
// as a new file that replaces the old one (temp file, fsync, rename, directory
// fsync; mode 0600): by the first commit of a new checkpoint, and instead of
// appending when the log would hold more than max(64, 4 x live entries)
// change records (compaction), after a write error, or when the file was
// loaded with a torn tail.
//
// Thread-safe. Concurrent Commit calls share durable writes (group commit):
// a caller returns once a write that includes its change has reached disk.
class Checkpoint {
 public:
  // Loads `path` or starts empty if it does not exist. A file that cannot
  // be read whole (a line that does not verify or decode, other than a torn
  // last change; an unknown version; no header and snapshot; a read error)
  // is kept aside as <path>.unreadable-<unix seconds>, never deleted, and
  // what can be read of it is salvaged: every verified record, each claim
  // whose entry does not decode quarantined (CheckpointEntry::quarantined),
  // and each claim a record that fails its checksum names quarantined too.
  // salvage() says what was done. The salvage replaces the damaged file at
  // the first Commit (or WriteSalvaged): until then a crash leaves the
  // damaged file to be salvaged again, with what the caller learns from it
  // (the claims its unreadable lines may have named). Only when the file can
  // be neither read nor kept aside is it an error.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(std::string path);
  // The same, but a file that is no checkpoint of this format is offered to
  // `adopt` (Options::adopt_checkpoint): the claims it returns become
  // kPrepareStarted entries, and the file is replaced by this format's
  // (atomically: temp file and rename; removed when there are none) before
  // Open returns. When `adopt` refuses it too (InvalidArgument), it is kept
  // aside as above, its reason naming both; another error of `adopt` (the
  // API server did not answer, say) is Open's, the file left in place.
  using Adopter = std::function<absl::StatusOr<std::vector<k8s::ClaimRef>>(const std::string& content)>;
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(std::string path, const Adopter& adopt);
  // Another driver's checkpoint kept beside this one, so that the node stays
  // readable by that driver (Options::encode_foreign_checkpoint).
  struct Foreign {
    std::string path;
    Adopter read;  // its claims, or an error when it is not that driver's
    std::function<std::string(const std::vector<k8s::ClaimRef>& claims)> encode;  // sorted by UID
  };
  // Opens the checkpoint at `path` with `foreign` kept beside it: after each
  // durable write that changed which claims are recorded, and before the
  // commit returns, foreign.path is replaced (temp file, fsync, rename) with
  // foreign.encode of them all. At open, a foreign file of this format (an
  // earlier release kept its checkpoint there) replaces `path`; one that is
  // not what foreign.encode gives for the claims recorded was changed by the
  // other driver since (a rollback to it and back): its claims are the
  // node's, so recorded claims it does not list are dropped and those it
  // adds are adopted as kPrepareStarted entries. The foreign file is written
  // before Open returns.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> OpenBeside(std::string path, Foreign foreign);
  // A checkpoint that records nothing (Options::checkpoint off): commits
  // succeed and are dropped, so it is always empty, and it has no file.
  static std::unique_ptr<Checkpoint> Off();
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // Replaces the entries in memory with the file's, for a file that another
  // process (the other instance in a rolling update) may have appended to or
  // replaced; the caller holds the lock both processes write under. Waits for
  // commits in flight first; changes whose write failed are dropped with the
  // rest of memory. When the file was replaced, later commits append to the
  // new one. On error the entries in memory stay as they were.
  absl::Status Reload();

  std::optional<CheckpointEntry> Get(const std::string& uid) const;
  std::vector<CheckpointEntry> Entries() const;
  // Calls `visit` with each entry, under the checkpoint's lock: `visit` must
  // not call back into the checkpoint.
  void ForEach(absl::FunctionRef<void(const CheckpointEntry&)> visit) const;

  // The keys an entry is found by (ForEachWithKey): the devices it holds,
  // say. Called under the checkpoint's lock.
  using IndexKeys = std::function<std::vector<std::string>(const CheckpointEntry&)>;
  // Indexes the entries, now and after every change, by `keys`; set once,
  // before other threads use the checkpoint.
  void Index(IndexKeys keys);
  // As ForEach, but only the entries with one of `keys`, each once, in UID
  // order; every entry without an index.
  void ForEachWithKey(std::span<const std::string> keys, absl::FunctionRef<void(const CheckpointEntry&)> visit) const;

  // Applies the changes and returns once they are durable. On a write error
  // the changes stay in memory and are written with the next commit. An entry
  // whose claim.uid differs from its change's uid is InvalidArgument, and then
  // nothing is applied.
  absl::Status Commit(std::vector<CheckpointChange> changes);

  // Durable writes made since Open: appends of a change record, and file
  // replacements (creation, compaction), each in place of an append.
  uint64_t writes() const;
  const std::string& path() const { return path_; }
  // The foreign file kept beside it (OpenBeside); empty without one.
  std::string foreign_path() const { return foreign_.has_value() ? foreign_->path : ""; }
  // False for Off(): no claim is ever known, so there is nothing to repair
  // and no orphan to look for.
  bool records() const { return !path_.empty(); }

  // What Open salvaged from a file it could not read whole.
  struct Salvage {
    // Files kept aside, each as {its new path, why it could not be read}.
    std::vector<std::pair<std::string, std::string>> kept_aside;
    // Claims whose entries were quarantined, with why.
    std::vector<std::pair<k8s::ClaimRef, std::string>> quarantined;
    // Lines that named no claim that could be read: what they held is not
    // accounted for.
    size_t unreadable_lines = 0;
    // Lines that did not verify: the claims they name may not be the ones
    // recorded (a damaged UID), so those are not accounted for either.
    size_t unverified_lines = 0;
  };
  const Salvage& salvage() const { return salvage_; }
  // Writes what Open salvaged in place of the damaged file, if no Commit
  // has yet; nothing otherwise.
  absl::Status WriteSalvaged();

 private:
  explicit Checkpoint(std::string path);
  absl::Status Load() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // no commit in flight
  // Keeps by_key_ in step with entries_: one entry set (nullptr: erased), or all.
  void IndexEntryLocked(const std::string& uid, const CheckpointEntry* entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void IndexAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After Load failed at Open: keeps the file aside, salvages it.
  absl::Status KeepAsideAndSalvage(const absl::Status& unreadable) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The durable write of everything applied so far, by the one writer:
  // taken under mu_, performed without it, finished under it.
  struct Write;
  Write TakeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Perform(Write& write) const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status FinishWriteLocked(Write& write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The foreign file's content, when which claims are recorded changed since
  // it was last written (or its write failed).
  std::optional<std::string> ForeignContent() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes the foreign file hold what it should; at open.
  absl::Status SyncForeign();

  const std::string path_;
  mutable dra::Mutex mu_;
  dra::CondVar cv_;
  CheckpointEntries entries_ ABSL_GUARDED_BY(mu_);
  IndexKeys index_keys_ ABSL_GUARDED_BY(mu_);                                           // empty: no index (Index)
  std::unordered_map<std::string, std::set<std::string>> by_key_ ABSL_GUARDED_BY(mu_);  // key -> UIDs
  // UID -> the keys it was indexed under: kept, not asked of the key function
  // again at removal, which may answer otherwise by then (a driver's units
  // can change) and would leave the UID under a key it no longer has.
  std::unordered_map<std::string, std::vector<std::string>> keys_of_ ABSL_GUARDED_BY(mu_);
  // Claims changed in memory since the last durable write.
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  uint64_t applied_seq_ ABSL_GUARDED_BY(mu_) = 0;  // last change batch applied in memory
  uint64_t durable_seq_ ABSL_GUARDED_BY(mu_) = 0;  // last batch known to be on disk
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_write_status_ ABSL_GUARDED_BY(mu_);
  uint64_t last_failed_seq_ ABSL_GUARDED_BY(mu_) = 0;

  // The log file. Changed under mu_ by the writer after its write, or by
  // Load with no commit in flight.
  // O_APPEND on the file at path_; -1: the next write replaces the file.
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t record_seq_ ABSL_GUARDED_BY(mu_) = 0;   // "seq" of the file's last line
  uint64_t log_changes_ ABSL_GUARDED_BY(mu_) = 0;  // change records in the file
  // The file may end in garbage: replace it rather than append.
  bool rewrite_ ABSL_GUARDED_BY(mu_) = false;
  // The file is damaged and kept aside; the salvage has yet to replace it.
  bool salvage_unwritten_ ABSL_GUARDED_BY(mu_) = false;

  // Set by Open, then constant.
  Salvage salvage_;
  // Set by OpenBeside before the first commit, then constant.
  std::optional<Foreign> foreign_;
  // The claims the foreign file lists; nullopt: it must be written.
  std::optional<std::set<std::string>> foreign_claims_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dra::kubeletplugin::internal
