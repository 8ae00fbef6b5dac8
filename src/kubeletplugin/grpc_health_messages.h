// grpc.health.v1's two one-field messages as raw bytes, for the Helper's
// Check (grpc_health_service.h) and dractl's client of it. Debian's grpc++
// ships no generated code for them, and defining grpc.health.v1 types here
// could clash with an application's own copy of health.proto.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <grpcpp/support/byte_buffer.h>

namespace dra::kubeletplugin::internal {

inline constexpr char kGrpcHealthCheckMethod[] = "/grpc.health.v1.Health/Check";

// HealthCheckResponse.ServingStatus.
enum class ServingStatus : uint64_t { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

// HealthCheckRequest{string service = 1}.
grpc::ByteBuffer EncodeHealthCheckRequest(std::string_view service);
// The service a request names ("" when it names none); nullopt when malformed.
std::optional<std::string> DecodeHealthCheckRequest(const grpc::ByteBuffer& request);

// HealthCheckResponse{ServingStatus status = 1}.
grpc::ByteBuffer EncodeHealthCheckResponse(ServingStatus status);
// The status number a response carries (a newer server may send one not in
// ServingStatus); nullopt when malformed.
std::optional<uint64_t> DecodeHealthCheckResponse(const grpc::ByteBuffer& response);

}  // namespace dra::kubeletplugin::internal
