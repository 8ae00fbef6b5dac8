#include "dra/cdi/spec_dir.h"

#include <cerrno>
#include <memory>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "fileutil/atomic_file.h"
#include "fileutil/directories.h"

namespace dra::cdi {
namespace {

constexpr absl::string_view kJsonExtension = ".json";
constexpr absl::string_view kYamlExtension = ".yaml";

absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return absl::ErrnoToStatus(errno, absl::StrCat("unlink ", path));
  return absl::OkStatus();
}

// If `file` is "<prefix><id><.json|.yaml>", the id; else empty.
absl::string_view TransientId(absl::string_view file, absl::string_view prefix) {
  if (!absl::ConsumePrefix(&file, prefix)) return {};
  if (!absl::ConsumeSuffix(&file, kJsonExtension) && !absl::ConsumeSuffix(&file, kYamlExtension)) return {};
  return file;
}

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

// The names in `path`; NotFound if it does not exist.
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) {
  std::unique_ptr<DIR, DirCloser> dir(::opendir(path.c_str()));
  if (dir == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("opendir ", path));
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(dir.get())) names.emplace_back(entry->d_name);
  if (errno != 0) return absl::ErrnoToStatus(errno, absl::StrCat("readdir ", path));
  return names;
}

}  // namespace

std::string SpecFileName(const Kind& kind) { return absl::StrCat(kind.vendor, "-", kind.class_name); }

std::string TransientSpecFileName(const Kind& kind, absl::string_view id) {
  return absl::StrCat(SpecFileName(kind), "_", absl::StrReplaceAll(id, {{"/", "_"}}));
}

SpecDir::SpecDir(SpecDirOptions options) : options_(std::move(options)) {}

std::string SpecDir::PathOf(absl::string_view name) const {
  return absl::StrCat(options_.path, "/", name, FileExtension(options_.format));
}

absl::StatusOr<std::string> SpecDir::Write(absl::string_view name, const Spec& spec, WriteSync sync) const {
  absl::StatusOr<std::string> content = EncodeSpec(spec, options_.format);
  if (!content.ok()) return content.status();
  if (absl::Status s = internal::MakeDirectories(options_.path, 0755); !s.ok()) return s;
  std::string path = PathOf(name);
  const internal::Durability durability =
      sync == WriteSync::kSynced ? internal::Durability::kSynced : internal::Durability::kUnsynced;
  if (absl::Status s = internal::WriteFileAtomically(path, *content, options_.file_mode, durability); !s.ok()) {
    return s;
  }
  return path;
}

absl::StatusOr<bool> SpecDir::Matches(absl::string_view name, const Spec& spec) const {
  absl::StatusOr<std::string> want = EncodeSpec(spec, options_.format);
  if (!want.ok()) return want.status();
  absl::StatusOr<std::string> have = internal::ReadWholeFile(PathOf(name));
  if (absl::IsNotFound(have.status())) return false;
  if (!have.ok()) return have.status();
  return *have == *want;
}

absl::Status SpecDir::Remove(absl::string_view name) const {
  const std::string base = absl::StrCat(options_.path, "/", name);
  if (absl::Status s = RemoveFile(absl::StrCat(base, kJsonExtension)); !s.ok()) return s;
  return RemoveFile(absl::StrCat(base, kYamlExtension));
}

bool SpecDir::Exists(absl::string_view name) const {
  struct stat info;
  return ::stat(PathOf(name).c_str(), &info) == 0;
}

absl::StatusOr<std::set<std::string>> SpecDir::ListTransientIds(const Kind& kind) const {
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(options_.path);
  if (absl::IsNotFound(names.status())) return std::set<std::string>();
  if (!names.ok()) return names.status();
  const std::string prefix = TransientSpecFileName(kind, "");
  std::set<std::string> ids;
  for (const std::string& name : *names) {
    if (absl::string_view id = TransientId(name, prefix); !id.empty()) ids.emplace(id);
  }
  return ids;
}

absl::StatusOr<std::vector<std::string>> SpecDir::RemoveTransientSpecsExcept(const Kind& kind,
                                                                             const std::set<std::string>& keep) const {
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(options_.path);
  if (absl::IsNotFound(names.status())) return std::vector<std::string>();
  if (!names.ok()) return names.status();
  const std::string prefix = TransientSpecFileName(kind, "");
  std::vector<std::string> removed;
  for (const std::string& name : *names) {
    // A kept claim's temp file may be a write in progress: it stays too.
    const std::string_view target = internal::AtomicFileTarget(name);
    const absl::string_view id = TransientId(absl::string_view(target.data(), target.size()), prefix);
    if (id.empty() || keep.contains(std::string(id))) continue;
    std::string path = absl::StrCat(options_.path, "/", name);
    if (absl::Status s = RemoveFile(path); !s.ok()) return s;
    removed.push_back(std::move(path));
  }
  return removed;
}

}  // namespace dra::cdi
