// grpc.health.v1.Health/Check on the DRA socket, served without gRPC's
// default health service: that one is switched on for the whole process
// (grpc::EnableDefaultHealthCheckService), a setting a library must not
// touch, and its messages have no generated code in Debian's grpc++. The
// two one-field messages are read and written as raw bytes, so no
// grpc.health.v1 type is defined here to clash with an application's own.
//
// Check answers SERVING for "" and for each name in `serving`, NOT_FOUND
// for any other service, as the protocol asks. Watch is not served: its
// UNIMPLEMENTED tells a client to do without health checking, and the
// kubelet and its gRPC probes only call Check.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/impl/codegen/service_type.h>

namespace dra::kubeletplugin::internal {

inline constexpr char kGrpcHealthCheckMethod[] = "/grpc.health.v1.Health/Check";

std::unique_ptr<grpc::Service> NewGrpcHealthService(std::vector<std::string> serving);

}  // namespace dra::kubeletplugin::internal
