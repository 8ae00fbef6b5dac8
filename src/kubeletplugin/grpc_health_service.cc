#include "kubeletplugin/grpc_health_service.h"

#include <set>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include "absl/strings/str_cat.h"
#include "kubeletplugin/grpc_health_messages.h"

namespace dra::kubeletplugin::internal {
namespace {

class GrpcHealthService final : public grpc::Service {
 public:
  explicit GrpcHealthService(std::vector<std::string> serving) : serving_(serving.begin(), serving.end()) {
    AddMethod(
        new grpc::internal::RpcServiceMethod(kGrpcHealthCheckMethod, grpc::internal::RpcMethod::NORMAL_RPC, nullptr));
    MarkMethodRawCallback(0, new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                                 [this](grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) { return Check(context, *request, response); }));
  }

 private:
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context, const grpc::ByteBuffer& request,
                                  grpc::ByteBuffer* response) const {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    const std::optional<std::string> service = DecodeHealthCheckRequest(request);
    if (!service.has_value()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed HealthCheckRequest"));
    } else if (!service->empty() && serving_.count(*service) == 0) {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("unknown service \"", *service, "\"")));
    } else {
      *response = EncodeHealthCheckResponse(ServingStatus::kServing);
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

  const std::set<std::string> serving_;  // and "", the server as a whole
};

}  // namespace

std::unique_ptr<grpc::Service> NewGrpcHealthService(std::vector<std::string> serving) {
  return std::make_unique<GrpcHealthService>(std::move(serving));
}

}  // namespace dra::kubeletplugin::internal
