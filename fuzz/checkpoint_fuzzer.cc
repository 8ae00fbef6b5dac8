// Loading the prepared-claims checkpoint (Checkpoint::Open, in
// src/kubeletplugin/checkpoint.h) from a file with the input's content.
//
// The first input byte is a flag: when its low bit is set, every line that
// looks like a record ("<8 chars> <rest>") gets the right CRC-32C of <rest>
// before the file is written, so that the fuzzer reaches the JSON decoding
// behind the checksums; otherwise the bytes are written as they are.
//
// Checks: Open succeeds (a file it cannot read whole is kept aside and
// salvaged) and never throws; a loaded checkpoint takes a commit (appended,
// or the file rewritten after a torn tail) and reads back the same; and its
// entries, committed into a new checkpoint, read back the same.
#include <cstdio>

#include "fuzz_check.h"
#include "fuzz_temp_dir.h"
#include "kubeletplugin/checkpoint.h"

namespace {

using dra::kubeletplugin::internal::Checkpoint;
using dra::kubeletplugin::internal::CheckpointChange;
using dra::kubeletplugin::internal::CheckpointEntry;

std::string WithChecksums(std::string_view content) {
  std::string out;
  while (!content.empty()) {
    const size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    if (line.size() > 8 && line[8] == ' ') {
      char crc[9];
      std::snprintf(crc, sizeof(crc), "%08x", dra::kubeletplugin::internal::Crc32c(line.substr(9)));
      out.append(crc, 8).append(line.substr(8));
    } else {
      out.append(line);
    }
    if (newline == std::string_view::npos) break;
    out.push_back('\n');
    content.remove_prefix(newline + 1);
  }
  return out;
}

std::unique_ptr<Checkpoint> Reopen(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path);
  DRA_FUZZ_CHECK(checkpoint.ok());
  return *std::move(checkpoint);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const std::string_view content = dra::fuzz::AsText(data + 1, size - 1);
  const std::string path = dra::fuzz::ProcessTempDir().Join("checkpoint.json");
  const std::string copy_path = dra::fuzz::ProcessTempDir().Join("copy.json");
  std::remove(copy_path.c_str());
  dra::testing::WriteFile(path, (data[0] & 1) != 0 ? WithChecksums(content) : std::string(content));

  absl::StatusOr<std::unique_ptr<Checkpoint>> loaded = Checkpoint::Open(path);
  DRA_FUZZ_CHECK(loaded.ok());
  Checkpoint& checkpoint = **loaded;
  for (const auto& [aside, why] : checkpoint.salvage().kept_aside) std::remove(aside.c_str());
  const std::vector<CheckpointEntry> entries = checkpoint.Entries();

  std::vector<CheckpointChange> change;
  if (entries.empty()) {
    change.push_back({"fuzz-claim", std::nullopt});
  } else {
    change.push_back({entries.front().claim.uid, entries.front()});
  }
  DRA_FUZZ_CHECK(checkpoint.Commit(std::move(change)).ok());
  DRA_FUZZ_CHECK(Reopen(path)->Entries() == entries);

  std::unique_ptr<Checkpoint> copy = Reopen(copy_path);
  std::vector<CheckpointChange> all;
  for (const CheckpointEntry& entry : entries) all.push_back({entry.claim.uid, entry});
  DRA_FUZZ_CHECK(copy->Commit(std::move(all)).ok());
  DRA_FUZZ_CHECK(Reopen(copy_path)->Entries() == entries);
  return 0;
}
