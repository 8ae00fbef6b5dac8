#include "crashpoint/crash_point.h"

#if DRA_CRASH_POINTS
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace dra::internal {
namespace {

uint64_t armed_hit = 0;  // written once, before any thread can reach a point
std::atomic<uint64_t> hits{0};

void WriteStderr(const std::string& line) {
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// A value that arms nothing is a mistake in the test that set it: the
// process stops rather than run a test that cannot crash.
[[noreturn]] void Refuse(std::string_view value, std::string_view why) {
  WriteStderr(std::string("DRA_CRASH_POINT=") + std::string(value) + ": " + std::string(why) +
              " (want <name>:<n>, n >= 1, name one of docs/reliability.md's crash points)\n");
  ::_exit(2);
}

int Arm() {
  const char* env = std::getenv("DRA_CRASH_POINT");
  if (env == nullptr || *env == '\0') return -1;
  const std::string_view value = env;
  const size_t colon = value.rfind(':');
  if (colon == std::string_view::npos) Refuse(value, "no hit count");
  const std::string_view name = value.substr(0, colon);
  const std::string_view count = value.substr(colon + 1);
  uint64_t n = 0;
  for (const char c : count) {
    if (c < '0' || c > '9' || n > UINT32_MAX) Refuse(value, "the hit count is not a number");
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (count.empty() || n == 0) Refuse(value, "the hit count is not a positive number");
  for (size_t i = 0; i < kCrashPoints.size(); ++i) {
    if (kCrashPoints[i] == name) {
      armed_hit = n;
      return static_cast<int>(i);
    }
  }
  Refuse(value, "unknown crash point");
}

}  // namespace

std::atomic<int> armed_crash_point{-1};
namespace {
[[maybe_unused]] const bool armed = (armed_crash_point.store(Arm()), true);
}  // namespace

void ReachArmedCrashPoint() {
  const uint64_t hit = hits.fetch_add(1) + 1;
  if (hit != armed_hit) return;
  WriteStderr(std::string("dra crash point ") + std::string(kCrashPoints[armed_crash_point.load()]) + " hit " +
              std::to_string(hit) + ": _exit(137)\n");
  ::_exit(137);
}

}  // namespace dra::internal
#endif
