// The prepared-claims checkpoint's record codec
// (src/kubeletplugin/checkpoint_codec.h) on the input's content as a file.
//
// The first input byte is a flag: when its low bit is set, every line that
// looks like a record ("<8 chars> <rest>") gets the right CRC-32C of <rest>
// first, so that the fuzzer reaches the JSON decoding behind the checksums;
// otherwise the bytes are decoded as they are.
//
// Checks: DecodeLog and SalvageLog take any bytes without throwing; what
// either gives, encoded as a snapshot, decodes to the same entries and seq;
// and what DecodeLog gives, encoded as a change record after an empty
// snapshot, replays to the same entries.
#include <cstdio>
#include <limits>
#include <set>
#include <string>

#include "fuzz_check.h"
#include "kubeletplugin/checkpoint_codec.h"
#include "kubeletplugin/crc32c.h"

namespace {

using dra::kubeletplugin::internal::CheckpointEntries;
using dra::kubeletplugin::internal::DecodedLog;
using dra::kubeletplugin::internal::DecodeLog;
using dra::kubeletplugin::internal::EncodeChange;
using dra::kubeletplugin::internal::EncodeSnapshot;
using dra::kubeletplugin::internal::SalvageLog;

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

void CheckSnapshotRoundTrip(uint64_t seq, const CheckpointEntries& entries) {
  const absl::StatusOr<DecodedLog> decoded = DecodeLog(EncodeSnapshot(seq, entries));
  DRA_FUZZ_CHECK(decoded.ok());
  DRA_FUZZ_CHECK(decoded->entries == entries);
  DRA_FUZZ_CHECK(decoded->seq == seq);
  DRA_FUZZ_CHECK(decoded->changes == 0 && !decoded->torn);
}

void CheckChangeRoundTrip(uint64_t seq, const CheckpointEntries& entries) {
  std::set<std::string> changed;
  for (const auto& [uid, entry] : entries) changed.insert(uid);
  const absl::StatusOr<DecodedLog> decoded =
      DecodeLog(EncodeSnapshot(seq, {}) + EncodeChange(seq + 1, entries, changed));
  DRA_FUZZ_CHECK(decoded.ok());
  DRA_FUZZ_CHECK(decoded->entries == entries);
  DRA_FUZZ_CHECK(decoded->seq == seq + 1);
  DRA_FUZZ_CHECK(decoded->changes == 1 && !decoded->torn);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const std::string_view raw = dra::fuzz::AsText(data + 1, size - 1);
  const std::string content = (data[0] & 1) != 0 ? WithChecksums(raw) : std::string(raw);

  const absl::StatusOr<DecodedLog> log = DecodeLog(content);
  if (log.ok()) {
    CheckSnapshotRoundTrip(log->seq, log->entries);
    if (log->seq < std::numeric_limits<uint64_t>::max()) CheckChangeRoundTrip(log->seq, log->entries);
  }
  CheckSnapshotRoundTrip(0, SalvageLog(content).entries);
  return 0;
}
