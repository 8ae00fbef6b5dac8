#include "dra/kubeletplugin/termination_signals.h"

#include <pthread.h>

#include <catch2/catch.hpp>

namespace dra::kubeletplugin {
namespace {

TEST_CASE("TerminationSignals holds SIGTERM and SIGINT for Wait instead of letting them kill the process",
          "[signals]") {
  TerminationSignals signals;
  sigset_t blocked;
  pthread_sigmask(SIG_BLOCK, nullptr, &blocked);
  CHECK(sigismember(&blocked, SIGTERM) == 1);
  CHECK(sigismember(&blocked, SIGINT) == 1);

  // Pending, not delivered: the process survives and Wait returns them.
  REQUIRE(pthread_kill(pthread_self(), SIGTERM) == 0);
  CHECK(signals.Wait() == SIGTERM);
  REQUIRE(pthread_kill(pthread_self(), SIGINT) == 0);
  CHECK(signals.Wait() == SIGINT);

  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGTERM);
  sigaddset(&both, SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &both, nullptr);
}

}  // namespace
}  // namespace dra::kubeletplugin
