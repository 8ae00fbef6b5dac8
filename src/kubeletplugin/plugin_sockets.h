// Everything about the Helper's two Unix sockets but their names
// (socket_paths.h): the DRA server (the kubelet's calls, the health streams,
// grpc.health.v1 for the DRA services), then the registration server, what
// the kubelet said of the registration, and the socket files themselves
// (cleared before listening, mode 0600, removed on stop, probed for
// /healthz).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/kubeletplugin/helper.h"
#include "kubeletplugin/executor.h"
#include "kubeletplugin/grpc_health_service.h"
#include "kubeletplugin/grpc_services.h"
#include "kubeletplugin/socket_paths.h"

namespace dra::kubeletplugin::internal {

class PluginSockets {
 public:
  struct Config {
    SocketPaths paths;
    RegistrationInfo registration;  // what GetInfo answers
    std::vector<std::unique_ptr<grpc::Service>> dra_services;
    std::vector<std::string> grpc_health_names;  // SERVING in grpc.health.v1
  };

  // The DRA server, and only once it answers the registration server, whose
  // NotifyRegistrationStatus calls `on_registration` on `executor` after
  // recording it. A server that started is stopped again when the other
  // fails.
  static absl::StatusOr<std::unique_ptr<PluginSockets>> Start(
      Config config, Executor& executor, std::function<void(const RegistrationStatus&)> on_registration);
  // Servers not stopped yet stop without a grace. Destroy it after the
  // executor: its threads may be inside the servers' code until joined.
  ~PluginSockets();

  RegistrationStatus registration() const;
  // Until the kubelet has said something, or `timeout`.
  RegistrationStatus WaitForRegistration(absl::Duration timeout) const;

  // The kubelet stops routing calls here: the registration server stops,
  // calls after `deadline` cancelled.
  void StopRegistrationServer(absl::Time deadline);
  // Calls still running after `deadline` are cancelled (InfiniteFuture:
  // waits for every one). Each Stop runs once, from one thread.
  void StopDraServer(absl::Time deadline);

 private:
  explicit PluginSockets(Config config) : config_(std::move(config)) {}

  Config config_;
  std::unique_ptr<grpc::Service> grpc_health_service_;
  std::unique_ptr<grpc::Service> registration_service_;
  std::unique_ptr<grpc::Server> dra_server_;
  std::unique_ptr<grpc::Server> registration_server_;
  bool dra_stopped_ = false;
  bool registration_stopped_ = false;
  mutable dra::Mutex mu_;
  mutable dra::CondVar registration_cv_;
  RegistrationStatus registration_ ABSL_GUARDED_BY(mu_);
};

// Removes a socket left at `path` by an earlier run. Anything else there is
// an error: the Helper never deletes a file that is not a socket.
absl::Status ClearStaleSocket(const std::string& path);

// Removes the socket at `path` if it is one; a missing file is fine.
void RemoveSocket(const std::string& path);

// Whether something listens on the socket at `path`: connects and closes at
// once. The error says why not ("connect /x/dra.sock: No such file ...").
absl::Status ProbeSocket(const std::string& path);

}  // namespace dra::kubeletplugin::internal
