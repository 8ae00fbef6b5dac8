#include "crash/kubelet_peer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "support/poll.h"

extern char** environ;

namespace dra::testing {

absl::StatusOr<std::unique_ptr<KubeletPeer>> KubeletPeer::Start(const std::string& binary,
                                                                const std::string& registry_dir,
                                                                const std::string& driver,
                                                                const std::string& log_file) {
  // The kubelet's reconciler looks at the registry every second; a restarted
  // driver is registered again within 10 ms here.
  std::vector<std::string> args = {binary,    "--registry-dir", registry_dir, "--driver", driver,
                                   "--steps", "register,serve", "--timeout",  "60s",      "--reconcile-period",
                                   "10ms"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int in[2];
  int out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe");
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int error = errno;
    close(in[0]);
    close(in[1]);
    return absl::ErrnoToStatus(error, "pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::unique_ptr<KubeletPeer> peer(new KubeletPeer());
  const int spawned = posix_spawn(&peer->pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  peer->stdin_fd_ = in[1];
  peer->stdout_fd_ = out[0];
  peer->log_file_ = log_file;
  if (spawned != 0) {
    peer->pid_ = -1;
    return absl::FailedPreconditionError(absl::StrCat("cannot run ", binary, ": ", std::strerror(spawned)));
  }
  return peer;
}

KubeletPeer::~KubeletPeer() {
  if (stdin_fd_ >= 0) close(stdin_fd_);  // ends the serve step; the peer exits
  if (pid_ > 0) {
    int status = 0;
    auto exited = [&] { return waitpid(pid_, &status, WNOHANG) != 0; };
    if (!PollUntil(exited, absl::Seconds(10))) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

void KubeletPeer::Log(const std::string& line) const { std::ofstream(log_file_, std::ios::app) << line << "\n"; }

absl::StatusOr<int64_t> KubeletPeer::Send(nlohmann::json command) {
  const int64_t id = next_id_++;
  command["id"] = id;
  std::string line = command.dump() + "\n";
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = write(stdin_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "write to the kubelet peer");
    done += static_cast<size_t>(n);
  }
  return id;
}

absl::StatusOr<nlohmann::json> KubeletPeer::Receive(int64_t id, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    for (size_t newline = pending_.find('\n'); newline != std::string::npos; newline = pending_.find('\n')) {
      const std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      nlohmann::json answer = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (answer.is_object() && answer.value("id", int64_t{0}) == id) return answer;
      Log(line);
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat("the kubelet peer did not answer command ", id, " within ", absl::FormatDuration(timeout)));
    }
    pollfd fd{stdout_fd_, POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) return absl::ErrnoToStatus(errno, "poll the kubelet peer");
    if (ready <= 0) continue;
    char buffer[65536];
    const ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("the kubelet peer ended; its log: ", log_file_));
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

absl::StatusOr<nlohmann::json> KubeletPeer::Call(nlohmann::json command, absl::Duration timeout) {
  absl::StatusOr<int64_t> id = Send(std::move(command));
  if (!id.ok()) return id.status();
  return Receive(*id, timeout);
}

}  // namespace dra::testing
