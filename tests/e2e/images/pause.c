// The pod sandbox's process in the suite's pause image: holds the pod's
// namespaces as PID 1, reaps the orphans it inherits, and exits at once on
// SIGINT or SIGTERM (PID 1 gets no default handler for them).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &stop, NULL) != 0 || sigaction(SIGTERM, &stop, NULL) != 0 ||
      sigaction(SIGCHLD, &child, NULL) != 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
