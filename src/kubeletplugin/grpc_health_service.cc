#include "kubeletplugin/grpc_health_service.h"

#include <set>
#include <utility>

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include "absl/strings/str_cat.h"

namespace dra::kubeletplugin::internal {
namespace {

// grpc.health.v1.HealthCheckResponse.ServingStatus
constexpr uint64_t kServing = 1;

std::string Flatten(const grpc::ByteBuffer& buffer, bool* ok) {
  std::vector<grpc::Slice> slices;
  *ok = buffer.Dump(&slices).ok();
  std::string bytes;
  for (const grpc::Slice& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return bytes;
}

// HealthCheckRequest{string service = 1}; proto3 leaves out the empty name.
bool DecodeService(const grpc::ByteBuffer& request, std::string* service) {
  bool ok = false;
  const std::string bytes = Flatten(request, &ok);
  google::protobuf::UnknownFieldSet fields;
  if (!ok || !fields.ParseFromString(bytes)) return false;
  service->clear();
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    if (field.number() != 1) continue;
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) return false;
    *service = field.length_delimited();
  }
  return true;
}

// HealthCheckResponse{ServingStatus status = 1}.
grpc::ByteBuffer EncodeStatus(uint64_t status) {
  google::protobuf::UnknownFieldSet fields;
  fields.AddVarint(1, status);
  std::string bytes;
  fields.SerializeToString(&bytes);
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

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
    std::string service;
    if (!DecodeService(request, &service)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed HealthCheckRequest"));
    } else if (!service.empty() && serving_.count(service) == 0) {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("unknown service \"", service, "\"")));
    } else {
      *response = EncodeStatus(kServing);
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
