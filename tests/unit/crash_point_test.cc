// Crash points (src/crashpoint/crash_point.h): an armed point ends a real
// process at its n-th hit with _exit(137) and one line on stderr, leaving
// what a crash there leaves; a bad DRA_CRASH_POINT stops the process; and
// kCrashPoints, the one list of names, is what the sources use and the
// documentation lists.
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "crashpoint/crash_point.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace {

using dra::testing::ProcessResult;
using dra::testing::ReadFile;

ProcessResult RunProbe(const std::string& crash_point, const std::string& file) {
  absl::StatusOr<ProcessResult> result =
      dra::testing::RunProcess({"/usr/bin/env", "DRA_CRASH_POINT=" + crash_point, DRA_CRASH_POINT_PROBE, file});
  REQUIRE(result.ok());
  return *result;
}

std::vector<std::string> TempFilesIn(const std::string& dir) {
  std::vector<std::string> temps;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename();
    if (name.starts_with(".file.tmp-")) temps.push_back(entry.path());
  }
  return temps;
}

TEST_CASE("an armed crash point ends the process at its n-th hit, as a crash there would", "[crash_point]") {
  dra::testing::TempDir dir;
  const std::string file = dir.Join("file");

  SECTION("before the rename: the old file stays, the new content is a temp file beside it") {
    const ProcessResult result = RunProbe("atomic_file.before_rename:2", file);
    CHECK(result.exit_code == 137);
    CHECK(result.err == "dra crash point atomic_file.before_rename hit 2: _exit(137)\n");
    CHECK(ReadFile(file) == "one");
    const std::vector<std::string> temps = TempFilesIn(dir.path());
    REQUIRE(temps.size() == 1);
    CHECK(ReadFile(temps[0]) == "two");
  }
  SECTION("after the rename: the new file is in place") {
    const ProcessResult result = RunProbe("atomic_file.after_rename:2", file);
    CHECK(result.exit_code == 137);
    CHECK(result.err == "dra crash point atomic_file.after_rename hit 2: _exit(137)\n");
    CHECK(ReadFile(file) == "two");
    CHECK(TempFilesIn(dir.path()).empty());
  }
  SECTION("a point reached fewer times than armed, or not armed, changes nothing") {
    for (const char* armed : {"atomic_file.after_rename:3", "checkpoint.after_sync:1", ""}) {
      const ProcessResult result = RunProbe(armed, file);
      CHECK(result.exit_code == 0);
      CHECK(result.err.empty());
      CHECK(ReadFile(file) == "two");
    }
  }
}

TEST_CASE("a DRA_CRASH_POINT that arms nothing stops the process with status 2, saying why", "[crash_point]") {
  dra::testing::TempDir dir;
  const auto [value, why] = GENERATE(table<std::string, std::string>({
      {"atomic_file.before_renam:1", "unknown crash point"},
      {"atomic_file.before_rename", "no hit count"},
      {"atomic_file.before_rename:0", "the hit count is not a positive number"},
      {"atomic_file.before_rename:x", "the hit count is not a number"},
  }));
  const ProcessResult result = RunProbe(value, dir.Join("file"));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::StartsWith("DRA_CRASH_POINT=" + value + ": " + why));
  CHECK_FALSE(std::filesystem::exists(dir.Join("file")));
}

// The names DRA_CRASH_POINT("...") uses in the SDK's sources.
std::multiset<std::string> NamesInSources() {
  std::multiset<std::string> names;
  const std::regex use(R"re(DRA_CRASH_POINT\("([^"]+)"\))re");
  for (const char* root : {"src"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(DRA_SOURCE_DIR) + "/" + root)) {
      if (entry.path().extension() != ".cc") continue;
      const std::string text = ReadFile(entry.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), use); it != std::sregex_iterator(); ++it) {
        names.insert((*it)[1]);
      }
    }
  }
  return names;
}

TEST_CASE("every crash point is used in the sources and listed in docs/reliability.md", "[crash_point]") {
  const std::multiset<std::string> used = NamesInSources();
  const std::string docs = ReadFile(std::string(DRA_SOURCE_DIR) + "/docs/reliability.md");
  for (std::string_view point : dra::internal::kCrashPoints) {
    const std::string name(point);
    INFO(name);
    CHECK(used.count(name) > 0);
    CHECK(docs.find("| `" + name + "` |") != std::string::npos);
  }
}

}  // namespace
