#include "dra/kubeletplugin/termination_signals.h"

#include <pthread.h>
#include <unistd.h>

namespace dra::kubeletplugin {

TerminationSignals::TerminationSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

int TerminationSignals::Wait() const {
  int signal = 0;
  while (sigwait(&set_, &signal) != 0) {
  }
  return signal;
}

void TerminationSignals::Interrupt() const { kill(getpid(), SIGTERM); }

}  // namespace dra::kubeletplugin
