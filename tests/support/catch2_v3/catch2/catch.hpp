// Catch2 v3 (Debian 13) under the name of Catch2 v2's single header, which
// the tests include: tests/CMakeLists.txt puts this directory on the include
// path only when it finds Catch2 v3. The parts of v3 the tests use, and the
// names v2 gave its string matchers.
#pragma once

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>

namespace Catch {

inline Matchers::StringContainsMatcher Contains(const std::string& str,
                                                CaseSensitive case_sensitivity = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(str, case_sensitivity);
}
using Matchers::EndsWith;
using Matchers::StartsWith;

}  // namespace Catch
