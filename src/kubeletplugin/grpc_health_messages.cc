#include "kubeletplugin/grpc_health_messages.h"

#include <vector>

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/support/slice.h>

namespace dra::kubeletplugin::internal {
namespace {

constexpr int kField = 1;  // `service` in the request, `status` in the response

// The message's fields into `fields`; false when the buffer or the encoding
// is broken. (UnknownFieldSet neither copies nor moves.)
bool Parse(const grpc::ByteBuffer& buffer, google::protobuf::UnknownFieldSet& fields) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const grpc::Slice& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return fields.ParseFromString(bytes);
}

grpc::ByteBuffer Serialize(const google::protobuf::UnknownFieldSet& fields) {
  std::string bytes;
  fields.SerializeToString(&bytes);
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace

grpc::ByteBuffer EncodeHealthCheckRequest(std::string_view service) {
  google::protobuf::UnknownFieldSet fields;
  if (!service.empty()) fields.AddLengthDelimited(kField, std::string(service));  // proto3 omits the default
  return Serialize(fields);
}

std::optional<std::string> DecodeHealthCheckRequest(const grpc::ByteBuffer& request) {
  google::protobuf::UnknownFieldSet fields;
  if (!Parse(request, fields)) return std::nullopt;
  std::string service;
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    if (field.number() != kField) continue;
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) return std::nullopt;
    service = field.length_delimited();
  }
  return service;
}

grpc::ByteBuffer EncodeHealthCheckResponse(ServingStatus status) {
  google::protobuf::UnknownFieldSet fields;
  fields.AddVarint(kField, static_cast<uint64_t>(status));
  return Serialize(fields);
}

std::optional<uint64_t> DecodeHealthCheckResponse(const grpc::ByteBuffer& response) {
  google::protobuf::UnknownFieldSet fields;
  if (!Parse(response, fields)) return std::nullopt;
  uint64_t status = 0;  // proto3 omits the default, UNKNOWN
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    if (field.number() == kField && field.type() == google::protobuf::UnknownField::TYPE_VARINT) {
      status = field.varint();
    }
  }
  return status;
}

}  // namespace dra::kubeletplugin::internal
