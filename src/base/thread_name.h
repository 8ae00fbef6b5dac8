// Names the SDK's threads "dra-<role>" (at most 15 characters, the kernel's
// limit), so that `top -H`, `ps -L` and /proc/<pid>/task/*/comm tell an
// operator which part of the driver each thread is, and tests can count them.
#pragma once

#include <pthread.h>

#include <thread>

namespace dra::base {

inline void NameThread(std::thread& thread, const char* name) { pthread_setname_np(thread.native_handle(), name); }

}  // namespace dra::base
