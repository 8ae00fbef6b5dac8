// bench_cdi: the cost of per-claim CDI spec files, as the Helper writes them
// at prepare and removes them at unprepare. Writes N transient specs (one
// device with a device node, an env variable and a mount, like a typical GPU
// claim) with SpecDir::Write (validate, encode, temp file, fsync, rename,
// fsync of the directory), then removes them, on tmpfs (/var/run/cdi is
// tmpfs) and on a disk directory.
//
// Prints one Markdown table on stdout: microseconds per spec, median of
// --runs runs; progress goes to stderr.

#include <sys/statfs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dra/cdi/spec_dir.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  int specs = 1000;
  int runs = 3;
  std::string tmpfs_dir = "/dev/shm";
  std::string disk_dir = "/var/tmp";
};

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "bench_cdi: %s\n", message.c_str());
  std::exit(1);
}

dra::cdi::Spec ClaimSpec(int index) {
  dra::cdi::Spec spec;
  spec.kind = "example.com/gpu";
  dra::cdi::Device& device = spec.devices.emplace_back();
  device.name = absl::StrCat("claim-", index, "-gpu0");
  dra::cdi::ContainerEdits& edits = device.container_edits;
  edits.env = {"GPU_VISIBLE_DEVICES=0"};
  dra::cdi::DeviceNode& node = edits.device_nodes.emplace_back();
  node.path = "/dev/gpu0";
  // Not `= "c"`: GCC 12 at -O3 reports a false -Wrestrict on that (GCC bug 105329).
  node.type = std::string(1, 'c');
  node.major = 226;
  node.minor = 0;
  dra::cdi::Mount& mount = edits.mounts.emplace_back();
  mount.host_path = "/usr/lib/libgpu.so.1";
  mount.container_path = "/usr/lib/libgpu.so.1";
  mount.options = {"ro", "nosuid", "nodev", "bind"};
  return spec;
}

std::string ClaimUid(int index) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "6f0c1d2e-0000-4000-8000-%012d", index);
  return buf;
}

double MicrosPer(Clock::duration elapsed, int count) {
  return std::chrono::duration<double, std::micro>(elapsed).count() / count;
}

struct Costs {
  double write = 0;
  double remove = 0;
};

Costs RunOnce(const std::string& dir, dra::cdi::Format format, const std::vector<dra::cdi::Spec>& specs) {
  dra::cdi::SpecDirOptions options;
  options.path = dir;
  options.format = format;
  const dra::cdi::SpecDir spec_dir(options);
  const dra::cdi::Kind kind{"example.com", "gpu"};
  std::vector<std::string> names;
  for (size_t i = 0; i < specs.size(); ++i) names.push_back(dra::cdi::TransientSpecFileName(kind, ClaimUid(i)));

  Costs costs;
  auto start = Clock::now();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (auto written = spec_dir.Write(names[i], specs[i]); !written.ok()) Fail(std::string(written.status().message()));
  }
  costs.write = MicrosPer(Clock::now() - start, specs.size());
  start = Clock::now();
  for (const std::string& name : names) {
    if (auto removed = spec_dir.Remove(name); !removed.ok()) Fail(std::string(removed.message()));
  }
  costs.remove = MicrosPer(Clock::now() - start, specs.size());
  return costs;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string FsType(const std::string& path) {
  struct statfs st;
  if (::statfs(path.c_str(), &st) != 0) return "?";
  if (st.f_type == 0x01021994) return "tmpfs";
  if (st.f_type == 0xEF53) return "ext4";
  if (st.f_type == 0x58465342) return "xfs";
  if (st.f_type == 0x9123683E) return "btrfs";
  if (st.f_type == 0x794c7630) return "overlayfs";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "fs 0x%lx", static_cast<unsigned long>(st.f_type));
  return buf;
}

std::string MakeTempDir(const std::string& parent) {
  std::string pattern = absl::StrCat(parent, "/dra-cdi-bench-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) Fail(absl::StrCat("mkdtemp ", pattern, ": ", std::strerror(errno)));
  return pattern;
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Fail(absl::StrCat(arg, " needs a value"));
      return argv[++i];
    };
    if (arg == "--specs")
      flags.specs = std::atoi(value().c_str());
    else if (arg == "--runs")
      flags.runs = std::atoi(value().c_str());
    else if (arg == "--tmpfs-dir")
      flags.tmpfs_dir = value();
    else if (arg == "--disk-dir")
      flags.disk_dir = value();
    else {
      std::fprintf(stderr,
                   "usage: bench_cdi [--specs N] [--runs N] [--tmpfs-dir DIR] [--disk-dir DIR]\n"
                   "  --specs N        per-claim specs written and removed per run (default 1000)\n"
                   "  --runs N         runs; the table shows the median (default 3)\n"
                   "  --tmpfs-dir DIR  parent of the tmpfs spec dir (default /dev/shm)\n"
                   "  --disk-dir DIR   parent of the disk spec dir (default /var/tmp)\n");
      std::exit(arg == "--help" ? 0 : 2);
    }
  }
  if (flags.specs <= 0 || flags.runs <= 0) Fail("--specs and --runs must be positive");
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  std::vector<dra::cdi::Spec> specs;
  for (int i = 0; i < flags.specs; ++i) specs.push_back(ClaimSpec(i));

  std::printf("| spec dir | fs | specs | write json us/spec | write yaml us/spec | remove us/spec |\n");
  std::printf("|---|---|---:|---:|---:|---:|\n");
  for (const std::string& parent : {flags.tmpfs_dir, flags.disk_dir}) {
    const std::string dir = MakeTempDir(parent);
    std::fprintf(stderr, "writing %d specs x %d runs in %s\n", flags.specs, flags.runs, dir.c_str());
    std::vector<double> json, yaml, remove;
    for (int run = 0; run < flags.runs; ++run) {
      const Costs j = RunOnce(dir, dra::cdi::Format::kJson, specs);
      const Costs y = RunOnce(dir, dra::cdi::Format::kYaml, specs);
      json.push_back(j.write);
      yaml.push_back(y.write);
      remove.push_back(j.remove);
      remove.push_back(y.remove);
    }
    std::printf("| %s | %s | %d | %.1f | %.1f | %.1f |\n", parent.c_str(), FsType(dir).c_str(), flags.specs,
                Median(json), Median(yaml), Median(remove));
    std::filesystem::remove_all(dir);
  }
  return 0;
}
