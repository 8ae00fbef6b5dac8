/// @file
/// A CDI spec directory (default /var/run/cdi) that this process writes spec
/// files into: atomic replace, per-claim ("transient") spec files, removal and
/// clean-up of orphaned transient specs.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/cdi/codec.h"
#include "dra/cdi/qualified_name.h"
#include "dra/cdi/spec.h"

namespace dra::cdi {

/// Where and how a SpecDir writes.
struct SpecDirOptions {
  /// Where container runtimes look. Created (0755) on first write if missing,
  /// e.g. after a reboot emptied the tmpfs. Default: /var/run/cdi.
  std::string path = "/var/run/cdi";
  /// Format of the files written. Default: JSON.
  Format format = Format::kJson;
  /// Mode of the files written. Default: 0600, as the reference library.
  mode_t file_mode = 0600;
};

/// Whether SpecDir::Write reaches the disk before it returns.
enum class WriteSync {
  kSynced,    ///< fsync of the file and of the directory
  kUnsynced,  ///< readers still never see a partial file, but a power loss may
              ///< leave it empty or missing: for a caller that keeps the spec
              ///< elsewhere and checks the file after a restart (Matches)
};

/// "<vendor>-<class>", the name of a driver's static (common) spec file.
std::string SpecFileName(const Kind& kind);
/// "<vendor>-<class>_<id>", the name of a transient spec file tied to `id`
/// (a claim UID); '/' in the id becomes '_'.
std::string TransientSpecFileName(const Kind& kind, absl::string_view id);

/// Writes, checks and removes spec files in one directory, SpecDirOptions::path.
class SpecDir {
 public:
  /// Touches nothing until the first call.
  explicit SpecDir(SpecDirOptions options = {});

  /// The options it was made with.
  const SpecDirOptions& options() const { return options_; }
  /// `<path>/<name><extension of the configured format>`
  std::string PathOf(absl::string_view name) const;

  /// Validates and encodes `spec`, then replaces `<name>.<ext>` atomically: a
  /// temp file in the same directory (".<file>.tmp-XXXXXX", which runtimes
  /// skip for its extension), fsync, rename, fsync of the directory (no fsync
  /// with kUnsynced). A reader sees the old file or the new one, never a
  /// partial one. Returns the path written.
  absl::StatusOr<std::string> Write(absl::string_view name, const Spec& spec,
                                    WriteSync sync = WriteSync::kSynced) const;

  /// Whether `<name>` holds exactly what Write(name, spec) writes; false when
  /// it is missing.
  absl::StatusOr<bool> Matches(absl::string_view name, const Spec& spec) const;

  /// Removes `<name>.json` and `<name>.yaml`; a missing file is success.
  absl::Status Remove(absl::string_view name) const;

  /// Whether `<name>` exists in the configured format.
  bool Exists(absl::string_view name) const;

  /// IDs of the transient spec files of `kind` in the directory (either
  /// format). A missing directory has none.
  absl::StatusOr<std::set<std::string>> ListTransientIds(const Kind& kind) const;

  /// Removes the transient spec files of `kind` whose ID is not in `keep`,
  /// with temp files a crash left behind while writing them. Files of other
  /// vendors or classes are never touched. Returns the paths removed.
  absl::StatusOr<std::vector<std::string>> RemoveTransientSpecsExcept(const Kind& kind,
                                                                      const std::set<std::string>& keep) const;

 private:
  SpecDirOptions options_;
};

}  // namespace dra::cdi
