#include "kubeletplugin/plugin_sockets.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dra::kubeletplugin::internal {
namespace {

constexpr mode_t kSocketMode = 0600;

// Builds and starts a gRPC server on a Unix socket at `path`. The socket is
// bound under a hidden name in the same directory (the kubelet's plugin
// watcher skips dot files), given its mode, and renamed into place: the
// kubelet never sees it before it accepts connections (a dial that comes too
// early backs off for a second) or with a looser mode.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartUnixServer(const std::string& path,
                                                              const std::vector<grpc::Service*>& services) {
  if (path.size() >= kUnixPathMax) {
    return absl::InvalidArgumentError(absl::StrCat("socket path ", path, " is ", path.size(),
                                                   " bytes long; Unix sockets allow at most ", kUnixPathMax - 1,
                                                   ": use shorter directories"));
  }
  if (absl::Status status = ClearStaleSocket(path); !status.ok()) return status;
  const size_t slash = path.rfind('/');
  std::string bound = path.substr(0, slash + 1) + "." + path.substr(slash + 1);
  if (bound.size() >= kUnixPathMax) bound = path;  // no room for the hidden name
  if (absl::Status status = ClearStaleSocket(bound); !status.ok()) return status;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + bound, grpc::InsecureServerCredentials());
  // Whatever the application set process-wide: the DRA server serves its
  // own grpc.health.v1, the registration server none.
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return absl::UnavailableError(absl::StrCat("start gRPC server on ", bound, " failed"));
  const char* failed = nullptr;
  if (chmod(bound.c_str(), kSocketMode) != 0) {
    failed = "chmod";
  } else if (bound != path && rename(bound.c_str(), path.c_str()) != 0) {
    failed = "rename";
  }
  if (failed != nullptr) {
    const int error = errno;
    server->Shutdown();
    RemoveSocket(bound);
    return absl::FailedPreconditionError(absl::StrCat(failed, " ", bound, ": ", std::strerror(error)));
  }
  return server;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PluginSockets>> PluginSockets::Start(
    Config config, Executor& executor, std::function<void(const RegistrationStatus&)> on_registration) {
  std::unique_ptr<PluginSockets> sockets(new PluginSockets(std::move(config)));
  std::vector<grpc::Service*> services;
  for (const auto& service : sockets->config_.dra_services) services.push_back(service.get());
  sockets->grpc_health_service_ = NewGrpcHealthService(sockets->config_.grpc_health_names);
  services.push_back(sockets->grpc_health_service_.get());
  absl::StatusOr<std::unique_ptr<grpc::Server>> dra_server = StartUnixServer(sockets->config_.paths.dra, services);
  if (!dra_server.ok()) return dra_server.status();
  sockets->dra_server_ = *std::move(dra_server);

  // Only now that the endpoint answers may the kubelet learn about it.
  PluginSockets* self = sockets.get();
  sockets->registration_service_ =
      NewRegistrationService(sockets->config_.registration, executor,
                             [self, on_registration = std::move(on_registration)](const RegistrationStatus& status) {
                               {
                                 dra::MutexLock lock(&self->mu_);
                                 self->registration_ = status;
                               }
                               self->registration_cv_.SignalAll();
                               on_registration(status);
                             });
  absl::StatusOr<std::unique_ptr<grpc::Server>> registration_server =
      StartUnixServer(sockets->config_.paths.registrar, {sockets->registration_service_.get()});
  if (!registration_server.ok()) return registration_server.status();
  sockets->registration_server_ = *std::move(registration_server);
  return sockets;
}

PluginSockets::~PluginSockets() {
  StopRegistrationServer(absl::Now());
  StopDraServer(absl::Now());
}

RegistrationStatus PluginSockets::registration() const {
  dra::MutexLock lock(&mu_);
  return registration_;
}

RegistrationStatus PluginSockets::WaitForRegistration(absl::Duration timeout) const {
  const absl::Time until = absl::Now() + timeout;
  dra::MutexLock lock(&mu_);
  while (!registration_.notified && !registration_cv_.WaitWithDeadline(&mu_, until)) {
  }
  return registration_;
}

// The servers themselves stay until the destructor: a reactor's Finish on
// an executor thread may still be inside gRPC when Shutdown() has returned.
void PluginSockets::StopRegistrationServer(absl::Time deadline) {
  if (registration_server_ == nullptr || registration_stopped_) return;
  registration_stopped_ = true;
  registration_server_->Shutdown(absl::ToChronoTime(deadline));
  registration_server_->Wait();
}

void PluginSockets::StopDraServer(absl::Time deadline) {
  if (dra_server_ == nullptr || dra_stopped_) return;
  dra_stopped_ = true;
  if (deadline == absl::InfiniteFuture()) {
    dra_server_->Shutdown();
  } else {
    dra_server_->Shutdown(absl::ToChronoTime(deadline));
  }
  dra_server_->Wait();
}

absl::Status ClearStaleSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("stat ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot listen on ", path, ": a file that is not a socket is in the way; remove it"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(absl::StrCat("remove stale socket ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void RemoveSocket(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
}

absl::Status ProbeSocket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", path, " is longer than ", sizeof(addr.sun_path) - 1));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  const int rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int error = errno;
  close(fd);
  if (rc != 0) return absl::UnavailableError(absl::StrCat("connect ", path, ": ", std::strerror(error)));
  return absl::OkStatus();
}

}  // namespace dra::kubeletplugin::internal
