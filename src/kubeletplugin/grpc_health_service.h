// grpc.health.v1.Health/Check on the DRA socket, served without gRPC's
// default health service: that one is switched on for the whole process
// (grpc::EnableDefaultHealthCheckService), a setting a library must not
// touch. Its messages are raw bytes (grpc_health_messages.h).
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

std::unique_ptr<grpc::Service> NewGrpcHealthService(std::vector<std::string> serving);

}  // namespace dra::kubeletplugin::internal
