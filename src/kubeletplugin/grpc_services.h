// The gRPC services the Helper serves, behind factories so that no generated
// type leaks beyond this file's .cc. All use gRPC's callback API: a handler
// hands the call to the Executor (DRA) or answers at once (registration,
// health), so gRPC's threads never wait for a driver, a claim fetch, the
// serializer or the disk.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/impl/codegen/service_type.h>

#include "dra/kubeletplugin/helper.h"
#include "kubeletplugin/claim_preparer.h"
#include "kubeletplugin/executor.h"
#include "kubeletplugin/health_broadcaster.h"

namespace dra::kubeletplugin::internal {

// Service names as the kubelet knows them (PluginInfo.supported_versions).
inline constexpr char kDraV1Service[] = "v1.DRAPlugin";
inline constexpr char kDraV1beta1Service[] = "v1beta1.DRAPlugin";
inline constexpr char kHealthV1Service[] = "v1.DRAResourceHealth";
inline constexpr char kHealthV1alpha1Service[] = "v1alpha1.DRAResourceHealth";

// Full gRPC service names, for the grpc.health.v1 serving status.
inline constexpr char kDraV1GrpcName[] = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin";
inline constexpr char kDraV1beta1GrpcName[] = "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin";

std::unique_ptr<grpc::Service> NewDraV1Service(ClaimPreparer& preparer, Executor& executor);
std::unique_ptr<grpc::Service> NewDraV1beta1Service(ClaimPreparer& preparer, Executor& executor);
std::unique_ptr<grpc::Service> NewHealthV1Service(HealthBroadcaster& health);
std::unique_ptr<grpc::Service> NewHealthV1alpha1Service(HealthBroadcaster& health);

struct RegistrationInfo {
  std::string driver_name;
  std::string endpoint;
  std::vector<std::string> supported_versions;
};

// GetInfo answers `info`; NotifyRegistrationStatus runs `on_status` on the
// executor (it reaches the driver on a refusal), then answers.
std::unique_ptr<grpc::Service> NewRegistrationService(RegistrationInfo info, Executor& executor,
                                                      std::function<void(const RegistrationStatus&)> on_status);

}  // namespace dra::kubeletplugin::internal
