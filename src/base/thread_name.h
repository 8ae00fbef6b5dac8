// Starts and names the SDK's threads "dra-<role>" (at most 15 characters, the kernel's
// limit), so that `top -H`, `ps -L` and /proc/<pid>/task/*/comm tell an
// operator which part of the driver each thread is, and tests can count them.
#pragma once

#include <pthread.h>

#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dra::base {

inline void NameThread(std::thread& thread, const char* name) { pthread_setname_np(thread.native_handle(), name); }

// Starts `body` on `*thread`, named `name`; when the system refuses a thread,
// ResourceExhausted "<what>: <why>" instead of std::system_error.
template <typename Body>
absl::Status StartNamedThread(std::thread& thread, const char* name, std::string_view what, Body&& body) {
  try {
    thread = std::thread(std::forward<Body>(body));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat(absl::string_view(what.data(), what.size()), ": ", e.what()));
  }
  NameThread(thread, name);
  return absl::OkStatus();
}

}  // namespace dra::base
