#include "nri_plugin.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace nri {

namespace {

// 1 << (event - 1) for each event handled.
constexpr int32_t EventMask(std::initializer_list<api::Event> events) {
  int32_t mask = 0;
  for (api::Event e : events) mask |= int32_t{1} << (static_cast<int>(e) - 1);
  return mask;
}

constexpr absl::Duration kRegisterTimeout = absl::Seconds(5);
constexpr absl::Duration kUpdateTimeout = absl::Seconds(10);

template <typename Message>
absl::StatusOr<Message> Parse(const std::string& method, const std::string& payload) {
  Message message;
  if (!message.ParseFromString(payload)) {
    return absl::InvalidArgumentError(absl::StrCat(method, ": undecodable ", Message::descriptor()->name()));
  }
  return message;
}

}  // namespace

Plugin::Plugin(PluginOptions options, Handler& handler, dra::Logger logger)
    : options_(std::move(options)), handler_(handler), logger_(std::move(logger)), thread_([this] { Run(); }) {}

Plugin::~Plugin() {
  {
    std::scoped_lock lock(mu_);
    stopping_ = true;
    if (conn_ != nullptr) conn_->Close();
  }
  cv_.notify_all();
  thread_.join();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

bool Plugin::connected() const {
  std::scoped_lock lock(mu_);
  return synchronized_;
}

bool Plugin::Sleep(absl::Duration d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, absl::ToChronoNanoseconds(d), [this] { return stopping_; });
}

bool Plugin::AcquireLock() {
  lock_fd_ = ::open(options_.lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) {
    logger_.Error("Cannot open the NRI lock file; connecting without it",
                  {{"path", options_.lock_path}, {"err", std::strerror(errno)}});
    return true;
  }
  bool logged = false;
  while (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      logger_.Error("Cannot lock the NRI lock file; connecting without it",
                    {{"path", options_.lock_path}, {"err", std::strerror(errno)}});
      return true;
    }
    if (!logged) {
      logger_.Info("Another instance is the node's NRI plugin; waiting for it to stop", {{"lock", options_.lock_path}});
      logged = true;
    }
    if (!Sleep(options_.min_backoff)) return false;
  }
  return true;
}

void Plugin::Run() {
  if (!options_.lock_path.empty() && !AcquireLock()) return;
  absl::Duration backoff = options_.min_backoff;
  std::string last_error;
  for (;;) {
    {
      std::scoped_lock lock(mu_);
      if (stopping_) return;
    }
    const absl::Time started = absl::Now();
    absl::Status ended = Session();
    {
      std::scoped_lock lock(mu_);
      conn_ = nullptr;
      synchronized_ = false;
      if (stopping_) return;
    }
    // Every new kind of failure is logged once; a connection that lasted
    // resets the backoff.
    if (std::string error(ended.message()); error != last_error) {
      logger_.Warning("Not connected to the runtime's NRI; retrying",
                      {{"socket", options_.socket_path}, {"err", error}});
      last_error = std::move(error);
    }
    backoff = absl::Now() - started > options_.max_backoff ? options_.min_backoff
                                                           : std::min(backoff * 2, options_.max_backoff);
    if (!Sleep(backoff)) return;
  }
}

absl::Status Plugin::Session() {
  api::SynchronizeRequest sync;  // the parts of a split Synchronize; reader thread only
  absl::StatusOr<std::unique_ptr<Connection>> dialed =
      Connection::Dial(options_.socket_path,
                       [this, &sync](const std::string& service, const std::string& method,
                                     const std::string& payload) { return Serve(service, method, payload, sync); });
  if (!dialed.ok()) return dialed.status();
  std::shared_ptr<Connection> conn = *std::move(dialed);
  {
    std::scoped_lock lock(mu_);
    if (stopping_) return absl::CancelledError("stopping");
    conn_ = conn;
  }
  api::RegisterPluginRequest registration;
  registration.set_plugin_name(options_.name);
  registration.set_plugin_idx(options_.index);
  absl::StatusOr<std::string> registered =
      conn->Call(kRuntimeService, "RegisterPlugin", registration.SerializeAsString(), kRegisterTimeout);
  if (!registered.ok()) {
    conn->Close();
    (void)conn->Wait();  // the reader is done with `sync`
    return absl::Status(registered.status().code(), absl::StrCat("RegisterPlugin: ", registered.status().message()));
  }
  return conn->Wait();
}

absl::StatusOr<std::string> Plugin::Serve(const std::string& service, const std::string& method,
                                          const std::string& payload, api::SynchronizeRequest& sync) {
  if (service != kPluginService) return absl::UnimplementedError(absl::StrCat("service ", service));
  if (method == "Configure") {
    absl::StatusOr<api::ConfigureRequest> request = Parse<api::ConfigureRequest>(method, payload);
    if (!request.ok()) return request.status();
    logger_.Info("Registered with the runtime's NRI",
                 {{"runtime", request->runtime_name() + " " + request->runtime_version()},
                  {"plugin", options_.index + "-" + options_.name}});
    api::ConfigureResponse response;
    response.set_events(EventMask({api::CREATE_CONTAINER, api::STOP_CONTAINER, api::REMOVE_CONTAINER}));
    return response.SerializeAsString();
  }
  if (method == "Synchronize") {
    absl::StatusOr<api::SynchronizeRequest> request = Parse<api::SynchronizeRequest>(method, payload);
    if (!request.ok()) return request.status();
    const bool more = request->more();
    sync.MergeFrom(*request);
    api::SynchronizeResponse response;
    if (more) {
      response.set_more(true);
      return response.SerializeAsString();
    }
    std::vector<api::ContainerUpdate> updates = handler_.Synchronize(
        {sync.pods().begin(), sync.pods().end()}, {sync.containers().begin(), sync.containers().end()});
    logger_.Info("Synchronized with the runtime's NRI",
                 {{"containers", absl::StrCat(sync.containers_size())}, {"updates", absl::StrCat(updates.size())}});
    sync.Clear();
    for (api::ContainerUpdate& update : updates) *response.add_update() = std::move(update);
    {
      std::scoped_lock lock(mu_);
      synchronized_ = true;
    }
    return response.SerializeAsString();
  }
  if (method == "CreateContainer" || method == "StopContainer" || method == "RemoveContainer") {
    absl::StatusOr<api::ContainerRequest> request = Parse<api::ContainerRequest>(method, payload);
    if (!request.ok()) return request.status();
    if (method == "CreateContainer") {
      return handler_.CreateContainer(request->pod(), request->container()).SerializeAsString();
    }
    if (method == "StopContainer") {
      handler_.StopContainer(request->pod(), request->container());
      return api::StopContainerResponse().SerializeAsString();
    }
    handler_.RemoveContainer(request->pod(), request->container());
    return api::Empty().SerializeAsString();
  }
  if (method == "Shutdown" || method == "StateChange") return api::Empty().SerializeAsString();
  return absl::UnimplementedError(absl::StrCat("method ", method));
}

absl::Status Plugin::UpdateContainers(const std::vector<api::ContainerUpdate>& updates) {
  std::shared_ptr<Connection> conn;
  {
    std::scoped_lock lock(mu_);
    if (!synchronized_) return absl::UnavailableError("not connected to the runtime's NRI");
    conn = conn_;
  }
  api::UpdateContainersRequest request;
  for (const api::ContainerUpdate& update : updates) *request.add_update() = update;
  absl::StatusOr<std::string> reply =
      conn->Call(kRuntimeService, "UpdateContainers", request.SerializeAsString(), kUpdateTimeout);
  if (!reply.ok()) return reply.status();
  api::UpdateContainersResponse response;
  if (!response.ParseFromString(*reply)) return absl::DataLossError("UpdateContainers: undecodable response");
  if (response.failed_size() == 0) return absl::OkStatus();
  std::vector<std::string> failed;
  for (const api::ContainerUpdate& update : response.failed()) failed.push_back(update.container_id());
  return absl::AbortedError(absl::StrCat("the runtime did not update containers ", absl::StrJoin(failed, ", ")));
}

}  // namespace nri
