#include "kubeletplugin/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "crashpoint/crash_point.h"
#include "fileutil/atomic_file.h"

namespace dra::kubeletplugin::internal {
namespace {

constexpr mode_t kFileMode = 0600;

// More change records than this and the next commit compacts the file.
size_t MaxChangeRecords(size_t live_entries) { return std::max<size_t>(64, 4 * live_entries); }

// Links `path` as <path>.unreadable-<unix seconds>[-<n>], a name no file has
// (an earlier one kept aside is never replaced), or finds the name an earlier
// start that died before replacing `path` linked it as; returns that name.
// `path` itself stays until the caller replaces it, so that a crash in
// between leaves it to be salvaged again, never nothing. `unreadable` says
// why, for the error when it cannot be kept aside.
absl::StatusOr<std::string> KeepAside(const std::string& path, const absl::Status& unreadable) {
  const std::string prefix = absl::StrCat(path, ".unreadable-");
  struct stat file {};
  if (::stat(path.c_str(), &file) == 0 && file.st_nlink > 1) {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    std::error_code error;
    for (const auto& other : std::filesystem::directory_iterator(dir, error)) {
      struct stat st {};
      if (other.path().string().starts_with(prefix) && ::lstat(other.path().c_str(), &st) == 0 &&
          st.st_dev == file.st_dev && st.st_ino == file.st_ino) {
        return other.path().string();
      }
    }
  }
  const std::string base = absl::StrCat(prefix, absl::ToUnixSeconds(absl::Now()));
  std::string aside = base;
  struct stat st {};
  for (int n = 2; ::lstat(aside.c_str(), &st) == 0; ++n) aside = absl::StrCat(base, "-", n);
  if (::link(path.c_str(), aside.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat(unreadable.message(), "; and it cannot be kept aside as ", aside));
  }
  return aside;
}

absl::Status SyscallError(absl::string_view syscall, const std::string& path) {
  return absl::ErrnoToStatus(errno, absl::StrCat(syscall, " ", path));
}

// One write of `line` (more only after a short write), then fdatasync.
absl::Status Append(int fd, absl::string_view line, const std::string& path) {
  DRA_CRASH_POINT("checkpoint.before_append");
  while (!line.empty()) {
    const ssize_t n = ::write(fd, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SyscallError("write", path);
    if (n == 0) return absl::InternalError(absl::StrCat("write ", path, ": no progress"));
    line.remove_prefix(static_cast<size_t>(n));
  }
  DRA_CRASH_POINT("checkpoint.after_append");
  if (::fdatasync(fd) != 0) return SyscallError("fdatasync", path);
  DRA_CRASH_POINT("checkpoint.after_sync");
  return absl::OkStatus();
}

bool SameFile(int fd, const struct stat& other) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_dev == other.st_dev && st.st_ino == other.st_ino;
}

// An append descriptor on the file at `path`, if that is the file `expected`
// describes; -1 otherwise (then the next write replaces the file).
int OpenForAppend(const std::string& path, const struct stat& expected) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd >= 0 && !SameFile(fd, expected)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

Checkpoint::Checkpoint(std::string path) : path_(std::move(path)) {}

Checkpoint::~Checkpoint() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<Checkpoint> Checkpoint::Off() { return std::unique_ptr<Checkpoint>(new Checkpoint("")); }

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(std::string path) {
  return Open(std::move(path), nullptr);
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(std::string path, const Adopter& adopt) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint(std::move(path)));
  absl::Status loaded;
  {
    dra::MutexLock lock(&checkpoint->mu_);
    loaded = checkpoint->Load();
  }
  if (loaded.ok()) return checkpoint;
  // Another driver's file goes to `adopt`: one whose header is this
  // format's is this driver's, damaged.
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(checkpoint->path_);
  absl::StatusOr<std::vector<k8s::ClaimRef>> claims = absl::FailedPreconditionError("");
  if (adopt && content.ok() && !IsCheckpointFormat(*content)) {
    claims = adopt(*content);
    if (!claims.ok()) {
      loaded =
          absl::Status(loaded.code(), absl::StrCat(loaded.message(), "; not adopted: ", claims.status().message()));
      // Not knowing yet (the API server did not answer, say) is no reason
      // to set the file aside: the next start tries again.
      if (!absl::IsInvalidArgument(claims.status())) return loaded;
    }
  }
  if (!claims.ok()) {
    dra::MutexLock lock(&checkpoint->mu_);
    if (absl::Status kept = checkpoint->KeepAsideAndSalvage(loaded); !kept.ok()) return kept;
    return checkpoint;
  }
  if (claims->empty()) {
    if (::unlink(checkpoint->path_.c_str()) != 0 && errno != ENOENT) {
      return absl::ErrnoToStatus(errno, absl::StrCat("remove the adopted checkpoint ", checkpoint->path_));
    }
    return checkpoint;
  }
  // Nothing was loaded and no file is open for appending: the commit writes
  // a new file in place of the adopted one.
  std::vector<CheckpointChange> adopted;
  for (k8s::ClaimRef& claim : *claims) {
    std::string uid = claim.uid;
    adopted.push_back({std::move(uid), CheckpointEntry{std::move(claim), ClaimState::kPrepareStarted, {}}});
  }
  if (absl::Status status = checkpoint->Commit(std::move(adopted)); !status.ok()) return status;
  return checkpoint;
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::OpenBeside(std::string path, Foreign foreign) {
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(foreign.path);
  if (!content.ok() && !absl::IsNotFound(content.status())) return content.status();
  if (content.ok() && IsCheckpointFormat(*content)) {
    // A release that kept no foreign file had its own checkpoint there, and
    // ran after this one wrote `path` (a downgrade and back): it is the newer.
    if (absl::Status status = dra::internal::WriteFileAtomically(path, *content, kFileMode); !status.ok()) {
      return status;
    }
    content = absl::NotFoundError(foreign.path);
  }
  absl::StatusOr<std::unique_ptr<Checkpoint>> opened = Open(std::move(path));
  if (!opened.ok()) return opened.status();
  std::unique_ptr<Checkpoint> checkpoint = *std::move(opened);
  checkpoint->foreign_ = std::move(foreign);
  std::vector<k8s::ClaimRef> recorded;
  checkpoint->ForEach([&](const CheckpointEntry& entry) { recorded.push_back(entry.claim); });
  if (content.ok() && *content != checkpoint->foreign_->encode(recorded)) {
    absl::StatusOr<std::vector<k8s::ClaimRef>> listed = checkpoint->foreign_->read(*content);
    if (!listed.ok() && !absl::IsInvalidArgument(listed.status())) {
      return absl::Status(listed.status().code(), absl::StrCat("checkpoint ", checkpoint->foreign_->path,
                                                               ": changed by another driver since this one wrote it: ",
                                                               listed.status().message()));
    }
    if (!listed.ok()) {
      // What it says cannot be known: this driver's own records stand.
      const std::string why = absl::StrCat("changed by another driver since this one wrote it, and not readable: ",
                                           listed.status().message());
      absl::StatusOr<std::string> aside = KeepAside(
          checkpoint->foreign_->path,
          absl::Status(listed.status().code(), absl::StrCat("checkpoint ", checkpoint->foreign_->path, ": ", why)));
      if (!aside.ok()) return aside.status();
      checkpoint->salvage_.kept_aside.emplace_back(*std::move(aside), why);
    } else {
      std::vector<CheckpointChange> changes;
      std::set<std::string> listed_uids;
      for (k8s::ClaimRef& claim : *listed) {
        listed_uids.insert(claim.uid);
        if (checkpoint->Get(claim.uid).has_value()) continue;  // what it recorded stays
        std::string uid = claim.uid;
        changes.push_back({std::move(uid), CheckpointEntry{std::move(claim), ClaimState::kPrepareStarted, {}}});
      }
      for (const k8s::ClaimRef& claim : recorded) {
        if (!listed_uids.contains(claim.uid)) changes.push_back({claim.uid, std::nullopt});  // unprepared by it
      }
      if (!changes.empty()) {
        if (absl::Status status = checkpoint->Commit(std::move(changes)); !status.ok()) return status;
      }
    }
  }
  if (absl::Status status = checkpoint->SyncForeign(); !status.ok()) return status;
  return checkpoint;
}

std::optional<std::string> Checkpoint::ForeignContent() {
  if (!foreign_.has_value()) return std::nullopt;
  if (foreign_claims_.has_value() &&
      std::equal(entries_.begin(), entries_.end(), foreign_claims_->begin(), foreign_claims_->end(),
                 [](const auto& entry, const std::string& uid) { return entry.first == uid; })) {
    return std::nullopt;
  }
  std::set<std::string> uids;
  std::vector<k8s::ClaimRef> claims;
  for (const auto& [uid, entry] : entries_) {
    uids.insert(uid);
    claims.push_back(entry.claim);
  }
  foreign_claims_ = std::move(uids);
  return foreign_->encode(claims);
}

absl::Status Checkpoint::SyncForeign() {
  std::string expected;
  {
    dra::MutexLock lock(&mu_);
    foreign_claims_.reset();  // so that ForeignContent gives it
    expected = *ForeignContent();
  }
  absl::StatusOr<std::string> current = dra::internal::ReadWholeFile(foreign_->path);
  if (current.ok() && *current == expected) return absl::OkStatus();
  absl::Status status = dra::internal::WriteFileAtomically(foreign_->path, expected, kFileMode);
  if (!status.ok()) {
    dra::MutexLock lock(&mu_);
    foreign_claims_.reset();
  }
  return status;
}

absl::Status Checkpoint::Load() {
  struct stat file {};
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(path_, &file);
  if (!content.ok() && !absl::IsNotFound(content.status())) return content.status();
  DecodedLog log;
  if (content.ok()) {
    absl::StatusOr<DecodedLog> decoded = DecodeLog(*content);
    if (!decoded.ok()) {
      return absl::Status(decoded.status().code(),
                          absl::StrCat("checkpoint ", path_, ": ", decoded.status().message()));
    }
    log = *std::move(decoded);
  }

  entries_ = std::move(log.entries);
  IndexAllLocked();
  dirty_.clear();
  record_seq_ = log.seq;
  log_changes_ = log.changes;
  // Appending after a torn line would bury later records behind garbage.
  if (log.torn) rewrite_ = true;
  // Keep appending where we did unless the file was replaced (another
  // instance compacted it) or removed.
  if (fd_ >= 0 && !(content.ok() && SameFile(fd_, file))) {
    ::close(fd_);
    fd_ = -1;
  }
  if (fd_ < 0 && content.ok()) fd_ = OpenForAppend(path_, file);
  return absl::OkStatus();
}

absl::Status Checkpoint::KeepAsideAndSalvage(const absl::Status& unreadable) {
  absl::StatusOr<std::string> content = dra::internal::ReadWholeFile(path_);
  absl::StatusOr<std::string> aside = KeepAside(path_, unreadable);
  if (!aside.ok()) return aside.status();
  SalvagedLog salvaged = content.ok() ? SalvageLog(*content) : SalvagedLog{{}, 1};
  salvage_.kept_aside.emplace_back(*std::move(aside), std::string(unreadable.message()));
  salvage_.unreadable_lines += salvaged.unreadable_lines;
  salvage_.unverified_lines += salvaged.unverified_lines;
  for (const auto& [uid, entry] : salvaged.entries) {
    if (!entry.quarantined.empty()) salvage_.quarantined.emplace_back(entry.claim, entry.quarantined);
  }
  entries_ = std::move(salvaged.entries);
  IndexAllLocked();
  dirty_.clear();
  record_seq_ = 0;
  log_changes_ = 0;
  rewrite_ = false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;  // the next write replaces the file
  salvage_unwritten_ = true;
  return absl::OkStatus();
}

absl::Status Checkpoint::WriteSalvaged() {
  {
    dra::MutexLock lock(&mu_);
    if (!salvage_unwritten_) return absl::OkStatus();
  }
  return Commit({});
}

absl::Status Checkpoint::Reload() {
  if (!records()) return absl::OkStatus();
  dra::MutexLock lock(&mu_);
  // A commit is in flight until its batch is durable or its write failed.
  // Replacing the entries under it would drop its change from the file.
  while (applied_seq_ > std::max(durable_seq_, last_failed_seq_)) cv_.Wait(&mu_);
  return Load();
}

std::optional<CheckpointEntry> Checkpoint::Get(const std::string& uid) const {
  dra::MutexLock lock(&mu_);
  const auto it = entries_.find(uid);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void Checkpoint::ForEach(absl::FunctionRef<void(const CheckpointEntry&)> visit) const {
  dra::MutexLock lock(&mu_);
  for (const auto& [uid, entry] : entries_) visit(entry);
}

void Checkpoint::Index(IndexKeys keys) {
  dra::MutexLock lock(&mu_);
  index_keys_ = std::move(keys);
  IndexAllLocked();
}

void Checkpoint::ForEachWithKey(std::span<const std::string> keys,
                                absl::FunctionRef<void(const CheckpointEntry&)> visit) const {
  dra::MutexLock lock(&mu_);
  if (!index_keys_) {
    for (const auto& [uid, entry] : entries_) visit(entry);
    return;
  }
  std::set<std::string> uids;
  for (const std::string& key : keys) {
    const auto it = by_key_.find(key);
    if (it != by_key_.end()) uids.insert(it->second.begin(), it->second.end());
  }
  for (const std::string& uid : uids) visit(entries_.at(uid));
}

void Checkpoint::IndexEntryLocked(const std::string& uid, const CheckpointEntry* entry) {
  if (!index_keys_) return;
  if (const auto old = keys_of_.find(uid); old != keys_of_.end()) {
    for (const std::string& key : old->second) {
      const auto it = by_key_.find(key);
      it->second.erase(uid);
      if (it->second.empty()) by_key_.erase(it);
    }
    keys_of_.erase(old);
  }
  if (entry == nullptr) return;
  std::vector<std::string> keys = index_keys_(*entry);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());  // two shares of one device: one key
  for (const std::string& key : keys) by_key_[key].insert(uid);
  keys_of_.emplace(uid, std::move(keys));
}

void Checkpoint::IndexAllLocked() {
  if (!index_keys_) return;
  by_key_.clear();
  keys_of_.clear();
  for (const auto& [uid, entry] : entries_) IndexEntryLocked(uid, &entry);
}

std::vector<CheckpointEntry> Checkpoint::Entries() const {
  dra::MutexLock lock(&mu_);
  std::vector<CheckpointEntry> out;
  out.reserve(entries_.size());
  for (const auto& [uid, entry] : entries_) out.push_back(entry);
  return out;
}

uint64_t Checkpoint::writes() const {
  dra::MutexLock lock(&mu_);
  return writes_;
}

// One durable write: what it carries, taken under mu_, and how it went.
struct Checkpoint::Write {
  uint64_t covered = 0;     // the last change batch it includes
  uint64_t record_seq = 0;  // "seq" of its line
  // Replace the file rather than append: to create it, to compact it, or
  // because its end may be garbage.
  bool replace = false;
  std::string content;
  std::optional<std::string> foreign;  // the foreign file's content, when it changed
  std::set<std::string> written;       // the claims it carries
  int fd = -1;                         // the file to append to

  absl::Status status;
  absl::Status foreign_status;
  int new_fd = -1;  // the replacement, for the next appends
};

absl::Status Checkpoint::Commit(std::vector<CheckpointChange> changes) {
  for (const CheckpointChange& change : changes) {
    if (change.entry && change.entry->claim.uid != change.uid) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint change for claim UID ", change.uid,
                                                     " carries an entry for UID ", change.entry->claim.uid));
    }
  }
  if (!records()) return absl::OkStatus();

  dra::MutexLock lock(&mu_);
  for (CheckpointChange& change : changes) {
    if (change.entry) {
      const auto it = entries_.insert_or_assign(change.uid, std::move(*change.entry)).first;
      IndexEntryLocked(change.uid, &it->second);
    } else {
      entries_.erase(change.uid);
      IndexEntryLocked(change.uid, nullptr);
    }
    dirty_.insert(std::move(change.uid));
  }
  const uint64_t seq = ++applied_seq_;

  // Group commit: wait while another caller writes; its write may already
  // cover this batch. Otherwise become the writer for everything applied so far.
  while (true) {
    if (durable_seq_ >= seq) return absl::OkStatus();
    if (last_failed_seq_ >= seq) return last_write_status_;
    if (!writing_) break;
    cv_.Wait(&mu_);
  }
  writing_ = true;
  Write write = TakeWriteLocked();
  mu_.Unlock();
  Perform(write);
  mu_.Lock();
  return FinishWriteLocked(write);
}

Checkpoint::Write Checkpoint::TakeWriteLocked() {
  Write write;
  write.covered = applied_seq_;
  write.record_seq = record_seq_ + 1;
  write.replace = fd_ < 0 || rewrite_ || log_changes_ >= MaxChangeRecords(entries_.size());
  write.content =
      write.replace ? EncodeSnapshot(write.record_seq, entries_) : EncodeChange(write.record_seq, entries_, dirty_);
  write.foreign = ForeignContent();
  write.written = std::exchange(dirty_, {});
  write.fd = fd_;
  return write;
}

void Checkpoint::Perform(Write& write) const {
  // The foreign file is written while this one syncs, not after it: each
  // takes a sync or two, which is most of a prepare's time on a busy disk.
  // A crash between the two is safe in either order: the driver runs only
  // once both are durable, and Start adopts as started the claims the
  // foreign file adds and drops those it lacks.
  std::optional<std::jthread> foreign;
  if (write.foreign.has_value()) {
    try {
      foreign.emplace([this, &write] {
        write.foreign_status = dra::internal::WriteFileAtomically(foreign_->path, *write.foreign, kFileMode);
      });
    } catch (const std::system_error&) {
      // No thread to spare: one after the other.
    }
  }
  if (write.replace) {
    DRA_CRASH_POINT("checkpoint.before_replace");
    write.status = dra::internal::WriteFileAtomically(path_, write.content, kFileMode);
    if (write.status.ok()) DRA_CRASH_POINT("checkpoint.after_replace");
    // The file just written (only one process writes at a time). Without
    // it, the next write replaces the file again.
    if (write.status.ok()) write.new_fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  } else {
    write.status = Append(write.fd, write.content, path_);
  }
  if (foreign.has_value()) {
    foreign->join();
  } else if (write.foreign.has_value()) {
    write.foreign_status = dra::internal::WriteFileAtomically(foreign_->path, *write.foreign, kFileMode);
  }
}

absl::Status Checkpoint::FinishWriteLocked(Write& write) {
  writing_ = false;
  if (write.status.ok() && !write.foreign_status.ok()) {
    // This file has the changes; the foreign one is written with the next
    // commit. Its callers learn that it lags.
    foreign_claims_.reset();
    last_failed_seq_ = write.covered;
    last_write_status_ = absl::Status(write.foreign_status.code(),
                                      absl::StrCat("write ", foreign_->path, ": ", write.foreign_status.message()));
  }
  if (write.status.ok()) {
    if (write.foreign_status.ok()) durable_seq_ = write.covered;
    ++writes_;
    record_seq_ = write.record_seq;
    if (write.replace) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = write.new_fd;
      log_changes_ = 0;
      rewrite_ = false;
      salvage_unwritten_ = false;
    } else {
      ++log_changes_;
    }
  } else {
    last_failed_seq_ = write.covered;
    last_write_status_ = write.status;
    dirty_.merge(write.written);  // written with the next commit
    // A failed append may have left part of its line.
    rewrite_ = true;
    if (write.foreign.has_value()) foreign_claims_.reset();
  }
  cv_.SignalAll();
  return write.foreign_status.ok() ? write.status : last_write_status_;
}

}  // namespace dra::kubeletplugin::internal
