// The command line shared by the drivers that bench/go_vs_cpp.sh starts
// (bench_trivial_driver, bench_raw_grpc_driver) and their claim UIDs.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace dra::bench {

struct DriverFlags {
  std::string registrar_dir;
  std::string plugin_data_dir;
  std::string driver_name = "bench.example.com";
  long claims = 1024;
};

// The UID of bench claim i: the scheme of bench/gosdk and of the kubelet
// peer's --bench-claims.
inline std::string BenchClaimUid(long i) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "00000000-0000-4000-8000-%012lx", i);
  return buf;
}

// Parses "--flag value" pairs: the common ones into `flags`, any other through
// `extra`, which returns false for a flag it does not know. Returns the exit
// code to leave with (0 after --help, 2 after printing `usage` for a bad
// command line), or -1 to go on.
inline int ParseDriverFlags(int argc, char** argv, DriverFlags& flags, const char* usage,
                            const std::function<bool(const std::string&, const std::string&)>& extra) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool help = flag == "-h" || flag == "--help";
    if (help || i + 1 >= argc) {
      std::fputs(usage, stderr);
      return help ? 0 : 2;
    }
    const std::string value = argv[++i];
    if (flag == "--registrar-dir")
      flags.registrar_dir = value;
    else if (flag == "--plugin-data-dir")
      flags.plugin_data_dir = value;
    else if (flag == "--driver-name")
      flags.driver_name = value;
    else if (flag == "--claims")
      flags.claims = std::stol(value);
    else if (!extra(flag, value)) {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  return -1;
}

}  // namespace dra::bench
