#include "e2e/private_cluster.h"

#include <signal.h>
#include <sys/types.h>

#include <sstream>
#include <vector>

#include <catch2/catch.hpp>

#include "dra/k8s/client_config.h"
#include "e2e/e2e_cluster.h"
#include "support/subprocess.h"

namespace dra::e2e {

PrivateCluster::PrivateCluster(const std::string& feature_gates, const std::string& runtime_config)
    : script_(DRA_E2E_CLUSTER_SH) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  if (!feature_gates.empty()) argv.push_back("DRA_E2E_FEATURE_GATES=" + feature_gates);
  if (!runtime_config.empty()) argv.push_back("DRA_E2E_RUNTIME_CONFIG=" + runtime_config);
  argv.insert(argv.end(), {script_, "start", dir_.path()});
  // Up to three attempts: on a loaded machine cluster.sh can take a daemon
  // that has not exec'd yet for one that exited, or give up on a slow etcd
  // (a failed start cleans up after itself).
  absl::StatusOr<testing::ProcessResult> started = testing::RunProcess(argv);
  for (int attempt = 1; attempt < 3 && started.ok() && started->exit_code != 0; ++attempt) {
    started = testing::RunProcess(argv);
  }
  REQUIRE(started.ok());
  INFO(started->out << started->err);
  REQUIRE(started->exit_code == 0);
}

PrivateCluster::~PrivateCluster() {
  Thaw();
  (void)testing::RunProcess({script_, "stop", dir_.path()});
}

std::shared_ptr<k8s::Client> PrivateCluster::Admin(absl::Duration timeout) const {
  absl::StatusOr<k8s::ClientConfig> config = k8s::LoadKubeconfig(dir_.Join("admin.kubeconfig"));
  REQUIRE(config.ok());
  config->qps = 0;
  config->max_retries = 0;
  config->timeout = timeout;
  return MakeClient(*config);
}

void PrivateCluster::Freeze() { Signal(SIGSTOP); }
void PrivateCluster::Thaw() { Signal(SIGCONT); }
void PrivateCluster::StopApiServer() { Script("apiserver-stop"); }
void PrivateCluster::StartApiServer() { Script("apiserver-start"); }
void PrivateCluster::CompactEtcd() { Script("etcd-compact"); }

void PrivateCluster::StartNode(const std::string& runtime) {
  absl::StatusOr<testing::ProcessResult> started =
      testing::RunProcess({"/usr/bin/env", "DRA_E2E_RUNTIME=" + runtime, script_, "node-start", dir_.path()});
  REQUIRE(started.ok());
  INFO(started->out << started->err);
  REQUIRE(started->exit_code == 0);
}

std::string PrivateCluster::Env(const std::string& name) const {
  std::istringstream lines(testing::ReadFile(dir_.Join("cluster.env")));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "=", 0) == 0) return line.substr(name.size() + 1);
  }
  FAIL(name << " is not in " << dir_.Join("cluster.env"));
  return "";
}

// The pid file says which process cluster.sh started.
void PrivateCluster::Signal(int signal) {
  std::istringstream line(testing::ReadFile(dir_.Join("pids/kube-apiserver.pid")));
  pid_t pid = 0;
  if (line >> pid && pid > 0) ::kill(pid, signal);
}

void PrivateCluster::Script(const std::string& command) {
  absl::StatusOr<testing::ProcessResult> ran = testing::RunProcess({script_, command, dir_.path()});
  REQUIRE(ran.ok());
  INFO(ran->out << ran->err);
  REQUIRE(ran->exit_code == 0);
}

}  // namespace dra::e2e
