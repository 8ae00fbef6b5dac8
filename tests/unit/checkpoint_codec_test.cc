// The checkpoint's record codec (checkpoint_codec.h) and its checksum, by
// tables: the bytes a record encodes to, what each kind of damage decodes
// to, and entries that come back as they went in. No files.
#include "kubeletplugin/checkpoint_codec.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_format.h"
#include "kubeletplugin/crc32c.h"

namespace dra::kubeletplugin::internal {
namespace {

// "<crc> <text>\n", the way the codec writes a line.
std::string Line(const std::string& text) { return absl::StrFormat("%08x %s\n", Crc32c(text), text); }

const std::string kHeader = Line(R"({"version":2})");

CheckpointEntry Started(const std::string& uid) {
  return CheckpointEntry{.claim = {.namespace_ = "ns", .name = "claim-" + uid, .uid = uid},
                         .state = ClaimState::kPrepareStarted,
                         .devices = {}};
}

CheckpointEntry Prepared(const std::string& uid) {
  CheckpointEntry entry = Started(uid);
  entry.state = ClaimState::kPrepared;
  entry.devices = {Device{.requests = {"gpu"},
                          .pool_name = "node-1",
                          .device_name = "gpu-0",
                          .cdi_device_ids = {"example.com/gpu=gpu-0"},
                          .share_id = std::nullopt}};
  return entry;
}

CheckpointEntries ByUid(const std::vector<CheckpointEntry>& entries) {
  CheckpointEntries out;
  for (const CheckpointEntry& entry : entries) out.emplace(entry.claim.uid, entry);
  return out;
}

TEST_CASE("Crc32c is CRC-32C (Castagnoli)") {
  CHECK(Crc32c("") == 0);
  CHECK(Crc32c("123456789") == 0xE3069283u);
  CHECK(Crc32cPortable("123456789") == 0xE3069283u);
  // The instruction path and the table agree at every length and alignment.
  std::string text;
  for (int i = 0; i < 300; ++i) text.push_back(static_cast<char>((i * 131 + 7) & 0xFF));
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = 0; length + offset <= text.size(); length += 13) {
      const std::string_view part = std::string_view(text).substr(offset, length);
      INFO("offset " << offset << ", length " << length);
      CHECK(Crc32c(part) == Crc32cPortable(part));
    }
  }
}

TEST_CASE("EncodeSnapshot writes the header and the snapshot, optional fields only when set") {
  CheckpointEntry full = Prepared("uid-b");
  full.devices[0].share_id = "share-1";
  full.cdi_spec = R"({"kind":"x"})";
  full.metadata_files = {{"/a", "1"}, {"/b", "2"}};
  full.driver_data = "data";
  full.held = {{.pool = "node-1", .device = "gpu-0", .share_id = "share-1", .admin_access = true, .units = {"u0"}}};
  full.quarantined = "why";
  const struct {
    const char* name;
    std::vector<CheckpointEntry> entries;
    std::string snapshot;
  } cases[] = {
      {"none", {}, R"({"seq":1,"claims":{}})"},
      {"started",
       {Started("uid-a")},
       R"({"seq":1,"claims":{"uid-a":{"namespace":"ns","name":"claim-uid-a","state":"PrepareStarted","devices":[]}}})"},
      {"every field",
       {full},
       R"({"seq":1,"claims":{"uid-b":{"namespace":"ns","name":"claim-uid-b","state":"Prepared",)"
       R"("devices":[{"requests":["gpu"],"poolName":"node-1","deviceName":"gpu-0",)"
       R"("cdiDeviceIDs":["example.com/gpu=gpu-0"],"shareID":"share-1"}],"cdiSpec":"{\"kind\":\"x\"}",)"
       R"("metadataFiles":{"/a":"1","/b":"2"},"driverData":"data",)"
       R"("held":[{"pool":"node-1","device":"gpu-0","shareID":"share-1","adminAccess":true,"units":["u0"]}],)"
       R"("quarantined":"why"}}})"},
      {"escaped",
       {Started("a\"b\n")},
       R"({"seq":1,"claims":{"a\"b\n":{"namespace":"ns","name":"claim-a\"b\n","state":"PrepareStarted","devices":[]}}})"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    CHECK(EncodeSnapshot(1, ByUid(c.entries)) == kHeader + Line(c.snapshot));
  }
}

TEST_CASE("EncodeChange sets the changed claims it holds and erases the others") {
  const CheckpointEntries entries = ByUid({Started("uid-a"), Started("uid-b")});
  const struct {
    std::set<std::string> changed;
    std::string record;
  } cases[] = {
      {{}, R"({"seq":7,"set":{},"erase":[]})"},
      {{"uid-gone"}, R"({"seq":7,"set":{},"erase":["uid-gone"]})"},
      {{"uid-b", "uid-gone", "uid-x"},
       R"({"seq":7,"set":{"uid-b":{"namespace":"ns","name":"claim-uid-b","state":"PrepareStarted","devices":[]}},)"
       R"("erase":["uid-gone","uid-x"]})"},
  };
  for (const auto& c : cases) CHECK(EncodeChange(7, entries, c.changed) == Line(c.record));
}

TEST_CASE("Encoded entries decode as they were, from snapshots and from changes") {
  CheckpointEntry odd = Prepared("uid-odd");
  const std::string text = "quote \" backslash \\ newline \n tab \t nul " + std::string(1, '\0') + " \xc3\xa9 \x7f";
  odd.claim.namespace_ = text;
  odd.devices[0].requests = {text, ""};
  odd.devices[0].share_id = "";
  odd.metadata_files = {{text, text}};
  CheckpointEntry held = Started("uid-held");
  held.held = {{.pool = "p", .device = "d"}, {.pool = "p", .device = "e", .admin_access = true, .units = {"1", "2"}}};
  const std::vector<std::vector<CheckpointEntry>> cases = {
      {}, {Started("uid-a")}, {Prepared("uid-a"), Started("uid-b")}, {odd}, {held}};
  for (const std::vector<CheckpointEntry>& entries : cases) {
    const CheckpointEntries want = ByUid(entries);
    absl::StatusOr<DecodedLog> snapshot = DecodeLog(EncodeSnapshot(41, want));
    REQUIRE(snapshot.ok());
    CHECK(snapshot->entries == want);
    CHECK(snapshot->seq == 41);
    CHECK(snapshot->changes == 0);
    CHECK_FALSE(snapshot->torn);

    std::set<std::string> changed = {"uid-erased"};
    for (const CheckpointEntry& entry : entries) changed.insert(entry.claim.uid);
    const std::string log = EncodeSnapshot(41, ByUid({Started("uid-erased")})) + EncodeChange(42, want, changed);
    absl::StatusOr<DecodedLog> replayed = DecodeLog(log);
    REQUIRE(replayed.ok());
    CHECK(replayed->entries == want);
    CHECK(replayed->seq == 42);
    CHECK(replayed->changes == 1);
  }
}

TEST_CASE("DecodeLog names the line and the problem of damaged input") {
  const std::string snapshot = Line(R"({"seq":1,"claims":{}})");
  const std::string entry = R"({"namespace":"ns","name":"n","state":"Prepared","devices":[]})";
  const struct {
    const char* name;
    std::string content;
    absl::StatusCode code;
    std::string message;
  } cases[] = {
      {"empty", "", absl::StatusCode::kDataLoss, "line 1: missing header (empty file)"},
      {"header only", kHeader, absl::StatusCode::kDataLoss, "line 2: missing snapshot"},
      {"no checksum", "{\"version\":2}\n", absl::StatusCode::kDataLoss,
       "line 1: not a checksummed record (8 hex digits, a space, JSON)"},
      {"upper-case checksum", "E3069283 123456789\n", absl::StatusCode::kDataLoss,
       "line 1: not a checksummed record (8 hex digits, a space, JSON)"},
      {"checksum mismatch", "00000000 {\"version\":2}\n", absl::StatusCode::kDataLoss, "line 1: checksum mismatch"},
      {"truncated header", kHeader.substr(0, kHeader.size() - 1), absl::StatusCode::kDataLoss,
       "line 1: truncated (no newline)"},
      {"truncated snapshot", kHeader + snapshot.substr(0, snapshot.size() - 1), absl::StatusCode::kDataLoss,
       "line 2: truncated (no newline)"},
      {"not JSON", Line("{"), absl::StatusCode::kDataLoss, "line 1: not a JSON object"},
      {"no version", Line("{}"), absl::StatusCode::kDataLoss, "line 1: version: missing or not an integer"},
      {"later version", Line(R"({"version":3})"), absl::StatusCode::kFailedPrecondition,
       "line 1: unsupported version 3 (this build reads version 2)"},
      {"snapshot not an object", kHeader + Line("[]"), absl::StatusCode::kDataLoss, "line 2: not a JSON object"},
      {"negative seq", kHeader + Line(R"({"seq":-1,"claims":{}})"), absl::StatusCode::kDataLoss,
       "line 2: seq: missing or not a non-negative integer"},
      {"no claims", kHeader + Line(R"({"seq":1})"), absl::StatusCode::kDataLoss,
       "line 2: claims: missing or not an object"},
      {"unknown state", kHeader + Line(R"({"seq":1,"claims":{"u":{"namespace":"ns","name":"n","state":"Gone"}}})"),
       absl::StatusCode::kDataLoss, R"(line 2: claims.u.state: "Gone" is neither "PrepareStarted" nor "Prepared")"},
      {"no devices", kHeader + Line(R"({"seq":1,"claims":{"u":{"namespace":"ns","name":"n","state":"Prepared"}}})"),
       absl::StatusCode::kDataLoss, "line 2: claims.u.devices: missing or not an array"},
      {"device without pool",
       kHeader + Line(R"({"seq":1,"claims":{"u":{"namespace":"ns","name":"n","state":"Prepared",)"
                      R"("devices":[{"requests":[],"deviceName":"d","cdiDeviceIDs":[]}]}}})"),
       absl::StatusCode::kDataLoss, "line 2: claims.u.devices[0].poolName: missing or not a string"},
      {"request not a string",
       kHeader + Line(R"({"seq":1,"claims":{"u":{"namespace":"ns","name":"n","state":"Prepared",)"
                      R"("devices":[{"requests":[1],"poolName":"p","deviceName":"d","cdiDeviceIDs":[]}]}}})"),
       absl::StatusCode::kDataLoss, "line 2: claims.u.devices[0].requests[0]: not a string"},
      {"seq gap", kHeader + snapshot + Line(R"({"seq":5,"set":{},"erase":[]})") + Line(R"({"seq":6,"set":{}})"),
       absl::StatusCode::kDataLoss, "line 3: seq 5 does not follow seq 1"},
      {"change without erase", kHeader + snapshot + Line(R"({"seq":2,"set":{}})"), absl::StatusCode::kDataLoss,
       "line 3: erase: missing or not an array"},
      {"bad entry in a change", kHeader + snapshot + Line(R"({"seq":2,"set":{"u":{}},"erase":[]})"),
       absl::StatusCode::kDataLoss, "line 3: set.u.namespace: missing or not a string"},
      {"damaged change before the last",
       kHeader + snapshot + "00000000 {}\n" + Line(R"({"seq":2,"set":{"u":)" + entry + R"(},"erase":[]})"),
       absl::StatusCode::kDataLoss, "line 3: checksum mismatch"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const absl::StatusOr<DecodedLog> log = DecodeLog(c.content);
    REQUIRE_FALSE(log.ok());
    CHECK(log.status().code() == c.code);
    CHECK(log.status().message() == c.message);
  }
}

TEST_CASE("DecodeLog ignores a torn last change record, and only that") {
  const std::string base = kHeader + Line(R"({"seq":1,"claims":{}})");
  const std::string change = Line(R"({"seq":2,"set":{},"erase":["u"]})");
  const struct {
    const char* name;
    std::string content;
    bool torn;
    uint64_t seq;
  } cases[] = {
      {"whole", base + change, false, 2},
      {"no newline", base + change.substr(0, change.size() - 1), true, 1},
      {"half a line", base + change.substr(0, 12), true, 1},
      {"wrong checksum", base + "00000000" + change.substr(8), true, 1},
      {"garbage", base + "\x01\x02", true, 1},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const absl::StatusOr<DecodedLog> log = DecodeLog(c.content);
    REQUIRE(log.ok());
    CHECK(log->torn == c.torn);
    CHECK(log->seq == c.seq);
    CHECK(log->entries.empty());
  }
}

TEST_CASE("SalvageLog keeps what verifies and quarantines what a bad line may have changed") {
  const std::string good = R"({"namespace":"ns","name":"n","state":"PrepareStarted","devices":[]})";
  const std::string bad = R"({"namespace":"ns","name":"n","state":"Gone","held":[{"pool":"p","device":"d"}]})";
  const struct {
    const char* name;
    std::string content;
    std::map<std::string, std::string> quarantined;  // by UID; "" for a sound entry
    size_t unreadable_lines;
    size_t unverified_lines;  // a UID in them may be the damage
  } cases[] = {
      {"empty", "", {}, 0, 0},
      {"a bad entry beside a good one",
       kHeader + Line(R"({"seq":1,"claims":{"a":)" + good + R"(,"b":)" + bad + "}}"),
       {{"a", ""}, {"b", R"(line 2: b.state: "Gone" is neither "PrepareStarted" nor "Prepared")"}},
       0,
       0},
      {"a line failing its checksum",
       kHeader + Line(R"({"seq":1,"claims":{"a":)" + good + "}}") + "00000000 " + R"({"seq":2,"set":{"b":)" + good +
           R"(},"erase":[]})" + "\n" + Line(R"({"seq":3,"set":{},"erase":[]})"),
       {{"a", "line 3: checksum mismatch; it may have changed this claim's record"},
        {"b", "line 3: checksum mismatch"}},
       0,
       1},
      {"an unreadable line",
       kHeader + Line(R"({"seq":1,"claims":{"a":)" + good + "}}") + "junk\n" + kHeader,
       {{"a",
         "line 3: not a checksummed record (8 hex digits, a space, JSON); it may have changed this claim's record"}},
       2,
       1},
      {"an erase that fails its checksum",
       kHeader + Line(R"({"seq":1,"claims":{"a":)" + good + "}}") + R"(00000000 {"erase":["a"]})" + "\n" + kHeader,
       {{"a", "line 3: checksum mismatch"}},
       1,
       1},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const SalvagedLog salvaged = SalvageLog(c.content);
    std::map<std::string, std::string> quarantined;
    for (const auto& [uid, entry] : salvaged.entries) quarantined[uid] = entry.quarantined;
    CHECK(quarantined == c.quarantined);
    CHECK(salvaged.unreadable_lines == c.unreadable_lines);
    CHECK(salvaged.unverified_lines == c.unverified_lines);
  }
}

TEST_CASE("IsCheckpointFormat: the first line verifies") {
  CHECK(IsCheckpointFormat(kHeader));
  CHECK(IsCheckpointFormat(kHeader + "anything after"));
  CHECK(IsCheckpointFormat(Line("not even JSON")));
  CHECK_FALSE(IsCheckpointFormat(""));
  CHECK_FALSE(IsCheckpointFormat(R"({"version":2})"));
  CHECK_FALSE(IsCheckpointFormat("00000000 " + kHeader.substr(9)));
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
