// One unreadable checkpoint entry never stops a driver: the Helper starts
// with what it can read, the claim whose entry it cannot read is
// quarantined, its devices stay refused to other claims until the kubelet
// unprepares it, and the damaged file is kept aside.
#include <algorithm>
#include <filesystem>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/crc32c.h"
#include "nlohmann/json.hpp"
#include "support/helper_dirs.h"
#include "support/http_get.h"
#include "support/kubelet_calls.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletclient::DraClient;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using nlohmann::json;
using testing::AllocatedClaim;
using testing::HttpGet;
using testing::Prepare;
using testing::TestDriver;
using testing::Unprepare;

const k8s::ClaimRef kDamaged{"team-a", "damaged", "00000000-0000-4000-8000-00000000000a"};
const k8s::ClaimRef kSound{"team-a", "sound", "00000000-0000-4000-8000-00000000000c"};
const k8s::ClaimRef kOther{"team-b", "other", "00000000-0000-4000-8000-00000000000b"};

struct Fixture : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();
  Options MakeOptions() const {
    Options options = HelperDirs::MakeOptions(claims);
    options.http_endpoint = "127.0.0.1:0";
    return options;
  }
  std::string CheckpointPath() const { return data + "/checkpoint.json"; }
  std::string SpecPath(const k8s::ClaimRef& ref) const {
    return cdi_dir + "/gpu.example.com-claim_" + ref.uid + ".json";
  }
  // Claims kDamaged (gpu-0), kSound (gpu-1) and kOther (gpu-0, too); the
  // first two prepared by a Helper that has stopped since.
  void PrepareDamagedAndSound(TestDriver& driver) {
    for (const k8s::ClaimRef& ref : {kDamaged, kSound, kOther}) {
      claims->Put(AllocatedClaim(ref.namespace_, ref.name, ref.uid, {ref.uid == kSound.uid ? "gpu-1" : "gpu-0"}));
    }
    auto helper = Start(driver, MakeOptions());
    auto client = DraClient::Create(helper->dra_socket_path());
    REQUIRE(Prepare(*client, kDamaged).empty());
    REQUIRE(Prepare(*client, kSound).empty());
  }
};

// Gives the claim's entries in the checkpoint a state no release writes,
// each line correctly checksummed again: a record that verifies but does
// not decode.
void DamageEntry(const std::string& path, const std::string& uid) {
  std::string rewritten;
  for (absl::string_view line : absl::StrSplit(testing::ReadFile(path), '\n', absl::SkipEmpty())) {
    json record = json::parse(line.substr(9));
    for (const char* key : {"claims", "set"}) {
      if (record.contains(key) && record[key].contains(uid)) record[key][uid]["state"] = "Bogus";
    }
    const std::string text = record.dump();
    absl::StrAppend(&rewritten, absl::StrFormat("%08x ", kubeletplugin::internal::Crc32c(text)), text, "\n");
  }
  testing::WriteFile(path, rewritten);
}

TEST_CASE(
    "an entry that does not decode is quarantined: start-up goes on, its devices stay refused until the "
    "kubelet unprepares its claim, the file is kept aside",
    "[quarantine]") {
  Fixture f;
  TestDriver driver;
  f.PrepareDamagedAndSound(driver);
  const std::string path = f.CheckpointPath();
  DamageEntry(path, kDamaged.uid);

  auto helper = Fixture::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());
  CHECK_THAT(HttpGet(helper->http_port(), "/metrics").second,
             Catch::Contains("dra_checkpoint_quarantined_claims_total 1\n"));
  int aside = 0;
  for (const auto& file : std::filesystem::directory_iterator(f.data)) {
    aside += file.path().filename().string().starts_with("checkpoint.json.unreadable-");
  }
  CHECK(aside == 1);
  // The sound claim is answered from the checkpoint, as before.
  CHECK(Prepare(*client, kSound).empty());
  CHECK(driver.prepare_calls() == 2);
  // The quarantined claim's GPU is not given to another claim.
  CHECK_THAT(Prepare(*client, kOther), Catch::StartsWith("device pool-a/gpu-0 is in use by claim team-a/damaged"));

  SECTION("the kubelet unprepares it: the device is free") {
    REQUIRE(Unprepare(*client, kDamaged).empty());
    CHECK(driver.unprepared_uids() == std::vector<std::string>{kDamaged.uid});
    CHECK(Prepare(*client, kOther).empty());
  }
  SECTION("the kubelet prepares it again: the driver prepares it, and it is sound") {
    CHECK(Prepare(*client, kDamaged).empty());
    CHECK(driver.prepare_calls() == 3);
    auto checkpoint = kubeletplugin::internal::Checkpoint::Open(path);
    REQUIRE(checkpoint.ok());
    REQUIRE((*checkpoint)->Get(kDamaged.uid).has_value());
    CHECK((*checkpoint)->Get(kDamaged.uid)->quarantined.empty());
  }
}

TEST_CASE("a claim whose CDI spec cannot be restored at start is quarantined, the others are repaired",
          "[quarantine]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.PrepareDamagedAndSound(driver);
  // A directory where the damaged claim's spec goes, and the sound one's
  // spec emptied: neither is what the checkpoint has.
  const std::string damaged_spec = f.SpecPath(kDamaged);
  const std::string sound_spec = f.SpecPath(kSound);
  const std::string sound_content = testing::ReadFile(sound_spec);
  std::filesystem::remove(damaged_spec);
  std::filesystem::create_directories(damaged_spec + "/in-the-way");
  testing::WriteFile(sound_spec, "");

  auto helper = Fixture::Start(driver, f.MakeOptions());
  CHECK(testing::ReadFile(sound_spec) == sound_content);
  CHECK_THAT(HttpGet(helper->http_port(), "/metrics").second,
             Catch::Contains("dra_checkpoint_quarantined_claims_total 1\n"));
  auto checkpoint = kubeletplugin::internal::Checkpoint::Open(f.CheckpointPath());
  REQUIRE(checkpoint.ok());
  const std::optional<kubeletplugin::internal::CheckpointEntry> entry = (*checkpoint)->Get(kDamaged.uid);
  REQUIRE(entry.has_value());
  CHECK(entry->state == kubeletplugin::internal::ClaimState::kPrepareStarted);
  CHECK_THAT(entry->quarantined, Catch::StartsWith("repair its CDI spec: "));
  CHECK((*checkpoint)->Get(kSound.uid)->quarantined.empty());

  // Once the way is clear, the kubelet's prepare prepares it again.
  std::filesystem::remove_all(damaged_spec);
  auto client = DraClient::Create(helper->dra_socket_path());
  CHECK(Prepare(*client, kDamaged).empty());
  CHECK(driver.prepare_calls() == 3);
  CHECK(std::filesystem::exists(damaged_spec));
}

TEST_CASE("records that cannot be read at all: a claim whose CDI spec is on the node holds the devices it names",
          "[quarantine]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.PrepareDamagedAndSound(driver);
  // Every line that names the damaged claim becomes noise.
  const std::string path = f.CheckpointPath();
  std::string damaged;
  for (absl::string_view line : absl::StrSplit(testing::ReadFile(path), '\n', absl::SkipEmpty())) {
    absl::StrAppend(&damaged, absl::StrContains(line, kDamaged.uid) ? "garbage" : line, "\n");
  }
  testing::WriteFile(path, damaged);
  const std::string spec = f.SpecPath(kDamaged);

  auto helper = Fixture::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());
  CHECK(std::filesystem::exists(spec));  // not removed as an orphan
  CHECK_THAT(HttpGet(helper->http_port(), "/metrics").second,
             Catch::Contains("dra_checkpoint_quarantined_claims_total 1\n"));
  CHECK(Prepare(*client, kSound).empty());
  CHECK(Prepare(*client, kOther) ==
        "device pool-a/gpu-0 is in use by claim UID 00000000-0000-4000-8000-00000000000a, whose preparation started "
        "on this node: a device without a shareID or adminAccess serves one claim at a time; this claim is prepared "
        "once the kubelet has unprepared that one (after its pod's containers stopped)");
  REQUIRE(Unprepare(*client, kDamaged).empty());
  CHECK_FALSE(std::filesystem::exists(spec));
  CHECK(Prepare(*client, kOther).empty());
}

TEST_CASE("a record whose damage changed a claim's UID: the claim's CDI spec stays and it holds the devices it names",
          "[quarantine]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.PrepareDamagedAndSound(driver);
  // One byte of the damaged claim's UID changed in every line that names
  // it: the lines still parse, their checksums fail, and they name a claim
  // that was never prepared.
  const std::string path = f.CheckpointPath();
  std::string changed_uid = kDamaged.uid;
  changed_uid.back() = 'f';
  testing::WriteFile(path, absl::StrReplaceAll(testing::ReadFile(path), {{kDamaged.uid, changed_uid}}));
  const std::string spec = f.SpecPath(kDamaged);

  auto helper = Fixture::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());
  CHECK(std::filesystem::exists(spec));  // not removed as an orphan
  const std::vector<kubeletplugin::internal::CheckpointEntry> entries =
      (*kubeletplugin::internal::Checkpoint::Open(path))->Entries();
  CHECK(std::any_of(entries.begin(), entries.end(), [](const kubeletplugin::internal::CheckpointEntry& entry) {
    return entry.claim.uid == kDamaged.uid && !entry.quarantined.empty();
  }));
  CHECK_THAT(Prepare(*client, kOther), Catch::Contains("device pool-a/gpu-0 is in use by claim UID"));
  REQUIRE(Unprepare(*client, kDamaged).empty());
  CHECK_FALSE(std::filesystem::exists(spec));
  CHECK(Prepare(*client, kSound).empty());
}

}  // namespace
}  // namespace dra
