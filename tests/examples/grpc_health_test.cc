// example::GrpcHealthServer as a kubelet gRPC probe sees it: grpc.health.v1
// Check of "" and "liveness" answers SERVING while the health function is
// OK and NOT_SERVING after it fails, unknown services are NOT_FOUND.
#include "common/grpc_health.h"

#include <atomic>
#include <future>
#include <string>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "support/poll.h"

namespace {

// grpc.health.v1.HealthCheckResponse.ServingStatus, or -1 with the call's
// error code in `code`.
int Check(const std::string& address, const std::string& service, grpc::StatusCode* code = nullptr) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  // HealthCheckRequest{service = 1}: tag 0x0a, length, bytes.
  const std::string request = std::string(1, '\x0a') + static_cast<char>(service.size()) + service;
  grpc::Slice slice(request);
  grpc::ByteBuffer in(&slice, 1);
  grpc::ByteBuffer out;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &in, &out,
                 [&](grpc::Status status) { done.set_value(std::move(status)); });
  const grpc::Status status = done.get_future().get();
  if (code != nullptr) *code = status.error_code();
  if (!status.ok()) return -1;
  std::vector<grpc::Slice> slices;
  REQUIRE(out.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  // HealthCheckResponse{status = 1}: tag 0x08 and a one-byte varint; an
  // empty message is UNKNOWN (0).
  if (bytes.empty()) return 0;
  REQUIRE(bytes.size() == 2);
  REQUIRE(bytes[0] == '\x08');
  return bytes[1];
}

constexpr int kServing = 1;
constexpr int kNotServing = 2;

TEST_CASE("the gRPC health server answers a liveness probe from the health function", "[examples][grpc_health]") {
  std::atomic<bool> healthy{true};
  absl::StatusOr<std::unique_ptr<example::GrpcHealthServer>> server = example::GrpcHealthServer::Start(
      "127.0.0.1:0", [&] { return healthy ? absl::OkStatus() : absl::UnavailableError("a socket is gone"); });
  REQUIRE(server.ok());
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());
  CHECK(Check(address, "liveness") == kServing);
  CHECK(Check(address, "") == kServing);
  grpc::StatusCode code = grpc::StatusCode::OK;
  CHECK(Check(address, "readiness", &code) == -1);
  CHECK(code == grpc::StatusCode::NOT_FOUND);

  healthy = false;
  // The server asks once a second: wait for it to see the change.
  CHECK(dra::testing::PollUntil([&] { return Check(address, "liveness") == kNotServing; }, absl::Minutes(1),
                                absl::Milliseconds(50)));
  CHECK(Check(address, "") == kNotServing);
}

TEST_CASE("the gRPC health server names the address it cannot listen on", "[examples][grpc_health]") {
  absl::StatusOr<std::unique_ptr<example::GrpcHealthServer>> server =
      example::GrpcHealthServer::Start("256.0.0.1:1", [] { return absl::OkStatus(); });
  REQUIRE_FALSE(server.ok());
  CHECK(server.status().message() == "cannot listen on 256.0.0.1:1");
}

}  // namespace
