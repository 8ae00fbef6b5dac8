// Writes its argument file twice with WriteFileAtomically ("one", then
// "two"): a process for crash_point_test.cc to arm crash points in.
#include <iostream>

#include "fileutil/atomic_file.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: crash_point_probe FILE\n";
    return 2;
  }
  for (const char* content : {"one", "two"}) {
    if (absl::Status status = dra::internal::WriteFileAtomically(argv[1], content); !status.ok()) {
      std::cerr << status << "\n";
      return 1;
    }
  }
  return 0;
}
