#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "support/poll.h"

extern char** environ;

namespace dra::testing {
namespace {

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return absl::StrCat("killed by signal ", WTERMSIG(wait_status));
  return "stopped";
}

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& args) {
  if (args.empty()) return absl::InvalidArgumentError("RunProcess: empty argv");
  std::vector<std::string> storage = args;
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return absl::FailedPreconditionError(absl::StrCat("cannot run ", args[0], ": ", std::strerror(spawned)));
  }

  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_pipes = 2;
  while (open_pipes > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, n);
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_pipes;
      }
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace dra::testing

namespace dra::testing {

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& args, const std::string& log_file,
                                                 const std::vector<std::string>& env) {
  if (args.empty()) return absl::InvalidArgumentError("ChildProcess: empty argv");
  std::vector<std::string> storage = args;
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = env;
  std::vector<char*> envp;
  for (std::string& entry : env_storage) envp.push_back(entry.data());
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view name = std::string_view(*entry).substr(0, std::string_view(*entry).find('=') + 1);
    const bool replaced =
        std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.starts_with(name); });
    if (!replaced) envp.push_back(*entry);
  }
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  ChildProcess child;
  const int spawned = posix_spawn(&child.pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    child.pid_ = -1;
    return absl::FailedPreconditionError(absl::StrCat("cannot run ", args[0], ": ", std::strerror(spawned)));
  }
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), how_(std::move(other.how_)) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Stop();
    pid_ = other.pid_;
    how_ = std::move(other.how_);
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Stop(); }

bool ChildProcess::Exited(std::string* how) {
  if (pid_ > 0) {
    int wait_status = 0;
    const pid_t r = waitpid(pid_, &wait_status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) return false;
    how_ = r == pid_ ? DescribeExit(wait_status) : "gone";
    pid_ = -1;
  }
  if (how != nullptr) *how = how_;
  return true;
}

std::string ChildProcess::Stop(absl::Duration grace) {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    if (!PollUntil([&] { return Exited(); }, grace)) Kill();
  }
  return how_;
}

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int wait_status = 0;
  while (waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  how_ = DescribeExit(wait_status);
  pid_ = -1;
}

}  // namespace dra::testing
