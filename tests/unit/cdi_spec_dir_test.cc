#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include <sys/stat.h>

#include "cdi_test_specs.h"
#include "dra/cdi/spec_dir.h"
#include "support/cdi_schema_validator.h"
#include "support/temp_dir.h"

namespace dra::cdi {
namespace {

using dra::testing::ReadFile;
using dra::testing::TempDir;
using dra::testing::WriteFile;
using testing::FullSpec;
using testing::MinimalSpec;

const Kind kKind{"example.com", "gpu"};

mode_t ModeOf(const std::string& path) {
  struct stat info;
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

SpecDir DirAt(const std::string& path, Format format = Format::kJson) {
  SpecDirOptions options;
  options.path = path;
  options.format = format;
  return SpecDir(options);
}

TEST_CASE("the default spec directory is /var/run/cdi, JSON, mode 0600", "[cdi][specdir]") {
  const SpecDir dir;
  CHECK(dir.options().path == "/var/run/cdi");
  CHECK(dir.options().format == Format::kJson);
  CHECK(dir.options().file_mode == 0600);
  CHECK(dir.PathOf("example.com-gpu") == "/var/run/cdi/example.com-gpu.json");
}

TEST_CASE("Write creates the directory and a valid file with the configured mode", "[cdi][specdir]") {
  TempDir temp;
  const std::string root = temp.Join("run/cdi");  // missing, as after a reboot
  const SpecDir dir = DirAt(root);
  absl::StatusOr<std::string> path = dir.Write(TransientSpecFileName(kKind, "uid-1"), FullSpec());
  REQUIRE(path.ok());
  CHECK(*path == root + "/example.com-gpu_uid-1.json");
  CHECK(ModeOf(*path) == 0600);
  CHECK(dra::testing::CdiSchemaValidator::Reference().ValidateText(ReadFile(*path)).empty());
  CHECK(dir.Exists("example.com-gpu_uid-1"));

  SpecDirOptions options;
  options.path = root;
  options.format = Format::kYaml;
  options.file_mode = 0644;
  absl::StatusOr<std::string> yaml = SpecDir(options).Write(SpecFileName(kKind), MinimalSpec());
  REQUIRE(yaml.ok());
  CHECK(*yaml == root + "/example.com-gpu.yaml");
  CHECK(ModeOf(*yaml) == 0644);
  CHECK(dra::testing::CdiSchemaValidator::Reference().ValidateText(ReadFile(*yaml)).empty());
}

TEST_CASE("Write refuses an invalid spec and leaves no file", "[cdi][specdir]") {
  TempDir temp;
  const SpecDir dir = DirAt(temp.path());
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits = {};
  CHECK(dir.Write("x", spec).status().message() ==
        "devices[\"gpu0\"].containerEdits: a device needs at least one edit");
  CHECK(std::filesystem::is_empty(temp.path()));
}

TEST_CASE("Remove deletes both formats and a missing file is success", "[cdi][specdir]") {
  TempDir temp;
  const SpecDir dir = DirAt(temp.path());
  REQUIRE(DirAt(temp.path(), Format::kYaml).Write("a", MinimalSpec()).ok());
  REQUIRE(dir.Write("a", MinimalSpec()).ok());
  CHECK(dir.Remove("a").ok());
  CHECK(std::filesystem::is_empty(temp.path()));
  CHECK(dir.Remove("a").ok());
  CHECK(DirAt(temp.Join("missing")).Remove("a").ok());
}

TEST_CASE("orphan clean-up removes only this kind's transient specs not kept", "[cdi][specdir]") {
  TempDir temp;
  const SpecDir dir = DirAt(temp.path());
  for (const char* id : {"keep-1", "orphan-1"})
    REQUIRE(dir.Write(TransientSpecFileName(kKind, id), MinimalSpec()).ok());
  REQUIRE(DirAt(temp.path(), Format::kYaml).Write(TransientSpecFileName(kKind, "orphan-2"), MinimalSpec()).ok());
  const std::vector<std::string> untouched = {
      "example.com-gpu.json",            // the driver's static spec
      "example.com-gpux_orphan-3.json",  // another class
      "other.com-gpu_orphan-4.json",     // another vendor
      "example.com-gpu_notes.txt",       // not a spec file
      "vendor.json",
  };
  for (const std::string& name : untouched) WriteFile(temp.Join(name), "{}");
  WriteFile(temp.Join(".example.com-gpu_orphan-5.json.tmp-AbC123"), "{\"cdiV");  // a crashed write
  WriteFile(temp.Join(".example.com-gpu_keep-1.json.tmp-XyZ789"), "{\"cdiV");    // perhaps a write in progress

  absl::StatusOr<std::set<std::string>> ids = dir.ListTransientIds(kKind);
  REQUIRE(ids.ok());
  CHECK(*ids == std::set<std::string>{"keep-1", "orphan-1", "orphan-2"});

  absl::StatusOr<std::vector<std::string>> removed = dir.RemoveTransientSpecsExcept(kKind, {"keep-1"});
  REQUIRE(removed.ok());
  std::set<std::string> removed_names;
  for (const std::string& path : *removed) removed_names.insert(std::filesystem::path(path).filename());
  CHECK(removed_names == std::set<std::string>{"example.com-gpu_orphan-1.json", "example.com-gpu_orphan-2.yaml",
                                               ".example.com-gpu_orphan-5.json.tmp-AbC123"});
  CHECK(dir.Exists(TransientSpecFileName(kKind, "keep-1")));
  CHECK(std::filesystem::exists(temp.Join(".example.com-gpu_keep-1.json.tmp-XyZ789")));
  for (const std::string& name : untouched) CHECK(std::filesystem::exists(temp.Join(name)));
  CHECK(*DirAt(temp.Join("missing")).RemoveTransientSpecsExcept(kKind, {}) == std::vector<std::string>{});
}

TEST_CASE("a reader never sees a partial spec file while it is replaced", "[cdi][specdir]") {
  TempDir temp;
  const SpecDir dir = DirAt(temp.path());
  Spec small = MinimalSpec();
  Spec large = FullSpec();
  for (int i = 0; i < 200; ++i)
    large.container_edits.env.push_back("PADDING_" + std::to_string(i) + "=" + std::string(100, 'x'));
  const std::string name = TransientSpecFileName(kKind, "uid");
  const std::string path = *dir.Write(name, small);
  const std::string small_text = ReadFile(path);
  REQUIRE(dir.Write(name, large).ok());
  const std::string large_text = ReadFile(path);
  REQUIRE(large_text.size() > 16 * 1024);

  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        const std::string text = ReadFile(path);
        if (text != small_text && text != large_text) ++torn;
        ++reads;
      }
    });
  }
  for (int i = 0; i < 300; ++i) REQUIRE(dir.Write(name, i % 2 == 0 ? small : large).ok());
  done = true;
  for (std::thread& reader : readers) reader.join();
  CHECK(reads.load() > 0);
  CHECK(torn.load() == 0);
}

}  // namespace
}  // namespace dra::cdi
