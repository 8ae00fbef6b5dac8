// A checkpoint kept beside another driver's (Checkpoint::OpenBeside): the
// foreign file follows which claims are recorded, an older release's
// checkpoint found there is taken, and the other driver's changes win.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kubeletplugin/checkpoint.h"
#include "support/temp_dir.h"

namespace dra::kubeletplugin::internal {
namespace {

using dra::testing::ReadFile;
using dra::testing::TempDir;
using dra::testing::WriteFile;

// A foreign format: "claims:" and the UIDs, comma-separated.
std::string Encode(const std::vector<k8s::ClaimRef>& claims) {
  std::vector<std::string> uids;
  for (const k8s::ClaimRef& claim : claims) uids.push_back(claim.uid);
  return absl::StrCat("claims:", absl::StrJoin(uids, ","));
}

absl::StatusOr<std::vector<k8s::ClaimRef>> Read(const std::string& content) {
  if (!absl::StartsWith(content, "claims:")) return absl::InvalidArgumentError("not a foreign checkpoint");
  std::vector<k8s::ClaimRef> claims;
  for (absl::string_view uid : absl::StrSplit(content.substr(7), ',', absl::SkipEmpty())) {
    claims.push_back({"ns", absl::StrCat("claim-", uid), std::string(uid)});
  }
  return claims;
}

struct Files {
  TempDir dir;
  const std::string own = dir.Join("dra-cpp-checkpoint");
  const std::string foreign = dir.Join("checkpoint.json");

  absl::StatusOr<std::unique_ptr<Checkpoint>> Open() const {
    return Checkpoint::OpenBeside(own, {foreign, Read, Encode});
  }
};

CheckpointEntry Prepared(const std::string& uid) {
  return CheckpointEntry{{"ns", "claim-" + uid, uid}, ClaimState::kPrepared, {}};
}

std::vector<std::string> Uids(const Checkpoint& checkpoint) {
  std::vector<std::string> uids;
  for (const CheckpointEntry& entry : checkpoint.Entries()) uids.push_back(entry.claim.uid);
  return uids;
}

TEST_CASE("the foreign file lists every recorded claim, written with each change of which are", "[checkpoint]") {
  Files files;
  auto checkpoint = files.Open();
  REQUIRE(checkpoint.ok());
  CHECK(ReadFile(files.foreign) == "claims:");
  REQUIRE(
      (*checkpoint)->Commit({{"a", CheckpointEntry{{"ns", "claim-a", "a"}, ClaimState::kPrepareStarted, {}}}}).ok());
  CHECK(ReadFile(files.foreign) == "claims:a");
  REQUIRE((*checkpoint)->Commit({{"b", Prepared("b")}}).ok());
  CHECK(ReadFile(files.foreign) == "claims:a,b");
  // A state change of a recorded claim leaves the foreign file alone.
  WriteFile(files.foreign, "untouched");
  REQUIRE((*checkpoint)->Commit({{"a", Prepared("a")}}).ok());
  CHECK(ReadFile(files.foreign) == "untouched");
  REQUIRE((*checkpoint)->Commit({{"a", std::nullopt}}).ok());
  CHECK(ReadFile(files.foreign) == "claims:b");

  // Reopened: this driver's own file has the entries, in step with the other.
  checkpoint->reset();
  auto reopened = files.Open();
  REQUIRE(reopened.ok());
  CHECK((*reopened)->Get("b") == Prepared("b"));
  CHECK(ReadFile(files.foreign) == "claims:b");
}

TEST_CASE(
    "changed by the other driver since (a rollback and back): its claims are the node's, recorded ones keep "
    "what they had",
    "[checkpoint]") {
  Files files;
  {
    auto checkpoint = files.Open();
    REQUIRE(checkpoint.ok());
    REQUIRE((*checkpoint)->Commit({{"a", Prepared("a")}, {"b", Prepared("b")}}).ok());
  }
  // The other driver unprepared "a" and prepared "c".
  WriteFile(files.foreign, "claims:b,c");
  auto checkpoint = files.Open();
  REQUIRE(checkpoint.ok());
  CHECK(Uids(**checkpoint) == std::vector<std::string>{"b", "c"});
  CHECK((*checkpoint)->Get("b") == Prepared("b"));
  CHECK((*checkpoint)->Get("c") == CheckpointEntry{{"ns", "claim-c", "c"}, ClaimState::kPrepareStarted, {}});
  CHECK(ReadFile(files.foreign) == "claims:b,c");

  // Not readable as the other driver's: kept aside, this driver's records stand.
  checkpoint->reset();
  WriteFile(files.foreign, "garbage");
  auto kept = files.Open();
  REQUIRE(kept.ok());
  CHECK(Uids(**kept) == std::vector<std::string>{"b", "c"});
  REQUIRE((*kept)->salvage().kept_aside.size() == 1);
  CHECK((*kept)->salvage().kept_aside[0].second ==
        "changed by another driver since this one wrote it, and not readable: not a foreign checkpoint");
  CHECK(ReadFile((*kept)->salvage().kept_aside[0].first) == "garbage");
  CHECK(ReadFile(files.foreign) == "claims:b,c");
}

TEST_CASE("a checkpoint of this format where the foreign one goes (an older release ran since) is taken as this one",
          "[checkpoint]") {
  Files files;
  {
    auto older = Checkpoint::Open(files.foreign);
    REQUIRE(older.ok());
    REQUIRE((*older)->Commit({{"x", Prepared("x")}}).ok());
  }
  WriteFile(files.own, "what this release wrote before the downgrade");
  auto checkpoint = files.Open();
  REQUIRE(checkpoint.ok());
  CHECK(Uids(**checkpoint) == std::vector<std::string>{"x"});
  CHECK((*checkpoint)->Get("x") == Prepared("x"));
  CHECK(ReadFile(files.foreign) == "claims:x");
  auto own = Checkpoint::Open(files.own);
  REQUIRE(own.ok());
  CHECK(Uids(**own) == std::vector<std::string>{"x"});
}

TEST_CASE("a foreign file that cannot be written fails the commit, and is written with the next one", "[checkpoint]") {
  Files files;
  auto checkpoint = files.Open();
  REQUIRE(checkpoint.ok());
  // A directory where the file goes: the rename over it fails.
  std::filesystem::remove(files.foreign);
  std::filesystem::create_directory(files.foreign);
  WriteFile(files.foreign + "/keep", "");
  absl::Status failed = (*checkpoint)->Commit({{"a", Prepared("a")}});
  CHECK_FALSE(failed.ok());
  CHECK_THAT(std::string(failed.message()), Catch::StartsWith(absl::StrCat("write ", files.foreign, ": ")));
  CHECK((*checkpoint)->Get("a") == Prepared("a"));
  std::filesystem::remove_all(files.foreign);
  REQUIRE((*checkpoint)->Commit({{"a", Prepared("a")}}).ok());
  CHECK(ReadFile(files.foreign) == "claims:a");
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
