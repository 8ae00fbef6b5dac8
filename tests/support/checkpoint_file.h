// Where a driver's Helper keeps its checkpoint, for tests that read it.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace dra::testing {

// In `plugin_dir`: dra-cpp-checkpoint for a driver that keeps another
// driver's checkpoint.json beside it (Options::encode_foreign_checkpoint, the
// GPU example), which is JSON where this SDK's lines start with a checksum;
// else checkpoint.json.
inline std::string CheckpointFile(const std::string& plugin_dir) {
  const std::string beside = plugin_dir + "/dra-cpp-checkpoint";
  const std::string json = plugin_dir + "/checkpoint.json";
  std::ifstream file(json);
  const bool foreign = file.peek() == '{';
  return std::filesystem::exists(beside) || foreign ? beside : json;
}

}  // namespace dra::testing
