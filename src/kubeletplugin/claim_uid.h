// The format of a claim UID the Helper accepts: it becomes part of file
// names (the claim's CDI spec, its metadata files), so nothing that could
// leave a directory gets through. Kubernetes UIDs are UUIDs.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace dra::kubeletplugin::internal {

// The rules `uid` breaks; empty means valid.
inline std::vector<std::string> ClaimUidProblems(std::string_view uid) {
  std::vector<std::string> problems;
  if (uid.empty() || uid.size() > 128) problems.push_back("must be 1 to 128 characters");
  for (char c : uid) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
      problems.push_back("must consist of letters, digits and '-'");
      break;
    }
  }
  return problems;
}

}  // namespace dra::kubeletplugin::internal
