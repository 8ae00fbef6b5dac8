#include "kubeletplugin/checkpoint.h"

#include <atomic>
#include <filesystem>
#include <latch>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <openssl/sha.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kubeletplugin/atomic_file.h"
#include "support/temp_dir.h"

namespace dra::kubeletplugin::internal {
namespace {

using dra::internal::ReadWholeFile;
using dra::internal::WriteFileAtomically;
using dra::testing::ReadFile;
using dra::testing::TempDir;
using dra::testing::WriteFile;

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

// Re-signs edited data the way the checkpoint does, so that decoding gets past the checksum.
std::string Resign(nlohmann::json file) {
  const std::string data = file["data"].dump();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  file["checksum"] = absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
  return file.dump();
}

// Writes a valid checkpoint holding one prepared claim and returns its bytes.
std::string WriteValidCheckpoint(const std::string& path) {
  auto checkpoint = MustOpen(path);
  REQUIRE(checkpoint->Commit({Set(Entry("uid-a", ClaimState::kPrepared, {MakeDevice("gpu-0")}))}).ok());
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

TEST_CASE("Checkpoint commits survive a reopen") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const CheckpointEntry started = Entry("uid-a", ClaimState::kPrepareStarted);
  const CheckpointEntry prepared = Entry(
      "uid-b", ClaimState::kPrepared,
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

  auto checkpoint = MustOpen(path);
  REQUIRE(checkpoint->Commit({Set(started), Set(prepared), Set(doomed)}).ok());
  REQUIRE(checkpoint->Commit({Erase("uid-c"), Erase("uid-never-there")}).ok());
  CHECK(checkpoint->writes() == 2);
  CHECK(checkpoint->Entries() == std::vector<CheckpointEntry>{started, prepared});

  auto reopened = MustOpen(path);
  CHECK(reopened->Entries() == std::vector<CheckpointEntry>{started, prepared});
  CHECK(reopened->Get("uid-b") == prepared);
  CHECK_FALSE(reopened->Get("uid-c").has_value());
  CHECK(reopened->writes() == 0);

  SECTION("the file has the documented format") {
    const auto file = nlohmann::json::parse(ReadFile(path));
    CHECK(file["version"] == 1);
    CHECK(file["checksum"].get<std::string>().size() == 64);
    const auto& devices = file["data"]["claims"]["uid-b"]["devices"];
    CHECK(file["data"]["claims"]["uid-a"]["state"] == "PrepareStarted");
    CHECK(file["data"]["claims"]["uid-b"]["state"] == "Prepared");
    CHECK(devices[0]["shareID"] == "0a1b2c3d-share");
    CHECK(devices[0]["cdiDeviceIDs"][1] == "example.com/gpu=common");
    CHECK_FALSE(devices[1].contains("shareID"));
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

TEST_CASE("Checkpoint file has mode 0600") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  WriteValidCheckpoint(path);
  CHECK(Mode(path) == 0600);
}

TEST_CASE("Checkpoint refuses a damaged file and leaves it in place") {
  TempDir dir;
  const std::string path = dir.Join("checkpoint.json");
  const std::string valid = WriteValidCheckpoint(path);
  std::string damaged;
  absl::StatusCode code = absl::StatusCode::kDataLoss;
  std::string problem;

  SECTION("not JSON") {
    damaged = valid.substr(0, valid.size() / 2);
    problem = "not valid JSON";
  }
  SECTION("a byte inside data changed") {
    damaged = valid;
    const size_t pos = damaged.find("gpu-0");
    REQUIRE(pos != std::string::npos);
    damaged[pos + 4] = '1';
    problem = "checksum mismatch: file was modified or corrupted";
  }
  SECTION("unknown version") {
    auto file = nlohmann::json::parse(valid);
    file["version"] = 2;
    damaged = file.dump();
    code = absl::StatusCode::kFailedPrecondition;
    problem = "unsupported version 2";
  }
  SECTION("no checksum") {
    auto file = nlohmann::json::parse(valid);
    file.erase("checksum");
    damaged = file.dump();
    problem = "checksum: missing or not a string";
  }
  SECTION("a claim without state, correctly checksummed") {
    auto file = nlohmann::json::parse(valid);
    file["data"]["claims"]["uid-a"].erase("state");
    damaged = Resign(file);
    problem = "data.claims.uid-a.state: missing or not a string";
  }
  SECTION("an unknown state, correctly checksummed") {
    auto file = nlohmann::json::parse(valid);
    file["data"]["claims"]["uid-a"]["state"] = "Unprepared";
    damaged = Resign(file);
    problem = R"(data.claims.uid-a.state: "Unprepared" is neither "PrepareStarted" nor "Prepared")";
  }
  SECTION("a device field of the wrong type, correctly checksummed") {
    auto file = nlohmann::json::parse(valid);
    file["data"]["claims"]["uid-a"]["devices"][0]["cdiDeviceIDs"][0] = 7;
    damaged = Resign(file);
    problem = "data.claims.uid-a.devices[0].cdiDeviceIDs[0]: not a string";
  }
  SECTION("empty file") {
    problem = "not valid JSON";
  }

  WriteFile(path, damaged);
  const auto checkpoint = Checkpoint::Open(path);
  REQUIRE_FALSE(checkpoint.ok());
  const std::string message(checkpoint.status().message());
  INFO(message);
  CHECK(checkpoint.status().code() == code);
  CHECK_THAT(message, Catch::StartsWith("checkpoint " + path + ": "));
  CHECK_THAT(message, Catch::Contains(problem));
  CHECK_THAT(message, Catch::EndsWith("move it away to start with an empty checkpoint"));
  CHECK(ReadFile(path) == damaged);
  CHECK(FileNames(dir.path()) == std::set<std::string>{"checkpoint.json"});
}

TEST_CASE("Concurrent commits share writes and are all durable when they return") {
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

  auto reopened = MustOpen(path);
  CHECK(reopened->Entries().size() == kCommits);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kCommitsPerThread; ++i) CHECK(reopened->Get(absl::StrCat("uid-", t, "-", i)).has_value());
  }
  CHECK(FileNames(dir.path()) == std::set<std::string>{"checkpoint.json"});
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
  REQUIRE(theirs->Reload().ok());
  CHECK(theirs->Entries() == std::vector<CheckpointEntry>{b});

  SECTION("a damaged file is an error and the entries in memory stay") {
    WriteFile(path, "{");
    const absl::Status status = mine->Reload();
    CHECK(absl::IsDataLoss(status));
    CHECK_THAT(std::string(status.message()), Catch::StartsWith("checkpoint " + path + ": not valid JSON"));
    CHECK(mine->Entries() == std::vector<CheckpointEntry>{b});
    CHECK(ReadFile(path) == "{");
  }
  SECTION("a removed file means no entries") {
    std::filesystem::remove(path);
    REQUIRE(mine->Reload().ok());
    CHECK(mine->Entries().empty());
  }
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
      // Open parses the file and verifies its checksum.
      if (!Checkpoint::Open(path).ok()) ++bad_reads;
      ++reads;
    }
  });

  // The file grows with every write so a torn read could not go unnoticed.
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

  const auto missing = ReadWholeFile(dir.Join("missing"));
  CHECK(absl::IsNotFound(missing.status()));
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains(dir.Join("missing")));
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
