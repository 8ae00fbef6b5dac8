// example::GrpcHealthServer: grpc.health.v1 on a TCP port, for a kubelet
// gRPC liveness probe (dra-example-driver's chart probes service "liveness"
// on HEALTHCHECK_PORT). The services "" and "liveness" are SERVING while
// `healthy` (Helper::Healthy, the check behind /healthz) is OK, NOT_SERVING
// otherwise; it is asked once a second.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace example {

class GrpcHealthServer {
 public:
  // `address`: "host:port"; port 0 picks a free one (port()).
  static absl::StatusOr<std::unique_ptr<GrpcHealthServer>> Start(const std::string& address,
                                                                 std::function<absl::Status()> healthy);
  ~GrpcHealthServer();
  GrpcHealthServer(const GrpcHealthServer&) = delete;
  GrpcHealthServer& operator=(const GrpcHealthServer&) = delete;

  int port() const;

  class Impl;

 private:
  explicit GrpcHealthServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace example
