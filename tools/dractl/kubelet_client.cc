#include "dractl/kubelet_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>
#include <utility>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "dra-health/v1/api.grpc.pb.h"
#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "kubeletplugin/grpc_health_messages.h"
#include "pluginregistration/v1/api.grpc.pb.h"

// Spelled from the global namespace: inside dra::, "k8s" is dra::k8s.
namespace drapb_v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drapb_v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace healthpb_v1 = ::v1;
namespace healthpb_v1alpha1 = ::v1alpha1;
namespace registrationpb = ::pluginregistration;

namespace dra::kubeletclient {
namespace {

namespace kp = ::dra::kubeletplugin::internal;

// Debian builds abseil without ABSL_USES_STD_STRING_VIEW: absl::string_view
// and std::string_view do not convert, so absl calls get plain char strings.
constexpr char kDraPluginType[] = "DRAPlugin";
// The kubelet's servicesSupportedByKubelet, newest first.
constexpr std::array<const char*, 2> kKubeletDraServices = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& socket_path) {
  return grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials());
}

void SetTimeout(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

// "<socket>: <step>: <what went wrong>"
absl::Status StepError(absl::string_view socket, absl::string_view step, const absl::Status& cause) {
  return absl::Status(cause.code(), absl::StrCat(socket, ": ", step, ": ", cause.message()));
}

absl::Status StepError(absl::string_view socket, absl::string_view step, const grpc::Status& cause) {
  // gRPC and absl share the canonical status codes.
  const auto code = static_cast<absl::StatusCode>(cause.error_code());
  std::string message = absl::StrCat(socket, ": ", step, ": ", absl::StatusCodeToString(code));
  if (!cause.error_message().empty()) absl::StrAppend(&message, ": ", cause.error_message());
  return absl::Status(code, message);
}

// Why nothing accepts connections at `socket_path`, for the "connect" step.
std::string DescribeUnreachableSocket(const std::string& socket_path) {
  struct stat info {};
  if (stat(socket_path.c_str(), &info) != 0) return std::strerror(errno);
  if (!S_ISSOCK(info.st_mode)) return "not a Unix socket";
  return "connection refused";
}

// Connects `channel` eagerly so that a dead socket fails as "connect" rather
// than as the first call.
absl::Status Connect(grpc::Channel& channel, const std::string& socket_path, absl::Time deadline) {
  while (true) {
    const grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY) return absl::OkStatus();
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
      return absl::UnavailableError(DescribeUnreachableSocket(socket_path));
    }
    if (!channel.WaitForStateChange(state, absl::ToChronoTime(deadline))) {
      return absl::DeadlineExceededError("no connection before the deadline");
    }
  }
}

// Go's %q of a []string: ["a" "b"].
template <typename Strings>
std::string GoQuotedList(const Strings& items) {
  return absl::StrCat(
      "[",
      absl::StrJoin(items, " ",
                    [](std::string* out, const auto& item) { absl::StrAppend(out, "\"", absl::CEscape(item), "\""); }),
      "]");
}

// Builds a NodePrepare/NodeUnprepare request for `claims`, calls `method`
// and names `method_name` in errors.
template <typename Stub, typename Request, typename Response>
absl::StatusOr<Response> CallWithClaims(const std::string& endpoint, absl::string_view method_name, Stub& stub,
                                        grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                                        std::span<const k8s::ClaimRef> claims, absl::Duration timeout) {
  Request request;
  for (const k8s::ClaimRef& ref : claims) {
    auto* claim = request.add_claims();
    claim->set_namespace_(ref.namespace_);
    claim->set_name(ref.name);
    claim->set_uid(ref.uid);
  }
  Response response;
  grpc::ClientContext context;
  SetTimeout(context, timeout);
  const grpc::Status status = (stub.*method)(&context, request, &response);
  if (!status.ok()) return StepError(endpoint, method_name, status);
  return response;
}

template <typename Response>
std::map<std::string, PrepareOutcome> ToPrepareOutcomes(const Response& response) {
  std::map<std::string, PrepareOutcome> outcomes;
  for (const auto& [uid, claim] : response.claims()) {
    PrepareOutcome& outcome = outcomes[uid];
    outcome.error = claim.error();
    for (const auto& device : claim.devices()) {
      PreparedDevice& prepared = outcome.devices.emplace_back();
      prepared.request_names.assign(device.request_names().begin(), device.request_names().end());
      prepared.pool_name = device.pool_name();
      prepared.device_name = device.device_name();
      prepared.cdi_device_ids.assign(device.cdi_device_ids().begin(), device.cdi_device_ids().end());
      if constexpr (requires { device.has_share_id(); }) {  // v1 only
        if (device.has_share_id()) prepared.share_id = device.share_id();
      }
    }
  }
  return outcomes;
}

template <typename Response>
std::map<std::string, std::string> ToUnprepareErrors(const Response& response) {
  std::map<std::string, std::string> errors;
  for (const auto& [uid, claim] : response.claims()) errors[uid] = claim.error();
  return errors;
}

template <typename Response>
std::vector<DeviceHealthEntry> ToHealthEntries(const Response& response) {
  std::vector<DeviceHealthEntry> entries;
  for (const auto& device : response.devices()) {
    entries.push_back(DeviceHealthEntry{
        .pool_name = device.device().pool_name(),
        .device_name = device.device().device_name(),
        // Found by argument-dependent lookup in the API version's namespace.
        .health = HealthStatus_Name(device.health()),
        .message = device.message(),
        .last_updated_time = device.last_updated_time(),
        .health_check_timeout_seconds = device.health_check_timeout_seconds(),
    });
  }
  return entries;
}

// A NodeWatchResources call read by its own thread into a queue of lists.
template <typename Response>
class ThreadedHealthStream final : public HealthStream {
 public:
  using StartCall = std::function<std::unique_ptr<grpc::ClientReader<Response>>(grpc::ClientContext*)>;

  // `channel` is kept alive for as long as the call runs.
  ThreadedHealthStream(std::string endpoint, std::shared_ptr<grpc::Channel> channel, const StartCall& start)
      : endpoint_(std::move(endpoint)), channel_(std::move(channel)), reader_(start(&context_)) {
    reader_thread_ = std::thread([this] { ReadUntilEnd(); });
  }

  ~ThreadedHealthStream() override {
    Cancel();
    reader_thread_.join();
  }

  absl::StatusOr<std::vector<DeviceHealthEntry>> Next(absl::Duration timeout) override {
    const absl::Time until = absl::Now() + timeout;
    dra::MutexLock lock(&mu_);
    while (!HasNews() && !news_.WaitWithDeadline(&mu_, until)) {
    }
    if (!HasNews()) {
      return absl::DeadlineExceededError(
          absl::StrCat(endpoint_, ": NodeWatchResources: no health list within ", absl::FormatDuration(timeout)));
    }
    if (lists_.empty()) return end_status_;
    std::vector<DeviceHealthEntry> next = std::move(lists_.front());
    lists_.pop_front();
    return next;
  }

  void Cancel() override { context_.TryCancel(); }

 private:
  bool HasNews() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !lists_.empty() || ended_; }

  void ReadUntilEnd() {
    Response response;
    while (reader_->Read(&response)) {
      std::vector<DeviceHealthEntry> list = ToHealthEntries(response);
      dra::MutexLock lock(&mu_);
      lists_.push_back(std::move(list));
      news_.Signal();
    }
    const grpc::Status status = reader_->Finish();
    dra::MutexLock lock(&mu_);
    end_status_ = status.ok()
                      ? StepError(endpoint_, "NodeWatchResources", absl::OutOfRangeError("the plugin ended the stream"))
                      : StepError(endpoint_, "NodeWatchResources", status);
    ended_ = true;
    news_.SignalAll();
  }

  const std::string endpoint_;
  const std::shared_ptr<grpc::Channel> channel_;
  grpc::ClientContext context_;
  const std::unique_ptr<grpc::ClientReader<Response>> reader_;

  dra::Mutex mu_;
  dra::CondVar news_;
  std::deque<std::vector<DeviceHealthEntry>> lists_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);

  std::thread reader_thread_;
};

constexpr std::array<const char*, 4> kServingStatusNames = {"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"};

class GrpcDraClient final : public DraClient {
 public:
  explicit GrpcDraClient(std::string endpoint)
      : endpoint_(std::move(endpoint)),
        channel_(NewChannel(endpoint_)),
        dra_v1_(drapb_v1::DRAPlugin::NewStub(channel_)),
        dra_v1beta1_(drapb_v1beta1::DRAPlugin::NewStub(channel_)),
        health_v1_(healthpb_v1::DRAResourceHealth::NewStub(channel_)),
        health_v1alpha1_(healthpb_v1alpha1::DRAResourceHealth::NewStub(channel_)),
        generic_(channel_) {}

  absl::StatusOr<std::map<std::string, PrepareOutcome>> NodePrepareResources(DraApi api,
                                                                             std::span<const k8s::ClaimRef> claims,
                                                                             absl::Duration timeout) override {
    switch (api) {
      case DraApi::kV1:
        return Prepare(*dra_v1_, claims, timeout);
      case DraApi::kV1beta1:
        return Prepare(*dra_v1beta1_, claims, timeout);
    }
    return absl::InvalidArgumentError("unknown DRA API version");
  }

  absl::StatusOr<std::map<std::string, std::string>> NodeUnprepareResources(DraApi api,
                                                                            std::span<const k8s::ClaimRef> claims,
                                                                            absl::Duration timeout) override {
    switch (api) {
      case DraApi::kV1:
        return Unprepare(*dra_v1_, claims, timeout);
      case DraApi::kV1beta1:
        return Unprepare(*dra_v1beta1_, claims, timeout);
    }
    return absl::InvalidArgumentError("unknown DRA API version");
  }

  absl::StatusOr<std::unique_ptr<HealthStream>> WatchHealth(HealthApi api) override {
    switch (api) {
      case HealthApi::kV1:
        return Watch<healthpb_v1::NodeWatchResourcesResponse>(*health_v1_);
      case HealthApi::kV1alpha1:
        return Watch<healthpb_v1alpha1::NodeWatchResourcesResponse>(*health_v1alpha1_);
    }
    return absl::InvalidArgumentError("unknown health API version");
  }

  absl::StatusOr<std::string> CheckGrpcHealth(const std::string& service, absl::Duration timeout) override {
    grpc::ClientContext context;
    SetTimeout(context, timeout);
    const grpc::ByteBuffer request = kp::EncodeHealthCheckRequest(service);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    generic_.UnaryCall(&context, kp::kGrpcHealthCheckMethod, grpc::StubOptions(), &request, &response,
                       [&done](grpc::Status status) { done.set_value(std::move(status)); });
    const grpc::Status status = done.get_future().get();
    if (!status.ok()) return StepError(endpoint_, "Health/Check", status);
    const std::optional<uint64_t> serving = kp::DecodeHealthCheckResponse(response);
    if (!serving.has_value()) {
      return StepError(endpoint_, "Health/Check", absl::DataLossError("malformed HealthCheckResponse"));
    }
    if (*serving < kServingStatusNames.size()) return std::string(kServingStatusNames[*serving]);
    return absl::StrCat("status ", *serving);
  }

 private:
  template <typename Stub>
  absl::StatusOr<std::map<std::string, PrepareOutcome>> Prepare(Stub& stub, std::span<const k8s::ClaimRef> claims,
                                                                absl::Duration timeout) {
    auto response =
        CallWithClaims(endpoint_, "NodePrepareResources", stub, &Stub::NodePrepareResources, claims, timeout);
    if (!response.ok()) return response.status();
    return ToPrepareOutcomes(*response);
  }

  template <typename Stub>
  absl::StatusOr<std::map<std::string, std::string>> Unprepare(Stub& stub, std::span<const k8s::ClaimRef> claims,
                                                               absl::Duration timeout) {
    auto response =
        CallWithClaims(endpoint_, "NodeUnprepareResources", stub, &Stub::NodeUnprepareResources, claims, timeout);
    if (!response.ok()) return response.status();
    return ToUnprepareErrors(*response);
  }

  template <typename Response, typename Stub>
  std::unique_ptr<HealthStream> Watch(Stub& stub) {
    return std::make_unique<ThreadedHealthStream<Response>>(
        endpoint_, channel_, [&stub](grpc::ClientContext* context) { return stub.NodeWatchResources(context, {}); });
  }

  const std::string endpoint_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<drapb_v1::DRAPlugin::Stub> dra_v1_;
  const std::unique_ptr<drapb_v1beta1::DRAPlugin::Stub> dra_v1beta1_;
  const std::unique_ptr<healthpb_v1::DRAResourceHealth::Stub> health_v1_;
  const std::unique_ptr<healthpb_v1alpha1::DRAResourceHealth::Stub> health_v1alpha1_;
  grpc::GenericStub generic_;
};

// A connected stub of the registration service at `socket_path`.
absl::StatusOr<std::unique_ptr<registrationpb::Registration::Stub>> ConnectRegistration(const std::string& socket_path,
                                                                                        absl::Duration timeout) {
  const std::shared_ptr<grpc::Channel> channel = NewChannel(socket_path);
  if (absl::Status connected = Connect(*channel, socket_path, absl::Now() + timeout); !connected.ok()) {
    return StepError(socket_path, "connect", connected);
  }
  return registrationpb::Registration::NewStub(channel);
}

absl::StatusOr<PluginInfo> GetInfo(registrationpb::Registration::Stub& stub, const std::string& socket_path,
                                   absl::Duration timeout) {
  registrationpb::PluginInfo info;
  grpc::ClientContext context;
  SetTimeout(context, timeout);
  const grpc::Status status = stub.GetInfo(&context, registrationpb::InfoRequest(), &info);
  if (!status.ok()) return StepError(socket_path, "GetInfo", status);
  return PluginInfo{
      .type = info.type(),
      .name = info.name(),
      .endpoint = info.endpoint().empty() ? socket_path : info.endpoint(),
      .supported_versions = {info.supported_versions().begin(), info.supported_versions().end()},
  };
}

}  // namespace

absl::StatusOr<std::vector<std::string>> DiscoverSockets(const std::string& registry_dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path dir = fs::absolute(registry_dir, error);
  fs::directory_iterator entry;
  if (!error) entry = fs::directory_iterator(dir, error);
  std::vector<std::string> sockets;
  for (; !error && entry != fs::directory_iterator(); entry.increment(error)) {
    std::error_code vanished;  // an entry removed meanwhile is no socket
    if (!entry->path().filename().string().starts_with(".") && entry->is_socket(vanished)) {
      sockets.push_back(entry->path().string());
    }
  }
  if (error) return absl::ErrnoToStatus(error.value(), absl::StrCat("list registry dir ", registry_dir));
  std::sort(sockets.begin(), sockets.end());
  return sockets;
}

absl::StatusOr<std::string> ValidateDraPluginInfo(const PluginInfo& info) {
  if (info.type != kDraPluginType) {
    return absl::InvalidArgumentError(absl::StrCat("no handler registered for plugin type: ", info.type));
  }
  if (info.name.empty()) return absl::InvalidArgumentError("empty DRA driver name");
  if (!info.endpoint.starts_with("/")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("endpoint %s of DRA driver plugin %s is not an absolute path", info.endpoint, info.name));
  }
  const std::string context = absl::StrFormat("invalid supported gRPC versions of DRA driver plugin %s at endpoint %s",
                                              info.name, info.endpoint);
  if (info.supported_versions.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": empty list of supported gRPC services (aka supported versions)"));
  }
  for (const std::string& service : info.supported_versions) {
    if (std::find(kKubeletDraServices.begin(), kKubeletDraServices.end(), service) != kKubeletDraServices.end()) {
      return service;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: none of services supported by the plugin (%s) are supported by the kubelet (%s)", context,
                      GoQuotedList(info.supported_versions), GoQuotedList(kKubeletDraServices)));
}

absl::StatusOr<PluginInfo> GetPluginInfo(const std::string& socket_path, absl::Duration timeout) {
  absl::StatusOr<std::unique_ptr<registrationpb::Registration::Stub>> stub = ConnectRegistration(socket_path, timeout);
  if (!stub.ok()) return stub.status();
  return GetInfo(**stub, socket_path, timeout);
}

Registration RegisterPlugin(const std::string& socket_path, absl::Duration timeout) {
  Registration result;
  result.socket_path = socket_path;
  absl::StatusOr<std::unique_ptr<registrationpb::Registration::Stub>> stub = ConnectRegistration(socket_path, timeout);
  if (!stub.ok()) {
    result.status = stub.status();
    return result;
  }
  absl::StatusOr<PluginInfo> info = GetInfo(**stub, socket_path, timeout);
  if (!info.ok()) {
    result.status = info.status();
    return result;
  }
  result.info = *std::move(info);

  registrationpb::RegistrationStatus verdict;
  if (absl::StatusOr<std::string> chosen = ValidateDraPluginInfo(result.info); chosen.ok()) {
    result.chosen_service = *std::move(chosen);
    verdict.set_plugin_registered(true);
  } else {
    result.status = StepError(socket_path, "validate", chosen.status());
    verdict.set_plugin_registered(false);
    verdict.set_error(
        absl::StrCat("RegisterPlugin error -- plugin validation failed with err: ", chosen.status().message()));
  }

  grpc::ClientContext context;
  SetTimeout(context, timeout);
  registrationpb::RegistrationStatusResponse ignored;
  const grpc::Status notified = (*stub)->NotifyRegistrationStatus(&context, verdict, &ignored);
  if (!notified.ok()) {
    const absl::Status notify_error = StepError(socket_path, "NotifyRegistrationStatus", notified);
    result.status =
        result.status.ok()
            ? notify_error
            : absl::Status(result.status.code(), absl::StrCat(result.status.message(), "; ", notify_error.message()));
  }
  return result;
}

std::unique_ptr<DraClient> DraClient::Create(const std::string& endpoint) {
  return std::make_unique<GrpcDraClient>(endpoint);
}

absl::StatusOr<k8s::ClaimRef> ParseClaimArg(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, '/');
  if (parts.size() != 3 || std::any_of(parts.begin(), parts.end(), [](const auto& part) { return part.empty(); })) {
    return absl::InvalidArgumentError(absl::StrCat("claim \"", text, "\": want NAMESPACE/NAME/UID"));
  }
  return k8s::ClaimRef{.namespace_ = parts[0], .name = parts[1], .uid = parts[2]};
}

}  // namespace dra::kubeletclient
