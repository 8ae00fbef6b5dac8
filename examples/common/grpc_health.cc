#include "common/grpc_health.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"

namespace example {

class GrpcHealthServer::Impl {
 public:
  Impl(std::unique_ptr<grpc::CallbackGenericService> unimplemented, std::unique_ptr<grpc::Server> server, int port,
       std::function<absl::Status()> healthy)
      : unimplemented_(std::move(unimplemented)),
        server_(std::move(server)),
        port_(port),
        healthy_(std::move(healthy)) {
    Update();
    thread_ = std::thread([this] { Run(); });
  }
  ~Impl() {
    {
      std::scoped_lock lock(mu_);
      stop_ = true;
    }
    stopped_.notify_all();
    thread_.join();
    server_->Shutdown();
  }
  int port() const { return port_; }

 private:
  void Update() {
    const bool serving = healthy_().ok();
    grpc::HealthCheckServiceInterface* service = server_->GetHealthCheckService();
    service->SetServingStatus(serving);
    service->SetServingStatus("liveness", serving);
  }
  void Run() {
    while (true) {
      {
        std::unique_lock lock(mu_);
        if (stopped_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) return;
      }
      Update();
    }
  }

  // Outlives the server it is registered with.
  const std::unique_ptr<grpc::CallbackGenericService> unimplemented_;
  const std::unique_ptr<grpc::Server> server_;
  const int port_;
  const std::function<absl::Status()> healthy_;
  std::mutex mu_;
  std::condition_variable stopped_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<GrpcHealthServer>> GrpcHealthServer::Start(const std::string& address,
                                                                          std::function<absl::Status()> healthy) {
  // gRPC's default health service goes into the servers built while it is
  // enabled, a process-wide setting: only this one. (The SDK's own servers
  // ignore the setting either way.)
  const bool health_enabled = grpc::DefaultHealthCheckServiceEnabled();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  // A server needs a service of its own beside the health one; this one
  // answers every other method UNIMPLEMENTED.
  auto unimplemented = std::make_unique<grpc::CallbackGenericService>();
  builder.RegisterCallbackGenericService(unimplemented.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  grpc::EnableDefaultHealthCheckService(health_enabled);
  if (server == nullptr || port == 0) return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  if (server->GetHealthCheckService() == nullptr) return absl::InternalError("gRPC built no health service");
  return std::unique_ptr<GrpcHealthServer>(new GrpcHealthServer(
      std::make_unique<Impl>(std::move(unimplemented), std::move(server), port, std::move(healthy))));
}

GrpcHealthServer::GrpcHealthServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcHealthServer::~GrpcHealthServer() = default;
int GrpcHealthServer::port() const { return impl_->port(); }

}  // namespace example
