#include "dractl/plugin_process.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dra::sanity {

absl::StatusOr<PluginProcess> PluginProcess::Start(const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("no plugin command");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);  // the report keeps stdout
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  PluginProcess process;
  const int error = posix_spawnp(&process.pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return absl::ErrnoToStatus(error, absl::StrCat("start ", argv[0]));
  process.child_ = true;
  return process;
}

PluginProcess PluginProcess::Adopt(pid_t pid) {
  PluginProcess process;
  process.pid_ = pid;
  return process;
}

PluginProcess::PluginProcess(PluginProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)), child_(std::exchange(other.child_, false)), how_(std::move(other.how_)) {}

PluginProcess::~PluginProcess() {
  if (!child_ || Exited()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
}

bool PluginProcess::Exited() {
  if (child_) {
    if (!how_.empty()) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
    how_ = WIFEXITED(status) ? absl::StrCat("exited with status ", WEXITSTATUS(status))
                             : absl::StrCat("was killed by signal ", WTERMSIG(status));
    return true;
  }
  if (kill(pid_, 0) != 0) return true;
  // "PID (COMMAND) STATE ...": the command may hold spaces and parentheses.
  std::ifstream stat(absl::StrCat("/proc/", pid_, "/stat"));
  std::string line;
  std::getline(stat, line);
  const size_t command_end = line.rfind(')');
  return command_end != std::string::npos && line.compare(command_end + 1, 2, " Z") == 0;
}

}  // namespace dra::sanity
