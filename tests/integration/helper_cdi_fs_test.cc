// The Helper's CDI spec dir on a filesystem that is full or read-only: a
// small tmpfs that the test mounts itself. ctest runs this binary in a user
// and mount namespace of its own (unshare --user --map-root-user --mount),
// so it needs no root and the mounts go with it.
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "support/helper_dirs.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletclient::DraApi;
using kubeletclient::DraClient;
using kubeletplugin::InMemoryClaimSource;
using testing::AllocatedClaim;
using testing::TestDriver;

constexpr char kFiller[] = "filler";

// HelperDirs with the CDI dir on a tmpfs of 64 KiB.
struct SmallCdiFs : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();

  SmallCdiFs() {
    std::filesystem::create_directories(cdi_dir);
    const int mounted = ::mount("tmpfs", cdi_dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755");
    INFO("mount a tmpfs at " << cdi_dir << ": " << std::strerror(errno)
                             << " (run under `unshare --user --map-root-user --mount`, as ctest does)");
    REQUIRE(mounted == 0);
  }
  ~SmallCdiFs() { ::umount2(cdi_dir.c_str(), MNT_DETACH); }

  void Remount(bool read_only) {
    INFO("remount " << cdi_dir << (read_only ? " read-only: " : " read-write: ") << std::strerror(errno));
    REQUIRE(::mount(nullptr, cdi_dir.c_str(), nullptr, MS_REMOUNT | MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0),
                    nullptr) == 0);
  }

  // Writes a file that takes every free block.
  void Fill() {
    std::ofstream out(cdi_dir + "/" + kFiller, std::ios::binary);
    const std::string block(4096, 'x');
    while (out.write(block.data(), block.size()) && out.flush()) {
    }
    REQUIRE(std::filesystem::file_size(cdi_dir + "/" + kFiller) > 0);
  }

  std::set<std::string> Files() const {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(cdi_dir)) names.insert(entry.path().filename());
    return names;
  }

  std::string SpecFile(const std::string& uid) const { return "gpu.example.com-claim_" + uid + ".json"; }
};

std::string PrepareError(DraClient& client, const std::string& uid) {
  const std::vector<k8s::ClaimRef> claims = {{"ns", "c-" + uid, uid}};
  auto prepared = client.NodePrepareResources(DraApi::kV1, claims);
  REQUIRE(prepared.ok());
  return prepared->at(uid).error;
}

std::string UnprepareError(DraClient& client, const std::string& uid) {
  const std::vector<k8s::ClaimRef> claims = {{"ns", "c-" + uid, uid}};
  auto unprepared = client.NodeUnprepareResources(DraApi::kV1, claims);
  REQUIRE(unprepared.ok());
  return unprepared->at(uid);
}

TEST_CASE(
    "a full CDI spec dir fails the claim naming the file and the error, leaves no temp file, and the "
    "kubelet's retry succeeds once there is space",
    "[helper][cdi][fs]") {
  SmallCdiFs f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  auto helper = f.Start(driver, f.MakeOptions(f.claims));
  auto client = DraClient::Create(helper->dra_socket_path());
  f.claims->Put(AllocatedClaim("ns", "c-uid-1", "uid-1", {"gpu-0"}));
  f.Fill();

  const std::string error = PrepareError(*client, "uid-1");
  CHECK_THAT(error, Catch::Contains("write CDI spec of claim ns/c-uid-1") &&
                        Catch::Contains("No space left on device") && Catch::Contains(f.cdi_dir));
  CHECK(f.Files() == std::set<std::string>{kFiller});

  std::filesystem::remove(f.cdi_dir + "/" + kFiller);
  CHECK(PrepareError(*client, "uid-1").empty());
  CHECK(f.Files() == std::set<std::string>{f.SpecFile("uid-1")});
  CHECK(UnprepareError(*client, "uid-1").empty());
  CHECK(f.Files().empty());
}

TEST_CASE(
    "a read-only CDI spec dir fails prepares naming the error; an unprepare that cannot remove the spec fails "
    "and keeps the claim until the retry removes it",
    "[helper][cdi][fs]") {
  SmallCdiFs f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  auto helper = f.Start(driver, f.MakeOptions(f.claims));
  auto client = DraClient::Create(helper->dra_socket_path());
  f.claims->Put(AllocatedClaim("ns", "c-uid-1", "uid-1", {"gpu-0"}));
  f.claims->Put(AllocatedClaim("ns", "c-uid-2", "uid-2", {"gpu-1"}));
  REQUIRE(PrepareError(*client, "uid-1").empty());
  f.Remount(/*read_only=*/true);

  CHECK_THAT(PrepareError(*client, "uid-2"),
             Catch::Contains("write CDI spec of claim ns/c-uid-2") && Catch::Contains("Read-only file system"));
  CHECK_THAT(UnprepareError(*client, "uid-1"),
             Catch::Contains("remove CDI spec") && Catch::Contains("Read-only file system"));
  CHECK(f.Files() == std::set<std::string>{f.SpecFile("uid-1")});

  f.Remount(/*read_only=*/false);
  CHECK(UnprepareError(*client, "uid-1").empty());
  CHECK(PrepareError(*client, "uid-2").empty());
  CHECK(f.Files() == std::set<std::string>{f.SpecFile("uid-2")});
  CHECK(UnprepareError(*client, "uid-2").empty());
  CHECK(f.Files().empty());
}

}  // namespace
}  // namespace dra
