#include "kubeletplugin/grpc_services.h"

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace dra::kubeletplugin::internal {
namespace {

// Generated packages can't be template arguments; these tags name their types.
#define DRA_API_TAG(Tag, ns, has_share_id)                        \
  struct Tag {                                                    \
    using Service = ns::DRAPlugin::CallbackService;               \
    using PrepareRequest = ns::NodePrepareResourcesRequest;       \
    using PrepareResponse = ns::NodePrepareResourcesResponse;     \
    using UnprepareRequest = ns::NodeUnprepareResourcesRequest;   \
    using UnprepareResponse = ns::NodeUnprepareResourcesResponse; \
    static constexpr bool kHasShareId = has_share_id;             \
  }
DRA_API_TAG(DraV1, ::k8s::io::kubelet::pkg::apis::dra::v1, true);
DRA_API_TAG(DraV1beta1, ::k8s::io::kubelet::pkg::apis::dra::v1beta1, false);
#undef DRA_API_TAG

#define HEALTH_API_TAG(Tag, ns)                             \
  struct Tag {                                              \
    using Service = ns::DRAResourceHealth::CallbackService; \
    using Request = ns::NodeWatchResourcesRequest;          \
    using Response = ns::NodeWatchResourcesResponse;        \
    static constexpr auto kUnknown = ns::UNKNOWN;           \
    static constexpr auto kHealthy = ns::HEALTHY;           \
    static constexpr auto kUnhealthy = ns::UNHEALTHY;       \
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

absl::Time DeadlineOf(const grpc::CallbackServerContext* context) {
  if (context->deadline() == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(context->deadline());
}

// One kubelet call: the kubelet's cancellation (or a closed connection)
// cancels the driver's CallContext at once.
class KubeletCall final : public grpc::ServerUnaryReactor {
 public:
  KubeletCall(std::shared_ptr<const TrackedCall> call, Logger logger)
      : call_(std::move(call)), logger_(std::move(logger)) {}
  void OnCancel() override {
    call_->CallerCancelled();
    logger_.InfoV(2, "Caller cancelled the call", {{"reason", std::string(call_->status().message())}});
  }
  void OnDone() override { delete this; }
  // Both reactions are trivial (a flag, a log line, a delete): gRPC may run
  // them on the thread that completes the call rather than hand each call's
  // OnDone to its executor, which cost a thread wake-up per call.
  bool InternalInlineable() override { return true; }

 private:
  const std::shared_ptr<const TrackedCall> call_;
  const Logger logger_;  // carries the method and request ID
};

// The v1 and v1beta1 DRA APIs have the same messages in different packages;
// v1 adds Device.share_id.
template <typename Api>
class DraService final : public Api::Service {
 public:
  DraService(ClaimPreparer& preparer, Executor& executor) : preparer_(preparer), executor_(executor) {}

  grpc::ServerUnaryReactor* NodePrepareResources(grpc::CallbackServerContext* context,
                                                 const typename Api::PrepareRequest* request,
                                                 typename Api::PrepareResponse* response) override {
    return Serve(context, "NodePrepareResources", Run::kPrepare, request->claims(),
                 [response](const ClaimOutcomes& outcomes) { Fill(outcomes, *response); });
  }

  grpc::ServerUnaryReactor* NodeUnprepareResources(grpc::CallbackServerContext* context,
                                                   const typename Api::UnprepareRequest* request,
                                                   typename Api::UnprepareResponse* response) override {
    return Serve(context, "NodeUnprepareResources", Run::kUnprepare, request->claims(),
                 [response](const ClaimOutcomes& outcomes) {
                   auto& claims = *response->mutable_claims();
                   for (const auto& [uid, outcome] : outcomes) claims[uid].set_error(outcome.error);
                 });
  }

 private:
  enum class Run { kPrepare, kUnprepare };
  using Done = ClaimPreparer::Done;

  // Begins the call on the gRPC thread (so that the kubelet's cancellation
  // reaches it from now on) and hands the rest to the executor; `answer`
  // writes the outcomes into the response before it is sent.
  template <typename Claims, typename Answer>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context, const char* method, Run run,
                                  const Claims& claims, Answer answer) {
    CallTracker::Call call = preparer_.BeginCall(method, DeadlineOf(context));
    auto* reactor = new KubeletCall(call.tracked(), call.context().logger());
    executor_.Post([this, run, refs = ToRefs(claims), answer, reactor, call = std::move(call)]() mutable {
      Done done = [answer, reactor](absl::StatusOr<ClaimOutcomes> outcomes) {
        if (!outcomes.ok()) return reactor->Finish(ToGrpc(outcomes.status()));
        answer(*outcomes);
        reactor->Finish(grpc::Status::OK);
      };
      switch (run) {
        case Run::kPrepare:
          return preparer_.Prepare(std::move(refs), std::move(call), std::move(done));
        case Run::kUnprepare:
          return preparer_.Unprepare(std::move(refs), std::move(call), std::move(done));
      }
    });
    return reactor;
  }

  static void Fill(const ClaimOutcomes& outcomes, typename Api::PrepareResponse& response) {
    auto& claims = *response.mutable_claims();
    for (const auto& [uid, outcome] : outcomes) {
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
  }

  ClaimPreparer& preparer_;
  Executor& executor_;
};

// One NodeWatchResources stream: the current list at once, then each newer
// one, written as the broadcaster announces it. Owns itself until OnDone.
template <typename Api>
class HealthWatch final : public grpc::ServerWriteReactor<typename Api::Response>, public HealthBroadcaster::Watcher {
 public:
  static HealthWatch* Start(HealthBroadcaster& health) {
    auto watch = std::shared_ptr<HealthWatch>(new HealthWatch(health));
    watch->self_ = watch;
    health.AddWatcher(watch);
    watch->Pump();
    return watch.get();
  }

  void HealthChanged() override { Pump(); }

  void OnWriteDone(bool ok) override {
    {
      dra::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) finish_ = grpc::Status(grpc::StatusCode::CANCELLED, "health watcher went away");
    }
    Pump();
  }

  void OnCancel() override {
    {
      dra::MutexLock lock(&mu_);
      if (!finish_.has_value()) finish_ = grpc::Status(grpc::StatusCode::CANCELLED, "health watcher went away");
    }
    Pump();
  }

  void OnDone() override {
    std::shared_ptr<HealthWatch> self = std::move(self_);  // freed when the last notification returns
  }

 private:
  explicit HealthWatch(HealthBroadcaster& health) : health_(health) {}

  // Starts the next write, or finishes the stream, unless a write is in
  // flight (gRPC allows one at a time, and Finish only after it).
  void Pump() {
    dra::ReleasableMutexLock lock(&mu_);
    if (finished_ || writing_) return;
    if (!finish_.has_value() && health_.shut_down()) {
      finish_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "DRA plugin is shutting down");
    }
    if (finish_.has_value()) {
      finished_ = true;
      const grpc::Status status = *finish_;
      lock.Release();
      this->Finish(status);
      return;
    }
    std::optional<HealthBroadcaster::Snapshot> snapshot = health_.Newer(seen_);
    if (!snapshot.has_value()) return;
    seen_ = snapshot->version;
    response_ = ToResponse(snapshot->devices);
    writing_ = true;
    lock.Release();
    this->StartWrite(&response_);
  }

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
  std::shared_ptr<HealthWatch> self_;
  dra::Mutex mu_;
  uint64_t seen_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_ ABSL_GUARDED_BY(mu_);  // why the stream ends, once known
  typename Api::Response response_;  // the write in flight: set under mu_ while writing_ is false
};

// The health APIs v1 and v1alpha1 are identical but for their package.
template <typename Api>
class HealthService final : public Api::Service {
 public:
  explicit HealthService(HealthBroadcaster& health) : health_(health) {}

  grpc::ServerWriteReactor<typename Api::Response>* NodeWatchResources(grpc::CallbackServerContext*,
                                                                       const typename Api::Request*) override {
    return HealthWatch<Api>::Start(health_);
  }

 private:
  HealthBroadcaster& health_;
};

class RegistrationService final : public pluginregistration::Registration::CallbackService {
 public:
  RegistrationService(RegistrationInfo info, Executor& executor,
                      std::function<void(const RegistrationStatus&)> on_status)
      : info_(std::move(info)), executor_(executor), on_status_(std::move(on_status)) {}

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context, const pluginregistration::InfoRequest*,
                                    pluginregistration::PluginInfo* response) override {
    response->set_type("DRAPlugin");
    response->set_name(info_.driver_name);
    response->set_endpoint(info_.endpoint);
    for (const std::string& version : info_.supported_versions) response->add_supported_versions(version);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* NotifyRegistrationStatus(grpc::CallbackServerContext* context,
                                                     const pluginregistration::RegistrationStatus* request,
                                                     pluginregistration::RegistrationStatusResponse*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    executor_.Post([this, request, reactor] {
      on_status_(RegistrationStatus{true, request->plugin_registered(), request->error()});
      if (!request->plugin_registered()) {
        reactor->Finish(
            grpc::Status(grpc::StatusCode::UNKNOWN, absl::StrCat("failed registration process: ", request->error())));
      } else {
        reactor->Finish(grpc::Status::OK);
      }
    });
    return reactor;
  }

 private:
  const RegistrationInfo info_;
  Executor& executor_;
  const std::function<void(const RegistrationStatus&)> on_status_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewDraV1Service(ClaimPreparer& preparer, Executor& executor) {
  return std::make_unique<DraService<DraV1>>(preparer, executor);
}
std::unique_ptr<grpc::Service> NewDraV1beta1Service(ClaimPreparer& preparer, Executor& executor) {
  return std::make_unique<DraService<DraV1beta1>>(preparer, executor);
}
std::unique_ptr<grpc::Service> NewHealthV1Service(HealthBroadcaster& health) {
  return std::make_unique<HealthService<HealthV1>>(health);
}
std::unique_ptr<grpc::Service> NewHealthV1alpha1Service(HealthBroadcaster& health) {
  return std::make_unique<HealthService<HealthV1alpha1>>(health);
}
std::unique_ptr<grpc::Service> NewRegistrationService(RegistrationInfo info, Executor& executor,
                                                      std::function<void(const RegistrationStatus&)> on_status) {
  return std::make_unique<RegistrationService>(std::move(info), executor, std::move(on_status));
}

}  // namespace dra::kubeletplugin::internal
