#include "kubeletplugin/grpc_services.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace dra::kubeletplugin::internal {
namespace {

// Generated packages can't be template arguments; these tags name their types.
#define DRA_API_TAG(Tag, ns, has_share_id)                          \
  struct Tag {                                                      \
    using Service = ns::DRAPlugin::Service;                         \
    using PrepareRequest = ns::NodePrepareResourcesRequest;         \
    using PrepareResponse = ns::NodePrepareResourcesResponse;       \
    using UnprepareRequest = ns::NodeUnprepareResourcesRequest;     \
    using UnprepareResponse = ns::NodeUnprepareResourcesResponse;   \
    static constexpr bool kHasShareId = has_share_id;               \
  }
DRA_API_TAG(DraV1, ::k8s::io::kubelet::pkg::apis::dra::v1, true);
DRA_API_TAG(DraV1beta1, ::k8s::io::kubelet::pkg::apis::dra::v1beta1, false);
#undef DRA_API_TAG

#define HEALTH_API_TAG(Tag, ns)                                   \
  struct Tag {                                                    \
    using Service = ns::DRAResourceHealth::Service;               \
    using Request = ns::NodeWatchResourcesRequest;                \
    using Response = ns::NodeWatchResourcesResponse;              \
    static constexpr auto kUnknown = ns::UNKNOWN;                 \
    static constexpr auto kHealthy = ns::HEALTHY;                 \
    static constexpr auto kUnhealthy = ns::UNHEALTHY;             \
  }
HEALTH_API_TAG(HealthV1, ::v1);
HEALTH_API_TAG(HealthV1alpha1, ::v1alpha1);
#undef HEALTH_API_TAG

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

template <typename ClaimList>
std::vector<k8s::ClaimRef> ToRefs(const ClaimList& claims) {
  std::vector<k8s::ClaimRef> refs;
  refs.reserve(claims.size());
  for (const auto& claim : claims) refs.push_back({claim.namespace_(), claim.name(), claim.uid()});
  return refs;
}

// The kubelet's deadline and whether it cancelled, for the call's CallContext.
Caller CallerOf(grpc::ServerContext* context) {
  Caller caller;
  if (context->deadline() != std::chrono::system_clock::time_point::max()) {
    caller.deadline = absl::FromChrono(context->deadline());
  }
  caller.cancelled = [context] { return context->IsCancelled(); };
  return caller;
}

// The v1 and v1beta1 DRA APIs have the same messages in different packages;
// v1 adds Device.share_id.
template <typename Api>
class DraService final : public Api::Service {
 public:
  explicit DraService(ClaimPreparer& preparer) : preparer_(preparer) {}

  grpc::Status NodePrepareResources(grpc::ServerContext* context, const typename Api::PrepareRequest* request,
                                    typename Api::PrepareResponse* response) override {
    absl::StatusOr<ClaimOutcomes> outcomes = preparer_.Prepare(ToRefs(request->claims()), CallerOf(context));
    if (!outcomes.ok()) return ToGrpc(outcomes.status());
    auto& claims = *response->mutable_claims();
    for (const auto& [uid, outcome] : *outcomes) {
      auto& claim = claims[uid];
      claim.set_error(outcome.error);
      if (!outcome.error.empty()) continue;
      for (const Device& device : outcome.devices) {
        auto* out = claim.add_devices();
        for (const std::string& request_name : device.requests) out->add_request_names(request_name);
        out->set_pool_name(device.pool_name);
        out->set_device_name(device.device_name);
        for (const std::string& id : device.cdi_device_ids) out->add_cdi_device_ids(id);
        if constexpr (Api::kHasShareId) {
          if (device.share_id.has_value()) out->set_share_id(*device.share_id);
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext* context, const typename Api::UnprepareRequest* request,
                                      typename Api::UnprepareResponse* response) override {
    absl::StatusOr<ClaimOutcomes> outcomes = preparer_.Unprepare(ToRefs(request->claims()), CallerOf(context));
    if (!outcomes.ok()) return ToGrpc(outcomes.status());
    auto& claims = *response->mutable_claims();
    for (const auto& [uid, outcome] : *outcomes) claims[uid].set_error(outcome.error);
    return grpc::Status::OK;
  }

 private:
  ClaimPreparer& preparer_;
};

// The health APIs v1 and v1alpha1 are identical but for their package.
template <typename Api>
class HealthService final : public Api::Service {
 public:
  explicit HealthService(HealthBroadcaster& health) : health_(health) {}

  grpc::Status NodeWatchResources(grpc::ServerContext* context, const typename Api::Request*,
                                  grpc::ServerWriter<typename Api::Response>* writer) override {
    // The sync API has no cancellation callback, so the wait is sliced to
    // notice a client that went away.
    constexpr absl::Duration kCancelCheck = absl::Milliseconds(200);
    uint64_t seen = 0;
    while (!context->IsCancelled()) {
      std::optional<HealthBroadcaster::Snapshot> snapshot = health_.WaitNewer(seen, kCancelCheck);
      if (health_.shut_down()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "DRA plugin is shutting down");
      if (!snapshot.has_value()) continue;
      seen = snapshot->version;
      if (!writer->Write(ToResponse(snapshot->devices))) break;
    }
    return grpc::Status(grpc::StatusCode::CANCELLED, "health watcher went away");
  }

 private:
  static typename Api::Response ToResponse(const std::vector<DeviceHealth>& devices) {
    typename Api::Response response;
    for (const DeviceHealth& device : devices) {
      auto* out = response.add_devices();
      out->mutable_device()->set_pool_name(device.pool_name);
      out->mutable_device()->set_device_name(device.device_name);
      switch (device.health) {
        case HealthStatus::kHealthy:
          out->set_health(Api::kHealthy);
          break;
        case HealthStatus::kUnhealthy:
          out->set_health(Api::kUnhealthy);
          break;
        case HealthStatus::kUnknown:
          out->set_health(Api::kUnknown);
          break;
      }
      out->set_last_updated_time(absl::ToUnixSeconds(device.last_updated));
      out->set_health_check_timeout_seconds(absl::ToInt64Seconds(device.health_check_timeout));
      out->set_message(TruncateHealthMessage(device.message));
    }
    return response;
  }

  HealthBroadcaster& health_;
};

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  RegistrationService(RegistrationInfo info, std::function<void(const RegistrationStatus&)> on_status)
      : info_(std::move(info)), on_status_(std::move(on_status)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* response) override {
    response->set_type("DRAPlugin");
    response->set_name(info_.driver_name);
    response->set_endpoint(info_.endpoint);
    for (const std::string& version : info_.supported_versions) response->add_supported_versions(version);
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const pluginregistration::RegistrationStatus* request,
                                        pluginregistration::RegistrationStatusResponse*) override {
    on_status_(RegistrationStatus{true, request->plugin_registered(), request->error()});
    if (!request->plugin_registered()) {
      return grpc::Status(grpc::StatusCode::UNKNOWN, absl::StrCat("failed registration process: ", request->error()));
    }
    return grpc::Status::OK;
  }

 private:
  const RegistrationInfo info_;
  const std::function<void(const RegistrationStatus&)> on_status_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewDraV1Service(ClaimPreparer& preparer) {
  return std::make_unique<DraService<DraV1>>(preparer);
}
std::unique_ptr<grpc::Service> NewDraV1beta1Service(ClaimPreparer& preparer) {
  return std::make_unique<DraService<DraV1beta1>>(preparer);
}
std::unique_ptr<grpc::Service> NewHealthV1Service(HealthBroadcaster& health) {
  return std::make_unique<HealthService<HealthV1>>(health);
}
std::unique_ptr<grpc::Service> NewHealthV1alpha1Service(HealthBroadcaster& health) {
  return std::make_unique<HealthService<HealthV1alpha1>>(health);
}
std::unique_ptr<grpc::Service> NewRegistrationService(RegistrationInfo info,
                                                      std::function<void(const RegistrationStatus&)> on_status) {
  return std::make_unique<RegistrationService>(std::move(info), std::move(on_status));
}

}  // namespace dra::kubeletplugin::internal
