// Named crash points: places in the SDK where a test build can make the
// process die as a crash would, to show that a restart repairs what the
// crash left (docs/reliability.md, "Crash points").
//
//   DRA_CRASH_POINT("checkpoint.after_sync");
//
// Compiled in only with the CMake option DRA_CRASH_POINTS (on in builds with
// the tests); otherwise the macro only checks the name. Armed by the
// environment variable DRA_CRASH_POINT=<name>:<n>, read once at start: the
// n-th time the process reaches that point it writes one line naming it to
// stderr and calls _exit(137), running no destructors and flushing nothing.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <string_view>

namespace dra::internal {

// Every crash point; each is used in the SDK's sources (tests/unit/crash_point_test.cc checks).
inline constexpr std::array<std::string_view, 20> kCrashPoints = {
    // The checkpoint's durable writes (checkpoint.cc).
    "checkpoint.before_append",   // a change line is about to be appended
    "checkpoint.after_append",    // appended, not yet fdatasync'ed
    "checkpoint.after_sync",      // appended and synced; the commit has not returned
    "checkpoint.before_replace",  // a new file (creation, compaction) is about to be written
    "checkpoint.after_replace",   // the new file is in place; the commit has not returned
    // Every atomic file write: checkpoint replacements, CDI specs, metadata files.
    "atomic_file.before_rename",  // the temp file is written (and synced, if asked)
    "atomic_file.after_rename",   // renamed into place, the directory not yet synced
    // A kubelet call (claim_preparer.cc).
    "prepare.before_driver",          // PrepareStarted is durable
    "prepare.after_driver",           // the driver prepared; no claim file written yet
    "prepare.after_metadata_files",   // a claim's metadata files are written, its CDI spec not yet
    "prepare.after_cdi_spec",         // a claim's CDI spec is written, the claim not yet Prepared
    "prepare.after_checkpoint",       // Prepared is durable; the kubelet has no answer yet
    "unprepare.before_driver",        // nothing done yet
    "unprepare.after_driver",         // the driver unprepared; the claim's files are still there
    "unprepare.after_files_removed",  // the files are gone; the checkpoint still has the claim
    "unprepare.after_checkpoint",     // the entry's erasure is durable; the kubelet has no answer yet
    // API writes.
    "publisher.before_write",  // a ResourceSlice create, update or delete is about to be sent
    "publisher.after_write",   // the API server has answered it
    "status.before_write",     // a claim's device status apply is about to be sent
    "status.after_write",      // the API server has answered it
};

// The position of `name` in kCrashPoints; not a constant expression (so a
// compile error) when it is not there.
consteval size_t CrashPointIndex(std::string_view name) {
  for (size_t i = 0; i < kCrashPoints.size(); ++i) {
    if (kCrashPoints[i] == name) return i;
  }
  throw "not a crash point: add it to kCrashPoints";
}

#if DRA_CRASH_POINTS
// The index of the armed point, -1 when none.
extern std::atomic<int> armed_crash_point;
// Counts a hit of the armed point and ends the process at the n-th.
void ReachArmedCrashPoint();

#define DRA_CRASH_POINT(name)                                                                          \
  do {                                                                                                 \
    constexpr int dra_crash_point_index = static_cast<int>(::dra::internal::CrashPointIndex(name));    \
    if (::dra::internal::armed_crash_point.load(std::memory_order_relaxed) == dra_crash_point_index) { \
      ::dra::internal::ReachArmedCrashPoint();                                                         \
    }                                                                                                  \
  } while (false)
#else
#define DRA_CRASH_POINT(name)                                                                     \
  do {                                                                                            \
    static_assert(::dra::internal::CrashPointIndex(name) < ::dra::internal::kCrashPoints.size()); \
  } while (false)
#endif

}  // namespace dra::internal
