// One temp dir per fuzzer process, made on first use and removed at exit
// (a crash leaves it). Under $TMPDIR: scripts/fuzz.sh points that at
// /dev/shm, where the fsyncs of the targets that write files cost nothing.
#pragma once

#include <string>

#include "support/temp_dir.h"

namespace dra::fuzz {

inline const dra::testing::TempDir& ProcessTempDir() {
  static const dra::testing::TempDir dir;  // destroyed by exit(), which libFuzzer calls when done
  return dir;
}

}  // namespace dra::fuzz
