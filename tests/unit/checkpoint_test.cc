#include "kubeletplugin/checkpoint.h"

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <latch>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fileutil/atomic_file.h"
#include "kubeletplugin/crc32c.h"
#include "support/temp_dir.h"

namespace dra::kubeletplugin::internal {
namespace {

using dra::internal::ReadWholeFile;
using dra::internal::WriteFileAtomically;
using dra::testing::ReadFile;
using dra::testing::TempDir;
using dra::testing::WriteFile;
using nlohmann::json;

CheckpointEntry Entry(const std::string& uid, ClaimState state, std::vector<Device> devices = {}) {
  return CheckpointEntry{.claim = {.namespace_ = "ns-" + uid, .name = "claim-" + uid, .uid = uid},
                         .state = state,
                         .devices = std::move(devices)};
}

Device MakeDevice(const std::string& name) {
  Device device;
  device.requests = {"req"};
  device.pool_name = "pool";
  device.device_name = name;
  device.cdi_device_ids = {"example.com/device=" + name};
  return device;
}

CheckpointChange Set(const CheckpointEntry& entry) { return CheckpointChange{entry.claim.uid, entry}; }
CheckpointChange Erase(const std::string& uid) { return CheckpointChange{uid, std::nullopt}; }

std::unique_ptr<Checkpoint> MustOpen(const std::string& path) {
  auto checkpoint = Checkpoint::Open(path);
  INFO(checkpoint.status().ToString());
  REQUIRE(checkpoint.ok());
  return std::move(*checkpoint);
}

std::set<std::string> FileNames(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

mode_t Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_ino;
}

// The file's lines without their newlines (a last line without one included).
std::vector<std::string> Lines(const std::string& path) {
  const std::string content = ReadFile(path);
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < content.size()) {
    const size_t newline = content.find('\n', pos);
    if (newline == std::string::npos) {
      lines.push_back(content.substr(pos));
      break;
    }
    lines.push_back(content.substr(pos, newline - pos));
    pos = newline + 1;
  }
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

// A line the way the checkpoint writes it (without the newline), so that
// edited records get past the checksum.
std::string Sign(const json& record) {
  const std::string text = record.dump();
  return absl::StrFormat("%08x %s", Crc32c(text), text);
}

// The JSON of a line, after checking its checksum.
json Record(const std::string& line) {
  REQUIRE(line.size() > 9);
  const std::string text = line.substr(9);
  CHECK(line.substr(0, 9) == absl::StrFormat("%08x ", Crc32c(text)));
  return json::parse(text);
}

void AppendToFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << bytes;
  REQUIRE(out.good());
}

// Writes a valid checkpoint: header, snapshot holding uid-a (prepared), one
// change adding uid-b (started). Returns its bytes.
std::string WriteValidCheckpoint(const std::string& path) {
  auto checkpoint = MustOpen(path);
  REQUIRE(checkpoint->Commit({Set(Entry("uid-a", ClaimState::kPrepared, {MakeDevice("gpu-0")}))}).ok());
  REQUIRE(checkpoint->Commit({Set(Entry("uid-b", ClaimState::kPrepareStarted))}).ok());
  REQUIRE(Lines(path).size() == 3);
  return ReadFile(path);
}

TEST_CASE("Checkpoint starts empty when the file does not exist") {
  TempDir dir;
  auto checkpoint = MustOpen(dir.Join("checkpoint.json"));
  CHECK(checkpoint->Entries().empty());
  CHECK_FALSE(checkpoint->Get("uid-a").has_value());
  CHECK(checkpoint->writes() == 0);
  CHECK(checkpoint->path() == dir.Join("checkpoint.json"));
  CHECK(FileNames(dir.path()).empty());
}

TEST_CASE("Checkpoint::Off records nothing and has no file") {
  const std::unique_ptr<Checkpoint> off = Checkpoint::Off();
  CHECK_FALSE(off->records());
  CHECK(off->Commit({CheckpointChange{"uid-a", Entry("uid-a", ClaimState::kPrepared)}}).ok());
  CHECK_FALSE(off->Get("uid-a").has_value());
  CHECK(off->Entries().empty());
  CHECK(off->Reload().ok());
  CHECK(off->writes() == 0);
  CHECK(off->path().empty());
  // Still checked: a change that names another UID is a caller's bug.
  CHECK(absl::IsInvalidArgument(off->Commit({CheckpointChange{"uid-x", Entry("uid-y", ClaimState::kPrepared)}})));
}

TEST_CASE("Checkpoint commits survive a reopen") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const CheckpointEntry started = Entry("uid-a", ClaimState::kPrepareStarted);
  const CheckpointEntry prepared = Entry("uid-b", ClaimState::kPrepared,
                                         {Device{.requests = {"gpu", "nic/vf"},
                                                 .pool_name = "node-1",
                                                 .device_name = "gpu-0",
                                                 .cdi_device_ids = {"example.com/gpu=gpu-0", "example.com/gpu=common"},
                                                 .share_id = "0a1b2c3d-share"},
                                          Device{.requests = {},
                                                 .pool_name = "node-1",
                                                 .device_name = "nic-3",
                                                 .cdi_device_ids = {},
                                                 .share_id = std::nullopt}});
  const CheckpointEntry doomed = Entry("uid-c", ClaimState::kPrepared);
  CheckpointEntry with_data = Entry("uid-d", ClaimState::kPrepared);
  with_data.driver_data = "{\"cpus\":\"4-7\"}";

  auto checkpoint = MustOpen(path);
  REQUIRE(checkpoint->Commit({Set(started), Set(prepared), Set(doomed), Set(with_data)}).ok());
  REQUIRE(checkpoint->Commit({Erase("uid-c"), Erase("uid-never-there")}).ok());
  CHECK(checkpoint->writes() == 2);
  CHECK(checkpoint->Entries() == std::vector<CheckpointEntry>{started, prepared, with_data});

  auto reopened = MustOpen(path);
  CHECK(reopened->Entries() == std::vector<CheckpointEntry>{started, prepared, with_data});
  CHECK(reopened->Get("uid-b") == prepared);
  CHECK_FALSE(reopened->Get("uid-c").has_value());
  CHECK(reopened->writes() == 0);

  SECTION("the file has the documented format") {
    const std::vector<std::string> lines = Lines(path);
    REQUIRE(lines.size() == 3);
    CHECK(ReadFile(path).back() == '\n');
    CHECK(Record(lines[0]) == json{{"version", 2}});

    // The first commit created the file: header and snapshot.
    const json snapshot = Record(lines[1]);
    CHECK(snapshot["seq"] == 1);
    const json& claims = snapshot["claims"];
    CHECK(claims.size() == 4);
    CHECK(claims["uid-a"]["namespace"] == "ns-uid-a");
    CHECK(claims["uid-a"]["name"] == "claim-uid-a");
    CHECK(claims["uid-a"]["state"] == "PrepareStarted");
    CHECK(claims["uid-b"]["state"] == "Prepared");
    const json& devices = claims["uid-b"]["devices"];
    CHECK(devices[0]["requests"] == json{"gpu", "nic/vf"});
    CHECK(devices[0]["poolName"] == "node-1");
    CHECK(devices[0]["deviceName"] == "gpu-0");
    CHECK(devices[0]["shareID"] == "0a1b2c3d-share");
    CHECK(devices[0]["cdiDeviceIDs"][1] == "example.com/gpu=common");
    CHECK_FALSE(devices[1].contains("shareID"));
    CHECK_FALSE(claims["uid-b"].contains("driverData"));
    CHECK(claims["uid-d"]["driverData"] == "{\"cpus\":\"4-7\"}");

    // The second was appended: only what it changed.
    const json change = Record(lines[2]);
    CHECK(change["seq"] == 2);
    CHECK(change["set"] == json::object());
    CHECK(change["erase"] == json{"uid-c", "uid-never-there"});
  }
}

TEST_CASE("Checkpoint keeps what a claim holds (device exclusivity), written only when set") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  CheckpointEntry holding = Entry("uid-a", ClaimState::kPrepareStarted);
  holding.held = {HeldDevice{.pool = "node-1", .device = "gpu-0-full", .units = {"gpu-0/0", "gpu-0/1"}},
                  HeldDevice{.pool = "node-1", .device = "gpu-4", .share_id = "share-1", .admin_access = true}};
  const CheckpointEntry plain = Entry("uid-b", ClaimState::kPrepared, {MakeDevice("gpu-1")});
  {
    auto checkpoint = MustOpen(path);
    REQUIRE(checkpoint->Commit({Set(holding), Set(plain)}).ok());
  }
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{holding, plain});
  const json claims = Record(Lines(path)[1])["claims"];
  CHECK(claims["uid-a"]["held"] ==
        json::parse(R"([{"pool":"node-1","device":"gpu-0-full","units":["gpu-0/0","gpu-0/1"]},
                                                    {"pool":"node-1","device":"gpu-4","shareID":"share-1","adminAccess":true}])"));
  CHECK_FALSE(claims["uid-b"].contains("held"));
}

TEST_CASE("Checkpoint finds entries by the keys of its index, kept through commits, erasures and reloads") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  // Keyed by device name, as device exclusivity keys them.
  const auto device_keys = [](const CheckpointEntry& entry) {
    std::vector<std::string> keys;
    for (const Device& device : entry.devices) keys.push_back(device.device_name);
    return keys;
  };
  const auto found = [](const Checkpoint& checkpoint, std::vector<std::string> keys) {
    std::vector<std::string> uids;
    checkpoint.ForEachWithKey(keys, [&](const CheckpointEntry& entry) { uids.push_back(entry.claim.uid); });
    return uids;
  };
  auto checkpoint = MustOpen(path);
  // Without an index every entry is a candidate.
  REQUIRE(checkpoint->Commit({Set(Entry("uid-a", ClaimState::kPrepared, {MakeDevice("gpu-0")}))}).ok());
  CHECK(found(*checkpoint, {"gpu-9"}) == std::vector<std::string>{"uid-a"});

  checkpoint->Index(device_keys);  // indexes what is there
  CHECK(found(*checkpoint, {"gpu-0"}) == std::vector<std::string>{"uid-a"});
  CHECK(found(*checkpoint, {"gpu-9"}).empty());
  REQUIRE(checkpoint
              ->Commit({Set(Entry("uid-b", ClaimState::kPrepared, {MakeDevice("gpu-1"), MakeDevice("gpu-0")})),
                        Set(Entry("uid-c", ClaimState::kPrepared, {MakeDevice("gpu-2")}))})
              .ok());
  // Each entry once, in UID order, whichever of its keys matched.
  CHECK(found(*checkpoint, {"gpu-1", "gpu-0", "gpu-2"}) == std::vector<std::string>{"uid-a", "uid-b", "uid-c"});
  // An entry set again loses the keys it no longer has.
  REQUIRE(checkpoint->Commit({Set(Entry("uid-b", ClaimState::kPrepared, {MakeDevice("gpu-3")}))}).ok());
  CHECK(found(*checkpoint, {"gpu-1"}).empty());
  CHECK(found(*checkpoint, {"gpu-0", "gpu-3"}) == std::vector<std::string>{"uid-a", "uid-b"});
  REQUIRE(checkpoint->Commit({Erase("uid-a")}).ok());
  CHECK(found(*checkpoint, {"gpu-0"}).empty());
  // Two shares of one device give one key twice.
  REQUIRE(checkpoint->Commit({Set(Entry("uid-e", ClaimState::kPrepared, {MakeDevice("gpu-5"), MakeDevice("gpu-5")}))})
              .ok());
  CHECK(found(*checkpoint, {"gpu-5"}) == std::vector<std::string>{"uid-e"});
  REQUIRE(checkpoint->Commit({Erase("uid-e")}).ok());
  CHECK(found(*checkpoint, {"gpu-5"}).empty());

  // Another instance's commit, read by a reload, is indexed too.
  auto other = MustOpen(path);
  REQUIRE(
      other->Commit({Erase("uid-c"), Set(Entry("uid-d", ClaimState::kPrepareStarted, {MakeDevice("gpu-2")}))}).ok());
  REQUIRE(checkpoint->Reload().ok());
  CHECK(found(*checkpoint, {"gpu-2"}) == std::vector<std::string>{"uid-d"});
  CHECK(found(*checkpoint, {"gpu-3"}) == std::vector<std::string>{"uid-b"});
}

TEST_CASE("Checkpoint reads a file with keys it does not know (written by a later minor release)") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  json entry = {{"namespace", "ns"},
                {"name", "claim"},
                {"state", "Prepared"},
                {"devices", json::array({{{"requests", {"gpu"}},
                                          {"poolName", "node-1"},
                                          {"deviceName", "gpu-0"},
                                          {"cdiDeviceIDs", json::array()},
                                          {"newDeviceKey", 1}}})},
                {"newEntryKey", {{"nested", true}}}};
  WriteFile(path, Join({Sign({{"version", 2}}), Sign({{"seq", 1}, {"claims", {{"uid-a", entry}}}, {"newKey", "x"}}),
                        Sign({{"seq", 2}, {"set", json::object()}, {"erase", json::array()}, {"newKey", 2}})}));
  auto checkpoint = MustOpen(path);
  const std::optional<CheckpointEntry> loaded = checkpoint->Get("uid-a");
  REQUIRE(loaded.has_value());
  CHECK(loaded->state == ClaimState::kPrepared);
  REQUIRE(loaded->devices.size() == 1);
  CHECK(loaded->devices[0].device_name == "gpu-0");
}

TEST_CASE("Checkpoint strings that need escaping survive, in snapshots and in changes") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const std::string odd = "quote \" backslash \\ newline \n tab \t nul " + std::string(1, '\0') + " \xc3\xa9 \x7f";
  CheckpointEntry entry = Entry("uid-odd", ClaimState::kPrepared,
                                {Device{.requests = {odd, ""},
                                        .pool_name = odd,
                                        .device_name = "{\"not\":\"json\"}",
                                        .cdi_device_ids = {odd},
                                        .share_id = odd}});
  entry.claim.namespace_ = odd;
  entry.claim.name = "";
  CheckpointEntry other = entry;
  other.claim.uid = odd;

  auto checkpoint = MustOpen(path);
  REQUIRE(checkpoint->Commit({Set(entry)}).ok());  // the snapshot
  REQUIRE(checkpoint->Commit({Set(other)}).ok());  // a change
  CHECK(Lines(path).size() == 3);
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{other, entry});

  SECTION("invalid UTF-8 is replaced, not refused") {
    CheckpointEntry bad = Entry("uid-bad", ClaimState::kPrepared);
    bad.claim.name = "x\xff\xfey";
    REQUIRE(checkpoint->Commit({Set(bad)}).ok());
    CHECK(MustOpen(path)->Get("uid-bad")->claim.name == "x\xef\xbf\xbd\xef\xbf\xbdy");
  }
}

TEST_CASE("Checkpoint rejects a change whose entry names another UID") {
  TempDir dir;
  auto checkpoint = MustOpen(dir.Join("checkpoint.json"));
  const absl::Status status =
      checkpoint->Commit({CheckpointChange{"uid-x", Entry("uid-y", ClaimState::kPrepareStarted)}});
  CHECK(absl::IsInvalidArgument(status));
  CHECK(checkpoint->Entries().empty());
  CHECK(checkpoint->writes() == 0);
}

TEST_CASE("Checkpoint file has mode 0600, also after appends and compaction") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  WriteValidCheckpoint(path);
  CHECK(Mode(path) == 0600);
  auto checkpoint = MustOpen(path);
  const ino_t created = Inode(path);
  for (int i = 0; i < 70; ++i) REQUIRE(checkpoint->Commit({Erase("uid-x")}).ok());
  CHECK(Inode(path) != created);
  CHECK(Mode(path) == 0600);
}

TEST_CASE("Checkpoint keeps a damaged file aside, naming the line, and salvages what it can read") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const std::string valid = WriteValidCheckpoint(path);
  std::vector<std::string> lines = Lines(path);
  const json header = Record(lines[0]);
  const json snapshot = Record(lines[1]);
  const json change = Record(lines[2]);
  std::string damaged;
  std::string problem;
  // What is salvaged: sound entries, quarantined ones, lines nothing could be
  // read from.
  std::set<std::string> sound = {"uid-a", "uid-b"};
  std::set<std::string> quarantined;
  size_t unreadable = 0;

  SECTION("a line without a checksum") {
    lines[1] = snapshot.dump();
    damaged = Join(lines);
    problem = "line 2: not a checksummed record";
    sound = {"uid-b"};  // the snapshot, uid-a, is unreadable
    unreadable = 1;
  }
  SECTION("the version 1 format") {
    damaged = R"({"version":1,"checksum":"00","data":{"claims":{}}})";
    problem = "line 1: not a checksummed record";
    sound = {};
    unreadable = 1;
  }
  SECTION("a byte inside the snapshot changed") {
    const size_t pos = lines[1].find("gpu-0");
    REQUIRE(pos != std::string::npos);
    lines[1][pos + 4] = '1';
    damaged = Join(lines);
    problem = "line 2: checksum mismatch";
    sound = {"uid-b"};
    quarantined = {"uid-a"};
  }
  SECTION("the checksum changed") {
    lines[0][0] = lines[0][0] == '0' ? '1' : '0';
    damaged = Join(lines);
    problem = "line 1: checksum mismatch";
  }
  SECTION("unknown version, correctly checksummed") {
    lines[0] = Sign(json{{"version", 3}});
    damaged = Join(lines);
    problem = "line 1: unsupported version 3 (this build reads version 2)";
  }
  SECTION("a header without version") {
    lines[0] = Sign(json::object());
    damaged = Join(lines);
    problem = "line 1: version: missing or not an integer";
    unreadable = 1;
  }
  SECTION("a line that is not a JSON object, correctly checksummed") {
    lines[0] = Sign(json::array());
    damaged = Join(lines);
    problem = "line 1: not a JSON object";
    unreadable = 1;
  }
  SECTION("a claim without state, correctly checksummed") {
    json edited = snapshot;
    edited["claims"]["uid-a"].erase("state");
    lines[1] = Sign(edited);
    damaged = Join(lines);
    problem = "line 2: claims.uid-a.state: missing or not a string";
    sound = {"uid-b"};
    quarantined = {"uid-a"};
  }
  SECTION("an unknown state, correctly checksummed") {
    json edited = snapshot;
    edited["claims"]["uid-a"]["state"] = "Unprepared";
    lines[1] = Sign(edited);
    damaged = Join(lines);
    problem = R"(line 2: claims.uid-a.state: "Unprepared" is neither "PrepareStarted" nor "Prepared")";
    sound = {"uid-b"};
    quarantined = {"uid-a"};
  }
  SECTION("a snapshot without seq, correctly checksummed") {
    json edited = snapshot;
    edited.erase("seq");
    lines[1] = Sign(edited);
    damaged = Join(lines);
    problem = "line 2: seq: missing or not a non-negative integer";
  }
  SECTION("a device field of the wrong type in the last change, correctly checksummed") {
    json edited = change;
    edited["set"]["uid-b"]["devices"] = json::array({MakeDevice("x").device_name});
    lines[2] = Sign(edited);
    damaged = Join(lines);
    problem = "line 3: set.uid-b.devices[0].requests: missing or not an array";
    sound = {"uid-a"};
    quarantined = {"uid-b"};
  }
  SECTION("a change out of sequence, correctly checksummed") {
    json edited = change;
    edited["seq"] = 7;
    lines[2] = Sign(edited);
    damaged = Join(lines);
    problem = "line 3: seq 7 does not follow seq 1";
  }
  SECTION("a change whose erase is not a list of strings, correctly checksummed") {
    json edited = change;
    edited["erase"] = json{1};
    lines[2] = Sign(edited);
    damaged = Join(lines);
    problem = "line 3: erase[0]: not a string";
  }
  SECTION("the header only") {
    damaged = lines[0] + "\n";
    problem = "line 2: missing snapshot";
    sound = {};
  }
  SECTION("the snapshot without its newline (only a change can be torn)") {
    damaged = lines[0] + "\n" + lines[1];
    problem = "line 2: truncated (no newline)";
    sound = {"uid-a"};
  }
  SECTION("half a snapshot (only a change can be torn)") {
    damaged = lines[0] + "\n" + lines[1].substr(0, lines[1].size() / 2);
    problem = "line 2: checksum mismatch";
    sound = {};
    unreadable = 1;
  }
  SECTION("empty file") {
    problem = "line 1: missing header (empty file)";
    sound = {};
  }

  WriteFile(path, damaged);
  const auto checkpoint = Checkpoint::Open(path);
  REQUIRE(checkpoint.ok());
  const Checkpoint::Salvage& salvage = (*checkpoint)->salvage();
  REQUIRE(salvage.kept_aside.size() == 1);
  const auto& [aside, why] = salvage.kept_aside[0];
  INFO(why);
  CHECK_THAT(why, Catch::StartsWith("checkpoint " + path + ": " + problem));
  CHECK_THAT(aside, Catch::StartsWith(path + ".unreadable-"));
  CHECK(ReadFile(aside) == damaged);  // kept as it was, never deleted
  CHECK(salvage.unreadable_lines == unreadable);
  std::set<std::string> sound_found;
  std::set<std::string> quarantined_found;
  for (const CheckpointEntry& entry : (*checkpoint)->Entries()) {
    (entry.quarantined.empty() ? sound_found : quarantined_found).insert(entry.claim.uid);
  }
  CHECK(sound_found == sound);
  CHECK(quarantined_found == quarantined);
  CHECK(salvage.quarantined.size() == quarantined.size());
  for (const auto& [claim, reason] : salvage.quarantined) CHECK_THAT(reason, Catch::StartsWith("line "));
  // The damaged file stays until the salvage is written; then it is sound.
  CHECK(ReadFile(path) == damaged);
  REQUIRE((*checkpoint)->WriteSalvaged().ok());
  const auto reopened = Checkpoint::Open(path);
  REQUIRE(reopened.ok());
  CHECK((*reopened)->salvage().kept_aside.empty());
  CHECK((*reopened)->Entries() == (*checkpoint)->Entries());
}

TEST_CASE("A start that dies after keeping a damaged file aside leaves it in place, salvaged again by the next") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  WriteValidCheckpoint(path);
  std::vector<std::string> lines = Lines(path);
  lines[1][lines[1].size() / 2] ^= 1;
  const std::string damaged = Join(lines);
  WriteFile(path, damaged);
  // What a start that died before replacing the file leaves: the file,
  // linked aside.
  const std::string earlier = path + ".unreadable-1700000000";
  REQUIRE(::link(path.c_str(), earlier.c_str()) == 0);

  const auto checkpoint = Checkpoint::Open(path);
  REQUIRE(checkpoint.ok());
  REQUIRE((*checkpoint)->salvage().kept_aside.size() == 1);
  CHECK((*checkpoint)->salvage().kept_aside[0].first == earlier);
  std::vector<std::string> names;
  for (const auto& file : std::filesystem::directory_iterator(dir.path())) names.push_back(file.path().filename());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"checkpoint.json", "checkpoint.json.unreadable-1700000000"});
  CHECK(ReadFile(earlier) == damaged);
  CHECK(ReadFile(path) == damaged);
  REQUIRE((*checkpoint)->WriteSalvaged().ok());
  CHECK(ReadFile(path) != damaged);
  CHECK(ReadFile(earlier) == damaged);
}

TEST_CASE("A quarantined entry keeps what could be read of it: its name and the devices it holds") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  WriteValidCheckpoint(path);
  std::vector<std::string> lines = Lines(path);
  json snapshot = Record(lines[1]);
  snapshot["claims"]["uid-a"]["state"] = "Unprepared";
  lines[1] = Sign(snapshot);
  WriteFile(path, Join(lines));
  const auto checkpoint = Checkpoint::Open(path);
  REQUIRE(checkpoint.ok());
  const std::optional<CheckpointEntry> entry = (*checkpoint)->Get("uid-a");
  REQUIRE(entry.has_value());
  CHECK(entry->claim == k8s::ClaimRef{"ns-uid-a", "claim-uid-a", "uid-a"});
  CHECK(entry->state == ClaimState::kPrepareStarted);
  CHECK(entry->devices.empty());
  CHECK(entry->held == std::vector<HeldDevice>{{"pool", "gpu-0"}});
  CHECK(entry->quarantined == R"(line 2: uid-a.state: "Unprepared" is neither "PrepareStarted" nor "Prepared")");
  REQUIRE((*checkpoint)->salvage().quarantined.size() == 1);
  CHECK((*checkpoint)->salvage().quarantined[0].first == entry->claim);
}

TEST_CASE("A bad checksum on a line before the last quarantines the claims that line names and those before it") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  {
    auto checkpoint = MustOpen(path);
    for (int i = 0; i < 6; ++i) {
      REQUIRE(checkpoint->Commit({Set(Entry(absl::StrCat("uid-", i), ClaimState::kPrepared))}).ok());
    }
  }
  std::vector<std::string> lines = Lines(path);
  REQUIRE(lines.size() == 7);
  const size_t pos = lines[3].find("claim-uid-2");
  REQUIRE(pos != std::string::npos);
  lines[3][pos] = 'C';
  std::string damaged = Join(lines);
  SECTION("the last line whole") {}
  SECTION("a torn line after it") { damaged += lines[6].substr(0, 20); }
  WriteFile(path, damaged);

  const auto checkpoint = Checkpoint::Open(path);
  REQUIRE(checkpoint.ok());
  REQUIRE((*checkpoint)->salvage().kept_aside.size() == 1);
  CHECK((*checkpoint)->salvage().kept_aside[0].second == "checkpoint " + path + ": line 4: checksum mismatch");
  CHECK(ReadFile((*checkpoint)->salvage().kept_aside[0].first) == damaged);
  // uid-0 and uid-1, recorded before it, may have been erased or changed by
  // it; uid-3..5, recorded after it, are sound.
  for (int i = 0; i < 6; ++i) {
    const std::optional<CheckpointEntry> entry = (*checkpoint)->Get(absl::StrCat("uid-", i));
    REQUIRE(entry.has_value());
    CHECK(entry->quarantined == (i < 2    ? "line 4: checksum mismatch; it may have changed this claim's record"
                                 : i == 2 ? "line 4: checksum mismatch"
                                          : ""));
  }
  CHECK((*checkpoint)->Get("uid-2")->claim.name == "Claim-uid-2");  // as the damaged line has it
}

TEST_CASE("A torn last line is a commit that never returned: dropped, and the next write replaces the file") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const CheckpointEntry a = Entry("uid-a", ClaimState::kPrepared, {MakeDevice("gpu-0")});
  const CheckpointEntry b = Entry("uid-b", ClaimState::kPrepareStarted);
  {
    auto checkpoint = MustOpen(path);
    REQUIRE(checkpoint->Commit({Set(a)}).ok());
    REQUIRE(checkpoint->Commit({Set(b)}).ok());
  }
  // The record a crashed commit was appending: uid-c prepared, uid-a erased.
  const std::string record = Sign(json{
      {"seq", 3},
      {"set", {{"uid-c", {{"namespace", "ns"}, {"name", "c"}, {"state", "Prepared"}, {"devices", json::array()}}}}},
      {"erase", {"uid-a"}}});
  std::string tail;
  SECTION("half a record") { tail = record.substr(0, record.size() / 2); }
  SECTION("a whole record without its newline") { tail = record; }
  SECTION("a record with its newline but a wrong checksum (garbage from a crash)") {
    tail = record;
    tail[tail.size() - 5] ^= 0x20;
    tail += "\n";
  }
  SECTION("zeroes") { tail = std::string(40, '\0'); }
  AppendToFile(path, tail);
  const std::string torn = ReadFile(path);
  const ino_t inode = Inode(path);

  auto checkpoint = MustOpen(path);
  CHECK(checkpoint->Entries() == std::vector<CheckpointEntry>{a, b});
  CHECK(ReadFile(path) == torn);  // Open never writes

  const CheckpointEntry d = Entry("uid-d", ClaimState::kPrepareStarted);
  REQUIRE(checkpoint->Commit({Set(d)}).ok());
  CHECK(checkpoint->writes() == 1);
  CHECK(Inode(path) != inode);  // replaced, not appended after the garbage
  CHECK(Lines(path).size() == 2);
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{a, b, d});

  // Appends follow again.
  REQUIRE(checkpoint->Commit({Erase("uid-b")}).ok());
  CHECK(Lines(path).size() == 3);
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{a, d});
}

TEST_CASE("Concurrent commits share appends and are all durable when they return") {
  constexpr int kThreads = 16;
  constexpr int kCommitsPerThread = 8;
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);

  std::latch start(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kCommitsPerThread; ++i) {
        const std::string uid = absl::StrCat("uid-", t, "-", i);
        if (!checkpoint->Commit({Set(Entry(uid, ClaimState::kPrepared))}).ok()) ++failures;
        // Durable on return: a fresh reader of the file already sees it.
        auto reader = Checkpoint::Open(path);
        if (!reader.ok() || !(*reader)->Get(uid).has_value()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();

  constexpr uint64_t kCommits = kThreads * kCommitsPerThread;
  const uint64_t writes = checkpoint->writes();
  INFO("group commit: " << kCommits << " commits took " << writes << " writes");
  CHECK(failures == 0);
  CHECK(writes >= 1);
  CHECK(writes < kCommits);
  // One line per write (the first, creating the file, wrote two): some lines
  // carry several commits.
  const std::vector<std::string> lines = Lines(path);
  CHECK(lines.size() == writes + 1);
  size_t shared = 0;
  for (size_t i = 2; i < lines.size(); ++i) shared += Record(lines[i])["set"].size() > 1 ? 1 : 0;
  CHECK(shared > 0);

  auto reopened = MustOpen(path);
  CHECK(reopened->Entries().size() == kCommits);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kCommitsPerThread; ++i) CHECK(reopened->Get(absl::StrCat("uid-", t, "-", i)).has_value());
  }
  CHECK(FileNames(dir.path()) == std::set<std::string>{"checkpoint.json"});
}

TEST_CASE("Each serialized commit is exactly one durable write, compaction included") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);
  int compactions = 0;
  size_t lines = 0;
  for (int i = 0; i < 200; ++i) {
    // A prepare: started, then prepared; an unprepare now and then.
    const std::string uid = absl::StrCat("uid-", i % 5);
    const uint64_t before = checkpoint->writes();
    REQUIRE(checkpoint->Commit({Set(Entry(uid, ClaimState::kPrepareStarted))}).ok());
    CHECK(checkpoint->writes() == before + 1);
    REQUIRE(checkpoint->Commit({Set(Entry(uid, ClaimState::kPrepared, {MakeDevice("gpu")}))}).ok());
    CHECK(checkpoint->writes() == before + 2);
    if (i % 7 == 6) {
      REQUIRE(checkpoint->Commit({Erase(uid)}).ok());
      CHECK(checkpoint->writes() == before + 3);
    }
    const size_t now = Lines(path).size();
    if (now < lines) ++compactions;
    lines = now;
  }
  CHECK(compactions >= 5);
}

TEST_CASE("Compaction replaces a long log with a snapshot and keeps every entry") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);
  std::vector<CheckpointChange> fill;
  for (int i = 0; i < 10; ++i) fill.push_back(Set(Entry(absl::StrCat("uid-", i), ClaimState::kPrepared)));
  REQUIRE(checkpoint->Commit(std::move(fill)).ok());
  const ino_t created = Inode(path);

  // 10 entries: up to max(64, 4 x 10) = 64 change records.
  for (int i = 1; i <= 64; ++i) {
    const ClaimState state = i % 2 ? ClaimState::kPrepareStarted : ClaimState::kPrepared;
    REQUIRE(checkpoint->Commit({Set(Entry("uid-0", state, {MakeDevice(absl::StrCat("v", i))}))}).ok());
  }
  CHECK(Lines(path).size() == 2 + 64);
  CHECK(Inode(path) == created);

  REQUIRE(checkpoint->Commit({Set(Entry("uid-0", ClaimState::kPrepared, {MakeDevice("v65")}))}).ok());
  const std::vector<std::string> lines = Lines(path);
  REQUIRE(lines.size() == 2);
  CHECK(Inode(path) != created);
  CHECK(Record(lines[1])["seq"] == 66);
  CHECK(checkpoint->writes() == 66);
  CHECK(MustOpen(path)->Entries() == checkpoint->Entries());
  CHECK(checkpoint->Get("uid-0")->devices.at(0).device_name == "v65");
  CHECK(checkpoint->Entries().size() == 10);
  CHECK(FileNames(dir.path()) == std::set<std::string>{"checkpoint.json"});

  // More entries allow a longer log: 20 entries, 80 records.
  fill.clear();
  for (int i = 10; i < 20; ++i) fill.push_back(Set(Entry(absl::StrCat("uid-", i), ClaimState::kPrepared)));
  REQUIRE(checkpoint->Commit(std::move(fill)).ok());
  for (int i = 0; i < 79; ++i) REQUIRE(checkpoint->Commit({Erase("uid-none")}).ok());
  CHECK(Lines(path).size() == 2 + 80);
  REQUIRE(checkpoint->Commit({Erase("uid-none")}).ok());
  CHECK(Lines(path).size() == 2);
  CHECK(MustOpen(path)->Entries() == checkpoint->Entries());
}

TEST_CASE("A file loaded with more change records than allowed is compacted by the next commit") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const CheckpointEntry a = Entry("uid-a", ClaimState::kPrepared);
  std::string content = Sign(json{{"version", 2}}) + "\n" + Sign(json{{"seq", 10}, {"claims", json::object()}}) + "\n";
  for (int i = 0; i < 100; ++i) {
    content += Sign(json{{"seq", 11 + i}, {"set", json::object()}, {"erase", {"uid-x"}}}) + "\n";
  }
  WriteFile(path, content);
  auto checkpoint = MustOpen(path);
  CHECK(ReadFile(path) == content);
  REQUIRE(checkpoint->Commit({Set(a)}).ok());
  const std::vector<std::string> lines = Lines(path);
  REQUIRE(lines.size() == 2);
  CHECK(Record(lines[1])["seq"] == 111);
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{a});
}

TEST_CASE("A reopen after many commits equals the state in memory") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);
  std::mt19937 random(42);
  for (int commit = 1; commit <= 1000; ++commit) {
    std::vector<CheckpointChange> changes;
    const int count = 1 + static_cast<int>(random() % 3);
    for (int c = 0; c < count; ++c) {
      const std::string uid = absl::StrCat("uid-", random() % 30);
      switch (random() % 3) {
        case 0:
          changes.push_back(Erase(uid));
          break;
        case 1:
          changes.push_back(Set(Entry(uid, ClaimState::kPrepareStarted)));
          break;
        default:
          changes.push_back(
              Set(Entry(uid, ClaimState::kPrepared, {MakeDevice(absl::StrCat("d", commit)), MakeDevice("e")})));
      }
    }
    REQUIRE(checkpoint->Commit(std::move(changes)).ok());
    if (commit % 97 == 0) REQUIRE(MustOpen(path)->Entries() == checkpoint->Entries());
  }
  CHECK(checkpoint->writes() == 1000);
  CHECK(MustOpen(path)->Entries() == checkpoint->Entries());
}

TEST_CASE("A failed checkpoint write is reported and retried by the next commit") {
  TempDir dir;
  const std::string state_dir = dir.Join("state");
  const std::string path = state_dir + "/checkpoint.json";
  std::filesystem::create_directory(state_dir);
  auto checkpoint = MustOpen(path);
  std::filesystem::remove(state_dir);

  const CheckpointEntry a = Entry("uid-a", ClaimState::kPrepareStarted);
  const absl::Status failed = checkpoint->Commit({Set(a)});
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(std::string(failed.message()), Catch::Contains(state_dir) && Catch::Contains("No such file or directory"));
  CHECK(checkpoint->writes() == 0);
  CHECK(checkpoint->Get("uid-a") == a);  // kept in memory for the next commit

  std::filesystem::create_directory(state_dir);
  const CheckpointEntry b = Entry("uid-b", ClaimState::kPrepared);
  REQUIRE(checkpoint->Commit({Set(b)}).ok());
  CHECK(checkpoint->writes() == 1);
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{a, b});
}

TEST_CASE("A short append is not followed: the next commit replaces the file") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);
  const CheckpointEntry a = Entry("uid-a", ClaimState::kPrepared);
  const CheckpointEntry b = Entry("uid-b", ClaimState::kPrepareStarted, {MakeDevice("gpu-0")});
  const CheckpointEntry c = Entry("uid-c", ClaimState::kPrepared);
  REQUIRE(checkpoint->Commit({Set(a)}).ok());
  REQUIRE(checkpoint->Commit({Erase("uid-x")}).ok());
  const std::string before = ReadFile(path);
  const ino_t inode = Inode(path);

  // The file may grow by 10 bytes only: the append writes part of its line.
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = before.size() + 10;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
  const absl::Status failed = checkpoint->Commit({Set(b)});
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &saved) == 0);
  std::signal(SIGXFSZ, old_handler);

  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(std::string(failed.message()), Catch::Contains("write " + path));
  CHECK(checkpoint->writes() == 2);
  CHECK(checkpoint->Get("uid-b") == b);
  const std::string torn = ReadFile(path);
  CHECK(torn.size() == before.size() + 10);
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{a});  // the torn line is dropped

  REQUIRE(checkpoint->Commit({Set(c)}).ok());
  CHECK(checkpoint->writes() == 3);
  CHECK(Inode(path) != inode);
  CHECK(Lines(path).size() == 2);
  CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{a, b, c});
}

TEST_CASE("Reload picks up what another instance wrote") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto mine = MustOpen(path);
  auto theirs = MustOpen(path);
  const CheckpointEntry a = Entry("uid-a", ClaimState::kPrepared, {MakeDevice("gpu-0")});
  const CheckpointEntry b = Entry("uid-b", ClaimState::kPrepareStarted);

  REQUIRE(theirs->Commit({Set(a), Set(b)}).ok());
  CHECK(mine->Entries().empty());
  REQUIRE(mine->Reload().ok());
  CHECK(mine->Entries() == std::vector<CheckpointEntry>{a, b});

  REQUIRE(mine->Commit({Erase("uid-a")}).ok());
  CHECK(Lines(path).size() == 3);  // appended to their file
  REQUIRE(theirs->Reload().ok());
  CHECK(theirs->Entries() == std::vector<CheckpointEntry>{b});
  REQUIRE(theirs->Commit({Set(a)}).ok());
  CHECK(Lines(path).size() == 4);
  REQUIRE(mine->Reload().ok());
  CHECK(mine->Entries() == std::vector<CheckpointEntry>{a, b});

  SECTION("a damaged file is an error and the entries in memory stay") {
    WriteFile(path, "{");
    const absl::Status status = mine->Reload();
    CHECK(absl::IsDataLoss(status));
    CHECK_THAT(std::string(status.message()),
               Catch::StartsWith("checkpoint " + path + ": line 1: not a checksummed record"));
    CHECK(mine->Entries() == std::vector<CheckpointEntry>{a, b});
    CHECK(ReadFile(path) == "{");
  }
  SECTION("a removed file means no entries, and the next commit creates it") {
    std::filesystem::remove(path);
    REQUIRE(mine->Reload().ok());
    CHECK(mine->Entries().empty());
    REQUIRE(mine->Commit({Set(b)}).ok());
    CHECK(Lines(path).size() == 2);
    CHECK(MustOpen(path)->Entries() == std::vector<CheckpointEntry>{b});
  }
}

TEST_CASE("Reload after the other instance compacted appends to the new file") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto mine = MustOpen(path);
  auto theirs = MustOpen(path);
  REQUIRE(theirs->Commit({Set(Entry("uid-a", ClaimState::kPrepared))}).ok());
  REQUIRE(mine->Reload().ok());
  const ino_t first = Inode(path);

  // They compact (and append a little after that).
  for (int i = 0; i < 70; ++i) {
    REQUIRE(theirs->Commit({Set(Entry("uid-t", ClaimState::kPrepared, {MakeDevice(absl::StrCat("v", i))}))}).ok());
  }
  const ino_t second = Inode(path);
  REQUIRE(second != first);
  const size_t lines = Lines(path).size();
  REQUIRE(lines > 2);

  REQUIRE(mine->Reload().ok());
  CHECK(mine->Entries() == theirs->Entries());
  const CheckpointEntry c = Entry("uid-c", ClaimState::kPrepareStarted);
  REQUIRE(mine->Commit({Set(c)}).ok());
  CHECK(Inode(path) == second);  // appended to their new file, not replaced
  CHECK(Lines(path).size() == lines + 1);
  CHECK(MustOpen(path)->Get("uid-c") == c);
  CHECK(MustOpen(path)->Entries() == mine->Entries());
  REQUIRE(theirs->Reload().ok());
  CHECK(theirs->Entries() == mine->Entries());
}

TEST_CASE("Reload during concurrent commits loses none of them") {
  constexpr int kThreads = 8;
  constexpr int kCommitsPerThread = 8;
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);

  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::thread reloader([&] {
    while (!done) {
      if (!checkpoint->Reload().ok()) ++failures;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCommitsPerThread; ++i) {
        const std::string uid = absl::StrCat("uid-", t, "-", i);
        if (!checkpoint->Commit({Set(Entry(uid, ClaimState::kPrepared))}).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  done = true;
  reloader.join();

  CHECK(failures == 0);
  CHECK(checkpoint->Entries().size() == kThreads * kCommitsPerThread);
  CHECK(MustOpen(path)->Entries().size() == kThreads * kCommitsPerThread);
}

TEST_CASE("Readers never see a partially written checkpoint") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);
  REQUIRE(checkpoint->Commit({Set(Entry("uid-0", ClaimState::kPrepareStarted))}).ok());

  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> bad_reads{0};
  std::thread reader([&] {
    while (!done) {
      // Open verifies every line's checksum.
      if (!Checkpoint::Open(path).ok()) ++bad_reads;
      ++reads;
    }
  });

  // Records grow with every write so a torn read could not go unnoticed;
  // compactions happen along the way.
  std::vector<Device> devices;
  for (int i = 0; i < 100; ++i) {
    for (int d = 0; d < 3; ++d) devices.push_back(MakeDevice(absl::StrCat("device-", i, "-", d)));
    REQUIRE(checkpoint->Commit({Set(Entry("uid-0", ClaimState::kPrepared, devices))}).ok());
  }
  done = true;
  reader.join();

  INFO("reads: " << reads);
  CHECK(reads > 0);
  CHECK(bad_reads == 0);
  CHECK(MustOpen(path)->Get("uid-0")->devices.size() == 300);
}

TEST_CASE("Readers never see half of a commit, alone or grouped") {
  constexpr int kWriters = 3;
  constexpr int kCommits = 150;
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  auto checkpoint = MustOpen(path);
  REQUIRE(checkpoint->Commit({Erase("uid-none")}).ok());

  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> bad_reads{0};
  std::thread reader([&] {
    while (!done) {
      auto snapshot = Checkpoint::Open(path);
      ++reads;
      if (!snapshot.ok()) {
        ++bad_reads;
        continue;
      }
      // Each commit sets (or erases) a writer's two claims together.
      for (int w = 0; w < kWriters; ++w) {
        const auto a = (*snapshot)->Get(absl::StrCat("w", w, "-a"));
        const auto b = (*snapshot)->Get(absl::StrCat("w", w, "-b"));
        if (a.has_value() != b.has_value() || (a && a->devices.at(0).device_name != b->devices.at(0).device_name)) {
          ++bad_reads;
        }
      }
    }
  });
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      const std::string a = absl::StrCat("w", w, "-a");
      const std::string b = absl::StrCat("w", w, "-b");
      for (int i = 0; i < kCommits; ++i) {
        std::vector<CheckpointChange> changes;
        if (i % 10 == 9) {
          changes = {Erase(a), Erase(b)};
        } else {
          const Device device = MakeDevice(absl::StrCat("v", i));
          changes = {Set(Entry(a, ClaimState::kPrepared, {device})), Set(Entry(b, ClaimState::kPrepared, {device}))};
        }
        if (!checkpoint->Commit(std::move(changes)).ok()) ++failures;
      }
    });
  }
  for (auto& writer : writers) writer.join();
  done = true;
  reader.join();

  INFO("reads: " << reads << ", writes: " << checkpoint->writes());
  CHECK(failures == 0);
  CHECK(reads > 0);
  CHECK(bad_reads == 0);
  CHECK(MustOpen(path)->Entries() == checkpoint->Entries());
}

TEST_CASE("WriteFileAtomically replaces the file and leaves no temp files") {
  TempDir dir;
  const std::string path = dir.Join("file");

  REQUIRE(WriteFileAtomically(path, "first").ok());
  REQUIRE(WriteFileAtomically(path, "second", 0644).ok());
  CHECK(ReadFile(path) == "second");
  CHECK(Mode(path) == 0644);
  CHECK(FileNames(dir.path()) == std::set<std::string>{"file"});

  SECTION("failure after the temp file was written: the target is a directory") {
    const std::string target = dir.Join("target");
    std::filesystem::create_directory(target);
    const absl::Status status = WriteFileAtomically(target, "content");
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(std::string(status.message()), Catch::StartsWith("rename ") && Catch::Contains(target));
    CHECK(FileNames(dir.path()) == std::set<std::string>{"file", "target"});
  }
  SECTION("failure creating the temp file: the directory is missing") {
    const absl::Status status = WriteFileAtomically(dir.Join("missing/file"), "content");
    CHECK(absl::IsNotFound(status));
    CHECK_THAT(std::string(status.message()), Catch::StartsWith("mkstemp " + dir.Join("missing/.file.tmp-")));
    CHECK(FileNames(dir.path()) == std::set<std::string>{"file"});
  }
}

TEST_CASE("ReadWholeFile") {
  TempDir dir;
  const std::string big(200 * 1024, 'x');
  WriteFile(dir.Join("big"), big);
  const auto content = ReadWholeFile(dir.Join("big"));
  REQUIRE(content.ok());
  CHECK(*content == big);

  struct stat info {};
  struct stat direct {};
  REQUIRE(ReadWholeFile(dir.Join("big"), &info).ok());
  REQUIRE(::stat(dir.Join("big").c_str(), &direct) == 0);
  CHECK(info.st_ino == direct.st_ino);
  CHECK(info.st_size == static_cast<off_t>(big.size()));

  const auto missing = ReadWholeFile(dir.Join("missing"));
  CHECK(absl::IsNotFound(missing.status()));
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains(dir.Join("missing")));
}

// Another driver's checkpoint: a plain JSON object with the prepared claims'
// UIDs, as dra-example-driver keeps it.
constexpr char kForeign[] = R"({"kind": "Checkpoint", "preparedClaims": [{"uid": "uid-a"}, {"uid": "uid-b"}]})";

Checkpoint::Adopter AdoptForeign(std::vector<std::string>* seen) {
  return [seen](const std::string& content) -> absl::StatusOr<std::vector<k8s::ClaimRef>> {
    seen->push_back(content);
    const json foreign = json::parse(content, nullptr, /*allow_exceptions=*/false);
    if (!foreign.is_object() || foreign.value("kind", "") != "Checkpoint") {
      return absl::InvalidArgumentError("not the other driver's checkpoint");
    }
    std::vector<k8s::ClaimRef> claims;
    for (const json& claim : foreign["preparedClaims"]) {
      const std::string uid = claim["uid"];
      claims.push_back({.namespace_ = "ns-" + uid, .name = "claim-" + uid, .uid = uid});
    }
    return claims;
  };
}

TEST_CASE("Checkpoint adopts another driver's file: its claims as started, the file replaced by this format") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  WriteFile(path, kForeign);
  std::vector<std::string> seen;
  {
    absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path, AdoptForeign(&seen));
    REQUIRE(checkpoint.ok());
    CHECK(seen == std::vector<std::string>{kForeign});
    CHECK((*checkpoint)->Entries() == std::vector<CheckpointEntry>{Entry("uid-a", ClaimState::kPrepareStarted),
                                                                   Entry("uid-b", ClaimState::kPrepareStarted)});
    CHECK(Mode(path) == 0600);
  }
  // Converted: this format now, the adopter not asked again.
  auto reopened = MustOpen(path);
  CHECK(reopened->Entries().size() == 2);
  absl::StatusOr<std::unique_ptr<Checkpoint>> again = Checkpoint::Open(path, AdoptForeign(&seen));
  REQUIRE(again.ok());
  CHECK(seen.size() == 1);
  CHECK(FileNames(dir.path()) == std::set<std::string>{"checkpoint.json"});
}

TEST_CASE("Checkpoint adoption: no claims removes the file, a file nobody reads is kept aside") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  std::vector<std::string> seen;
  SECTION("no claims") {
    WriteFile(path, R"({"kind": "Checkpoint", "preparedClaims": []})");
    absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path, AdoptForeign(&seen));
    REQUIRE(checkpoint.ok());
    CHECK((*checkpoint)->Entries().empty());
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("neither format: kept aside, naming both reasons") {
    WriteFile(path, "garbage");
    absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(path, AdoptForeign(&seen));
    REQUIRE(checkpoint.ok());
    CHECK((*checkpoint)->Entries().empty());
    REQUIRE((*checkpoint)->salvage().kept_aside.size() == 1);
    CHECK_THAT((*checkpoint)->salvage().kept_aside[0].second,
               Catch::EndsWith("; not adopted: not the other driver's checkpoint"));
    CHECK(ReadFile((*checkpoint)->salvage().kept_aside[0].first) == "garbage");
  }
  SECTION("a checkpoint of this format is never offered") {
    WriteValidCheckpoint(path);
    REQUIRE(Checkpoint::Open(path, AdoptForeign(&seen)).ok());
    CHECK(seen.empty());
  }
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
