// examples/minimal as a process, the test as its kubelet: its exit code is
// what Helper::Wait returns. SIGTERM ends it with 0; a refused registration,
// which the Helper logs as a fatal background error, with 1 (so that the
// DaemonSet restarts it), although the driver handles no error itself.
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "example_driver_process.h"
#include "support/poll.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace {

using dra::testing::PollUntil;

constexpr char kDriver[] = "minimal.example.com";

struct Fixture {
  dra::testing::TempDir dir;
  dra::testing::ChildProcess driver;

  Fixture() {
    for (const char* sub : {"registry", "plugins", "cdi"}) std::filesystem::create_directories(dir.Join(sub));
    std::ofstream(dir.Join("claims.json")) << "[]";
    absl::StatusOr<dra::testing::ChildProcess> spawned = dra::testing::ChildProcess::Spawn(
        {DRA_MINIMAL_DRIVER, "--registrar-dir", dir.Join("registry"), "--plugin-data-dir",
         dir.Join("plugins/minimal.example.com"), "--cdi-dir", dir.Join("cdi"), "--claims", dir.Join("claims.json")},
        dir.Join("driver.log"));
    REQUIRE(spawned.ok());
    driver = *std::move(spawned);
    INFO(Log());
    REQUIRE(PollUntil([&] { return std::filesystem::exists(RegistrarSocket()); }, absl::Seconds(20)));
  }
  std::string RegistrarSocket() const { return dir.Join(std::string("registry/") + kDriver + "-reg.sock"); }
  std::string Log() const { return dra::testing::ReadFile(dir.Join("driver.log")); }
};

TEST_CASE("the minimal driver: SIGTERM stops it with exit code 0", "[examples][minimal][process]") {
  Fixture f;
  REQUIRE(dra::testing::NotifyPluginRegistration(f.RegistrarSocket(), kDriver, true, "").ok());
  CHECK(f.driver.Stop() == "exited with status 0");
  CHECK_FALSE(std::filesystem::exists(f.RegistrarSocket()));
}

TEST_CASE("the minimal driver: a refused registration is logged by the Helper and ends it with exit code 1",
          "[examples][minimal][process]") {
  Fixture f;
  (void)dra::testing::NotifyPluginRegistration(f.RegistrarSocket(), kDriver, false, "no supported DRA version");
  std::string how;
  INFO(f.Log());
  REQUIRE(PollUntil([&] { return f.driver.Exited(&how); }, absl::Seconds(20)));
  CHECK(how == "exited with status 1");
  CHECK_THAT(f.Log(), Catch::Contains("Background error") && Catch::Contains("severity=\"fatal\"") &&
                          Catch::Contains("kubelet refused plugin registration: no supported DRA version"));
}

}  // namespace
