#include <catch2/catch.hpp>

#include <grpcpp/support/slice.h>

#include "kubeletplugin/grpc_health_messages.h"

namespace dra::kubeletplugin::internal {
namespace {

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

TEST_CASE("grpc.health.v1 messages round-trip and match the wire format", "[grpc_health]") {
  CHECK(DecodeHealthCheckRequest(EncodeHealthCheckRequest("a.B")) == std::optional<std::string>("a.B"));
  CHECK(DecodeHealthCheckRequest(EncodeHealthCheckRequest("")) == std::optional<std::string>(""));
  // HealthCheckRequest{service: "x"}: tag 0x0a, length 1; the empty name is no field at all.
  CHECK(DecodeHealthCheckRequest(Bytes("\x0a\x01x")) == std::optional<std::string>("x"));
  CHECK(DecodeHealthCheckRequest(Bytes("")) == std::optional<std::string>(""));
  // HealthCheckResponse{status: SERVING}: tag 0x08, varint 1.
  CHECK(DecodeHealthCheckResponse(Bytes("\x08\x01")) == std::optional<uint64_t>(1));
  CHECK(DecodeHealthCheckResponse(EncodeHealthCheckResponse(ServingStatus::kNotServing)) == std::optional<uint64_t>(2));
  CHECK(DecodeHealthCheckResponse(Bytes("")) == std::optional<uint64_t>(0));  // UNKNOWN, omitted
}

TEST_CASE("malformed grpc.health.v1 messages are refused", "[grpc_health]") {
  CHECK_FALSE(DecodeHealthCheckRequest(Bytes("\x0a\x05x")).has_value());  // shorter than its length
  CHECK_FALSE(DecodeHealthCheckRequest(Bytes("\x08\x01")).has_value());   // service as a number
  CHECK_FALSE(DecodeHealthCheckResponse(Bytes("\x08")).has_value());      // a varint cut off
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
