// The prepared-claims checkpoint's records: what a checkpoint entry is, and
// how the file's lines encode and decode. Pure: no I/O (checkpoint.h writes
// and reads the file).
//
// The file is an append-only log of lines, each "<crc> <json>\n" where <crc>
// is the CRC-32C of the <json> bytes as 8 lowercase hex digits:
//   line 1   header     {"version":2}
//   line 2   snapshot   {"seq":S,"claims":{"<uid>":<entry>,...}}
//   line 3.. change     {"seq":S+1,"set":{"<uid>":<entry>,...},"erase":["<uid>",...]}
// with <entry> = {"namespace":"..","name":"..","state":"PrepareStarted"|"Prepared",
//   "devices":[{"requests":[..],"poolName":"..","deviceName":"..","cdiDeviceIDs":[..],"shareID":".."}],
//   "cdiSpec":"<CDI spec JSON>","metadataFiles":{"<path>":"<content>",...},"driverData":"..",
//   "held":[{"pool":"..","device":"..","shareID":"..","adminAccess":true,"units":[..]}],
//   "quarantined":"<why>"}
// ("shareID", "cdiSpec", "metadataFiles", "driverData", "held", "adminAccess",
// "units" and "quarantined" only when set; files without them load as before). Fields are
// only ever added, and a reader ignores keys it does not know, so the
// previous minor release reads what this one writes (docs/compatibility.md). "seq" grows by one per line. Replaying the
// changes over the snapshot, in order, gives the entries.
//
// Only change records are ever appended, so only the last line can be torn:
// a last line (3 or later) without its newline or with a wrong checksum is a
// commit that never returned and is ignored. Anything else that does not
// verify or decode is corruption.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/k8s/claim_ref.h"
#include "dra/kubeletplugin/driver.h"
#include "kubeletplugin/held_device.h"

namespace dra::kubeletplugin::internal {

enum class ClaimState {
  kPrepareStarted,  // durable before the driver is called
  kPrepared,        // durable, with the result, before the kubelet is answered
};

struct CheckpointEntry {
  k8s::ClaimRef claim;
  ClaimState state = ClaimState::kPrepareStarted;
  std::vector<Device> devices;  // set when kPrepared
  // The claim's CDI spec as JSON, when the Helper wrote one (ClaimCdiSpecs),
  // to write it again if the file is lost (/var/run/cdi is a tmpfs).
  std::string cdi_spec{};
  // The claim's device metadata files and their CDI specs, path -> content,
  // when the Helper wrote them (ClaimMetadataFiles), to write them again.
  std::map<std::string, std::string> metadata_files{};
  // PrepareResult::driver_data, when the driver gave some.
  std::string driver_data{};
  // The devices of the claim's allocation, recorded with kPrepareStarted
  // (device exclusivity): what no unrelated claim may be prepared with.
  // Empty in entries of 0.1.0, adopted ones, and with exclusivity off.
  std::vector<HeldDevice> held{};
  // Why the entry, as found on disk, could not be used (its record does not
  // decode, or its files could not be restored); empty when it is sound. A
  // quarantined entry is kPrepareStarted with what could be read of it: a
  // prepare of its claim calls the driver again and replaces it, an
  // unprepare erases it, and until then it holds the devices it names.
  std::string quarantined{};

  bool operator==(const CheckpointEntry&) const = default;
};

// Entries by claim UID.
using CheckpointEntries = std::map<std::string, CheckpointEntry>;

// The header and snapshot lines that begin a file: every entry, at "seq".
std::string EncodeSnapshot(uint64_t seq, const CheckpointEntries& entries);
// The change record at "seq": sets each claim of `changed` that `entries`
// holds and erases the others.
std::string EncodeChange(uint64_t seq, const CheckpointEntries& entries, const std::set<std::string>& changed);

// What a file holds.
struct DecodedLog {
  CheckpointEntries entries;
  uint64_t seq = 0;      // of the last line
  uint64_t changes = 0;  // change records
  bool torn = false;     // the last line was a torn change record, ignored
};

// The state in `content`, or an error naming the line that is wrong
// ("line 3: checksum mismatch"): DataLoss, or FailedPrecondition for a
// version this build does not read.
absl::StatusOr<DecodedLog> DecodeLog(absl::string_view content);

// What a file that cannot be read whole still gives.
struct SalvagedLog {
  CheckpointEntries entries;
  size_t unreadable_lines = 0;  // lines that named no claim that could be read
  // Lines that did not verify (their checksum, or not a checksummed record):
  // a claim's UID in one may be the damage, naming a claim that was never
  // recorded in place of the one that was.
  size_t unverified_lines = 0;
};

// Replays every line that verifies, decoding each entry on its own; an entry
// that does not decode, or that a line failing its checksum names, is
// quarantined with what can be read of it (its name and the devices it
// holds), and so is every claim recorded before a line that fails its
// checksum or cannot be read: that line may have changed it (erased it, say,
// so that it would be prepared again from an older record).
SalvagedLog SalvageLog(absl::string_view content);

// Whether `content` is a file of this format, damaged or not: its first
// line verifies.
bool IsCheckpointFormat(absl::string_view content);

}  // namespace dra::kubeletplugin::internal
