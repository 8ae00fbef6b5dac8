#include "dra/kubeletplugin/helper.h"

#include <sys/stat.h>

#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/annotate.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "dra/k8s/validation.h"
#include "dra/kubeletplugin/api_claim_source.h"
#include "fileutil/directories.h"
#include "kubeletplugin/call_serializer.h"
#include "kubeletplugin/call_tracker.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/claim_files.h"
#include "kubeletplugin/claim_preparer.h"
#include "kubeletplugin/error_reporting_driver.h"
#include "kubeletplugin/executor.h"
#include "kubeletplugin/grpc_services.h"
#include "kubeletplugin/health_broadcaster.h"
#include "kubeletplugin/health_staleness.h"
#include "kubeletplugin/http_server.h"
#include "kubeletplugin/metrics.h"
#include "kubeletplugin/orphan_reaper.h"
#include "kubeletplugin/plugin_sockets.h"
#include "kubeletplugin/socket_paths.h"

namespace dra::kubeletplugin {

using internal::CallSerializer;
using internal::Checkpoint;
using internal::ClaimPreparer;
using internal::HealthBroadcaster;
using internal::SocketPaths;

namespace {

constexpr mode_t kDataDirMode = 0750;
// Threads for the work of kubelet calls (see executor.h): as many as CPUs
// for work that runs, more while it blocks. The bound is for a burst of pod
// starts whose claim fetches or driver calls block: more of them in flight
// at once than this wait in a queue.
constexpr size_t kMaxCallThreads = 32;

absl::Status ValidateOptions(const Options& options) {
  if (k8s::FieldErrors errors = k8s::ValidateDriverName(options.driver_name, "options.driver_name"); !errors.empty()) {
    return absl::InvalidArgumentError(errors.front().ToString());
  }
  if (!options.rolling_update_uid.empty() && !options.registrar_socket_name.empty()) {
    return absl::InvalidArgumentError(
        "options.rolling_update_uid and options.registrar_socket_name are mutually exclusive");
  }
  if (!options.rolling_update_uid.empty() && options.checkpoint && !options.serialize) {
    return absl::InvalidArgumentError(
        "options.serialize: must stay on with options.rolling_update_uid while options.checkpoint is on: both "
        "instances share the checkpoint file");
  }
  if (!options.services.dra_v1 && !options.services.dra_v1beta1) {
    return absl::InvalidArgumentError("options.services: no supported DRA gRPC API is enabled");
  }
  if (options.claim_source == nullptr && options.kube_client == nullptr) {
    return absl::InvalidArgumentError("options.claim_source: Required value: set it or options.kube_client");
  }
  if (options.device_metadata.enabled) {
    if (!options.cdi.enabled) {
      return absl::InvalidArgumentError(
          "options.device_metadata.enabled: needs options.cdi.enabled: the metadata files are mounted through CDI "
          "specs");
    }
    if (absl::Status status = internal::ClaimMetadataFiles::Check(options.device_metadata.versions); !status.ok()) {
      return status;
    }
  }
  if (options.encode_foreign_checkpoint && !options.adopt_checkpoint) {
    return absl::InvalidArgumentError(
        "options.encode_foreign_checkpoint: needs options.adopt_checkpoint, to read that driver's checkpoint back");
  }
  if (options.health_resend_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("options.health_resend_interval: Invalid value: \"",
                                                   absl::FormatDuration(options.health_resend_interval),
                                                   "\": must not be negative"));
  }
  if (options.orphan_check_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("options.orphan_check_interval: Invalid value: \"",
                                                   absl::FormatDuration(options.orphan_check_interval),
                                                   "\": must not be negative"));
  }
  struct stat st;
  if (stat(options.registrar_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("options.registrar_dir: ", options.registrar_dir, " is not an existing directory"));
  }
  return absl::OkStatus();
}

// The claim files options.cdi and options.device_metadata ask for, with the
// node-wide CDI specs written. The spec kind is "<vendor>/<class>", vendor
// defaulting to the driver name.
absl::StatusOr<std::unique_ptr<internal::ClaimFiles>> MakeClaimFiles(const Options& options) {
  if (!options.cdi.enabled) return std::make_unique<internal::ClaimFiles>(nullptr, nullptr);
  const std::string& vendor = options.cdi.vendor.empty() ? options.driver_name : options.cdi.vendor;
  absl::StatusOr<cdi::Kind> kind = cdi::ParseKind(absl::StrCat(vendor, "/", options.cdi.class_name));
  if (!kind.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("options.cdi.vendor/class_name: ", kind.status().message()));
  }
  absl::StatusOr<std::unique_ptr<internal::ClaimCdiSpecs>> specs = internal::ClaimCdiSpecs::Create(
      *std::move(kind), options.cdi.dir, options.cdi.claim_format.value_or(options.cdi.dir.format),
      options.cdi.node_specs);
  if (!specs.ok()) return specs.status();
  std::unique_ptr<internal::ClaimMetadataFiles> metadata;
  if (options.device_metadata.enabled) {
    metadata = std::make_unique<internal::ClaimMetadataFiles>(options.driver_name, options.plugin_data_dir,
                                                              options.cdi.dir, options.device_metadata.versions);
  }
  auto files = std::make_unique<internal::ClaimFiles>(*std::move(specs), std::move(metadata));
  if (absl::Status status = files->WriteNodeSpecs(/*only_missing=*/false); !status.ok()) return status;
  return files;
}

}  // namespace

// Shared: a driver call that outlives Stop()'s grace keeps it alive (see Stop).
class Helper::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(Driver& driver, Options options) : driver_(driver, metrics_, options.logger), options_(std::move(options)) {}
  ~Impl() { Stop(); }

  // Wiring only: each step below, in order.
  absl::Status Start();
  void Stop();
  int Wait(const TerminationSignals& signals);
  absl::Status Health() const;
  RegistrationStatus registration() const { return sockets_ ? sockets_->registration() : RegistrationStatus{}; }
  RegistrationStatus WaitForRegistration(absl::Duration timeout) const;
  void PublishHealth(std::vector<DeviceHealth> devices) { health_.Publish(std::move(devices)); }
  absl::Status PublishResources(resourceslice::DriverResources resources);
  resourceslice::PublisherStats ResourceSliceStats() const;
  absl::Status UpdateRequestMetadata(const k8s::ClaimRef& claim, const std::string& request,
                                     const std::vector<Device>& devices);
  int http_port() const { return http_server_ ? http_server_->port() : 0; }
  const SocketPaths& paths() const { return paths_; }

 private:
  // Defaults filled in, the data dir created, socket paths computed.
  absl::Status ResolveOptions();
  // Checkpoint, serializer, claim files and the preparer over them.
  absl::Status OpenNodeState();
  // Gives the driver the claims the checkpoint records as prepared, and
  // repairs the claims' files (not fatal: a file left behind costs a file,
  // not a container, and a prepared claim's spec is written again when the
  // kubelet asks for it).
  void RestorePreparedClaims();
  // Logs and counts a claim whose checkpoint entry was quarantined.
  void ReportQuarantined(const k8s::ClaimRef& claim, const std::string& why);
  // The two sockets' servers; returns the advertised versions.
  absl::StatusOr<std::vector<std::string>> StartServers();
  void OnRegistration(const RegistrationStatus& status);
  absl::Status StartHttpServer();
  internal::HttpResponse ServeHttp(const std::string& path);
  absl::Status StartOrphanReaper();
  absl::Status StartHealthStalenessCheck();
  bool stopped() const;

  internal::HelperMetrics metrics_;
  internal::ErrorReportingDriver driver_;
  Options options_;
  SocketPaths paths_;
  std::unique_ptr<Checkpoint> checkpoint_;  // Checkpoint::Off() with options.checkpoint off
  std::unique_ptr<CallSerializer> serializer_;
  internal::CallTracker calls_{options_.logger};
  // The one pool for parallel work: the preparer's claim fetches, the
  // publisher's writes.
  const std::shared_ptr<WorkPool> work_pool_ = std::make_shared<WorkPool>(internal::kMaxConcurrentFetches - 1);
  std::unique_ptr<internal::ClaimFiles> claim_files_;
  std::unique_ptr<ClaimPreparer> preparer_;
  std::unique_ptr<internal::OrphanReaper> reaper_;  // null when off
  HealthBroadcaster health_;
  std::shared_ptr<internal::HealthStalenessCheck> health_staleness_;  // null without a health service
  mutable dra::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<internal::HttpServer> http_server_;
  std::unique_ptr<internal::PluginSockets> sockets_;
  // Destroyed first: its threads are joined before anything they use goes,
  // the servers included.
  internal::Executor executor_{{.max_threads = kMaxCallThreads}};

  // Started by the first PublishResources; gone after Stop().
  mutable dra::Mutex publisher_mu_;
  std::unique_ptr<resourceslice::Publisher> publisher_ ABSL_GUARDED_BY(publisher_mu_);
  bool publishing_closed_ ABSL_GUARDED_BY(publisher_mu_) = false;
};

absl::Status Helper::Impl::Start() {
  if (absl::Status status = ValidateOptions(options_); !status.ok()) return status;
  if (absl::Status status = ResolveOptions(); !status.ok()) return status;
  if (absl::Status status = OpenNodeState(); !status.ok()) return status;
  RestorePreparedClaims();
  absl::StatusOr<std::vector<std::string>> versions = StartServers();
  if (!versions.ok()) return versions.status();
  if (absl::Status status = StartHttpServer(); !status.ok()) return status;
  if (absl::Status status = StartOrphanReaper(); !status.ok()) return status;
  if (absl::Status status = StartHealthStalenessCheck(); !status.ok()) return status;
  options_.logger.Info("DRA plugin started", {{"driver", options_.driver_name},
                                              {"registrar", paths_.registrar},
                                              {"endpoint", paths_.dra},
                                              {"versions", absl::StrJoin(*versions, ",")}});
  return absl::OkStatus();
}

absl::Status Helper::Impl::ResolveOptions() {
  if (options_.claim_source == nullptr) {
    options_.claim_source = std::make_shared<ApiClaimSource>(options_.kube_client);
  }
  if (options_.plugin_data_dir.empty()) {
    options_.plugin_data_dir = "/var/lib/kubelet/plugins/" + options_.driver_name;
  }
  if (absl::Status status = dra::internal::MakeDirectories(options_.plugin_data_dir, kDataDirMode); !status.ok()) {
    return base::Annotate(status, "options.plugin_data_dir");
  }
  paths_ = internal::ComputeSocketPaths(options_.driver_name, options_.registrar_dir, options_.plugin_data_dir,
                                        options_.rolling_update_uid, options_.registrar_socket_name,
                                        options_.dra_socket_name);
  return absl::OkStatus();
}

absl::Status Helper::Impl::OpenNodeState() {
  if (options_.checkpoint) {
    const std::string path = options_.plugin_data_dir + "/checkpoint.json";
    absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint =
        options_.encode_foreign_checkpoint
            ? Checkpoint::OpenBeside(options_.plugin_data_dir + "/dra-cpp-checkpoint",
                                     {path, options_.adopt_checkpoint, options_.encode_foreign_checkpoint})
            : Checkpoint::Open(path, options_.adopt_checkpoint);
    if (!checkpoint.ok()) return checkpoint.status();
    checkpoint_ = *std::move(checkpoint);
  } else {
    checkpoint_ = Checkpoint::Off();
  }
  const std::string lock_file = options_.rolling_update_uid.empty() ? "" : options_.plugin_data_dir + "/serialize.lock";
  absl::StatusOr<std::unique_ptr<CallSerializer>> serializer =
      CallSerializer::Create(options_.serialize, lock_file, executor_);
  if (!serializer.ok()) return serializer.status();
  serializer_ = *std::move(serializer);
  absl::StatusOr<std::unique_ptr<internal::ClaimFiles>> files = MakeClaimFiles(options_);
  if (!files.ok()) return files.status();
  claim_files_ = *std::move(files);
  preparer_ = std::make_unique<ClaimPreparer>(driver_, options_.driver_name, *options_.claim_source, *checkpoint_,
                                              /*checkpoint_shared=*/!options_.rolling_update_uid.empty(), *claim_files_,
                                              *serializer_, calls_, metrics_, *work_pool_, options_.device_exclusivity);
  return absl::OkStatus();
}

void Helper::Impl::RestorePreparedClaims() {
  if (!checkpoint_->records()) return;
  std::vector<PreparedClaim> prepared;
  for (internal::CheckpointEntry& entry : checkpoint_->Entries()) {
    if (entry.state != internal::ClaimState::kPrepared) continue;
    prepared.push_back({std::move(entry.claim), std::move(entry.devices), std::move(entry.driver_data)});
  }
  driver_.RestorePreparedClaims(prepared);
  const Checkpoint::Salvage& salvage = checkpoint_->salvage();
  for (const auto& [path, why] : salvage.kept_aside) {
    options_.logger.Error("Kept an unreadable checkpoint aside and started with what could be read of it",
                          {{"path", path},
                           {"err", why},
                           {"unreadableLines", absl::StrCat(salvage.unreadable_lines)},
                           {"unverifiedLines", absl::StrCat(salvage.unverified_lines)}});
  }
  for (const auto& [claim, why] : salvage.quarantined) ReportQuarantined(claim, why);
  absl::StatusOr<internal::ClaimFiles::Repaired> repaired = preparer_->RepairClaimFiles();
  if (!repaired.ok()) {
    driver_.HandleError(repaired.status(), ErrorSeverity::kRecoverable, "repair claim files");
    return;
  }
  for (const std::string& path : repaired->removed) {
    options_.logger.Info("Removed a file a crash left", {{"path", path}});
  }
  for (const std::string& uid : repaired->rewritten) {
    options_.logger.Info("Wrote a prepared claim's CDI spec again", {{"uid", uid}});
  }
  // Quarantined by the repair: its entry says why.
  std::vector<std::string> quarantined;
  for (const auto& [uid, why] : repaired->failed) quarantined.push_back(uid);
  for (const auto& [uid, devices] : repaired->unknown) quarantined.push_back(uid);
  for (const std::string& uid : quarantined) {
    const std::optional<internal::CheckpointEntry> entry = checkpoint_->Get(uid);
    if (entry.has_value() && !entry->quarantined.empty()) ReportQuarantined(entry->claim, entry->quarantined);
  }
  // Quarantined by an earlier start, and neither prepared nor unprepared since.
  for (const auto& [claim, why] : salvage.quarantined) quarantined.push_back(claim.uid);
  for (const internal::CheckpointEntry& entry : checkpoint_->Entries()) {
    if (entry.quarantined.empty() || absl::c_linear_search(quarantined, entry.claim.uid)) continue;
    options_.logger.Warning(
        "A claim's checkpoint entry is still quarantined: its devices stay held until the kubelet "
        "prepares the claim again or unprepares it",
        {{"claim", entry.claim.ToString()}, {"uid", entry.claim.uid}, {"err", entry.quarantined}});
  }
}

void Helper::Impl::ReportQuarantined(const k8s::ClaimRef& claim, const std::string& why) {
  metrics_.ObserveQuarantinedClaim();
  options_.logger.Error(
      "Quarantined a claim's checkpoint entry: its devices stay held until the kubelet prepares the claim again or "
      "unprepares it",
      {{"claim", claim.ToString()}, {"uid", claim.uid}, {"err", why}});
}

absl::StatusOr<std::vector<std::string>> Helper::Impl::StartServers() {
  // Supported versions in the Go helper's order: DRA first, then health.
  internal::PluginSockets::Config config;
  config.paths = paths_;
  std::vector<std::string>& versions = config.registration.supported_versions;
  if (options_.services.dra_v1) {
    config.dra_services.push_back(internal::NewDraV1Service(*preparer_, executor_));
    versions.push_back(internal::kDraV1Service);
    config.grpc_health_names.push_back(internal::kDraV1GrpcName);
  }
  if (options_.services.dra_v1beta1) {
    config.dra_services.push_back(internal::NewDraV1beta1Service(*preparer_, executor_));
    versions.push_back(internal::kDraV1beta1Service);
    config.grpc_health_names.push_back(internal::kDraV1beta1GrpcName);
  }
  if (driver_.ReportsDeviceHealth()) {
    if (options_.services.health_v1) {
      config.dra_services.push_back(internal::NewHealthV1Service(health_));
      versions.push_back(internal::kHealthV1Service);
    }
    if (options_.services.health_v1alpha1) {
      config.dra_services.push_back(internal::NewHealthV1alpha1Service(health_));
      versions.push_back(internal::kHealthV1alpha1Service);
    }
  }
  config.registration.driver_name = options_.driver_name;
  config.registration.endpoint = paths_.dra;
  std::vector<std::string> advertised = versions;
  absl::StatusOr<std::unique_ptr<internal::PluginSockets>> sockets = internal::PluginSockets::Start(
      std::move(config), executor_, [this](const RegistrationStatus& status) { OnRegistration(status); });
  if (!sockets.ok()) return sockets.status();
  sockets_ = *std::move(sockets);
  return advertised;
}

void Helper::Impl::OnRegistration(const RegistrationStatus& status) {
  if (status.registered) {
    options_.logger.Info("Registered with the kubelet", {{"driver", options_.driver_name}});
    return;
  }
  // The kubelet does not ask again while this socket exists; a restarted
  // driver registers anew.
  driver_.HandleError(
      absl::FailedPreconditionError(absl::StrCat("kubelet refused plugin registration: ", status.error)),
      ErrorSeverity::kFatal, "registration");
}

absl::Status Helper::Impl::StartHttpServer() {
  if (options_.http_endpoint.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<internal::HttpServer>> http =
      internal::HttpServer::Start(options_.http_endpoint, [this](const std::string& path) { return ServeHttp(path); });
  if (!http.ok()) return base::Annotate(http.status(), "options.http_endpoint");
  http_server_ = *std::move(http);
  return absl::OkStatus();
}

absl::Status Helper::Impl::StartOrphanReaper() {
  if (!checkpoint_->records() || options_.orphan_check_interval <= absl::ZeroDuration()) return absl::OkStatus();
  reaper_ = std::make_unique<internal::OrphanReaper>(
      *checkpoint_, *options_.claim_source, driver_,
      [this](const k8s::ClaimRef& ref) { return preparer_->UnprepareOrphan(ref); }, options_.orphan_check_interval,
      options_.logger);
  return reaper_->Start();
}

absl::Status Helper::Impl::StartHealthStalenessCheck() {
  if (!driver_.ReportsDeviceHealth() || !(options_.services.health_v1 || options_.services.health_v1alpha1)) {
    return absl::OkStatus();
  }
  health_staleness_ = std::make_shared<internal::HealthStalenessCheck>(health_, driver_, options_.logger,
                                                                       options_.health_resend_interval);
  health_.AddWatcher(health_staleness_);
  return health_staleness_->Start();
}

internal::HttpResponse Helper::Impl::ServeHttp(const std::string& path) {
  if (path == "/metrics") {
    internal::HelperMetrics::Gauges gauges;
    for (const internal::CheckpointEntry& entry : checkpoint_->Entries()) {
      if (entry.state == internal::ClaimState::kPrepared) ++gauges.prepared_claims;
    }
    gauges.checkpoint_writes = checkpoint_->writes();
    gauges.serialization_waiting_calls = serializer_->waiting();
    gauges.registered = registration().registered;
    {
      dra::MutexLock lock(&publisher_mu_);
      if (publisher_ != nullptr) gauges.slices = publisher_->Stats();
    }
    if (options_.kube_client != nullptr) gauges.api_requests = options_.kube_client->RequestCounts();
    std::string text = metrics_.Render(gauges);
    if (options_.extra_metrics) text += options_.extra_metrics();
    return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(text)};
  }
  if (path == "/healthz") {
    const absl::Status health = Health();
    if (!health.ok()) return {503, "text/plain; charset=utf-8", std::string(health.message()) + "\n"};
    return {200, "text/plain; charset=utf-8", "ok\n"};
  }
  return {404, "text/plain; charset=utf-8", "not found\n"};
}

bool Helper::Impl::stopped() const {
  dra::MutexLock lock(&mu_);
  return stopped_;
}

absl::Status Helper::Impl::Health() const {
  if (stopped()) return absl::UnavailableError("stopped");
  const RegistrationStatus status = registration();
  if (status.notified && !status.registered) {
    return absl::UnavailableError("kubelet refused registration: " + status.error);
  }
  // A socket someone deleted (or a server that stopped answering) leaves
  // the kubelet unable to reach the driver: restart it.
  for (const std::string* socket : {&paths_.registrar, &paths_.dra}) {
    if (socket->empty()) continue;
    if (absl::Status probe = internal::ProbeSocket(*socket); !probe.ok()) {
      return absl::UnavailableError(probe.message());
    }
  }
  return absl::OkStatus();
}

void Helper::Impl::Stop() {
  {
    dra::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  std::unique_ptr<resourceslice::Publisher> publisher;
  {
    dra::MutexLock lock(&publisher_mu_);
    publishing_closed_ = true;
    publisher = std::move(publisher_);
  }
  publisher.reset();  // stops it; the slices stay unless remove_on_stop
  // No orphan is unprepared while the servers drain.
  if (reaper_) reaper_->Stop();
  if (health_staleness_) health_staleness_->Stop();
  // Driver calls learn through their CallContext that they should return.
  calls_.CancelAll(absl::UnavailableError("the DRA plugin is stopping"));
  // The registration socket goes first so that the kubelet stops routing
  // calls here before the DRA endpoint disappears.
  const absl::Time deadline = absl::Now() + options_.shutdown_grace;
  if (sockets_) sockets_->StopRegistrationServer(deadline);
  if (!paths_.registrar.empty()) internal::RemoveSocket(paths_.registrar);
  health_.Shutdown();
  if (sockets_) {
    const std::vector<std::string> running = calls_.WaitIdle(deadline);
    // gRPC cannot shut down under a call that is not finished: a thread
    // waits for it instead, holding this Impl (and so the executor, and the
    // checkpoint the call will write) until the call is done.
    std::shared_ptr<Impl> self = weak_from_this().lock();
    if (running.empty() || self == nullptr) {
      sockets_->StopDraServer(deadline);
    } else {
      options_.logger.Error(
          "Driver calls still running after the shutdown grace; stopping without waiting for them",
          {{"grace", absl::FormatDuration(options_.shutdown_grace)}, {"calls", absl::StrJoin(running, ", ")}});
      std::thread shutdown([self = std::move(self)] { self->sockets_->StopDraServer(absl::InfiniteFuture()); });
      base::NameThread(shutdown, "dra-shutdown");
      shutdown.detach();
    }
  }
  if (!paths_.dra.empty()) internal::RemoveSocket(paths_.dra);
  http_server_.reset();
}

absl::Status Helper::Impl::PublishResources(resourceslice::DriverResources resources) {
  dra::MutexLock lock(&publisher_mu_);
  if (publishing_closed_) return absl::FailedPreconditionError("PublishResources: the Helper is stopped");
  if (publisher_ == nullptr) {
    if (options_.kube_client == nullptr) {
      return absl::FailedPreconditionError("PublishResources: options.kube_client: Required value");
    }
    resourceslice::Options options;
    static_cast<resourceslice::PublishingOptions&>(options) = options_.resource_slices;
    options.driver_name = options_.driver_name;
    options.node_name = options_.node_name;
    options.logger = options_.logger;
    options.work_pool = work_pool_;
    absl::StatusOr<std::unique_ptr<resourceslice::Publisher>> started = resourceslice::Publisher::Start(
        options_.kube_client, std::move(options), [this](const absl::Status& status, std::string_view context) {
          // As in the Go helper: neither retrying nor a restart heals a
          // refused slice, and outages heal by themselves.
          driver_.HandleError(status, ErrorSeverity::kRecoverable, "ResourceSlice publisher: " + std::string(context));
        });
    if (!started.ok()) return started.status();
    publisher_ = *std::move(started);
  }
  publisher_->Update(std::move(resources));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Helper>> Helper::Start(Driver& driver, Options options) {
  auto impl = std::make_shared<Impl>(driver, std::move(options));
  if (absl::Status status = impl->Start(); !status.ok()) {
    impl->Stop();
    return status;
  }
  return std::unique_ptr<Helper>(new Helper(std::move(impl)));
}

Helper::Helper(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
// Stop() runs here, not in ~Impl: it may have to share the Impl.
Helper::~Helper() { Stop(); }

void Helper::Stop() { impl_->Stop(); }

int Helper::Impl::Wait(const TerminationSignals& signals) {
  if (!driver_.WaitFor(signals)) signals.Wait();
  Stop();
  return driver_.fatal() ? 1 : 0;
}

RegistrationStatus Helper::Impl::WaitForRegistration(absl::Duration timeout) const {
  return sockets_ ? sockets_->WaitForRegistration(timeout) : RegistrationStatus{};
}

resourceslice::PublisherStats Helper::Impl::ResourceSliceStats() const {
  dra::MutexLock lock(&publisher_mu_);
  return publisher_ ? publisher_->Stats() : resourceslice::PublisherStats{};
}

absl::Status Helper::Impl::UpdateRequestMetadata(const k8s::ClaimRef& claim, const std::string& request,
                                                 const std::vector<Device>& devices) {
  if (stopped()) return absl::FailedPreconditionError("UpdateRequestMetadata: the Helper is stopped");
  return preparer_->UpdateRequestMetadata(claim, request, devices);
}

int Helper::Wait(const TerminationSignals& signals) { return impl_->Wait(signals); }
RegistrationStatus Helper::registration_status() const { return impl_->registration(); }
RegistrationStatus Helper::WaitForRegistration(absl::Duration timeout) const {
  return impl_->WaitForRegistration(timeout);
}
void Helper::PublishHealth(std::vector<DeviceHealth> devices) { impl_->PublishHealth(std::move(devices)); }
absl::Status Helper::PublishResources(resourceslice::DriverResources resources) {
  return impl_->PublishResources(std::move(resources));
}
absl::Status Helper::UpdateRequestMetadata(const k8s::ClaimRef& claim, const std::string& request,
                                           const std::vector<Device>& devices) {
  return impl_->UpdateRequestMetadata(claim, request, devices);
}
resourceslice::PublisherStats Helper::ResourceSliceStats() const { return impl_->ResourceSliceStats(); }
absl::Status Helper::Healthy() const { return impl_->Health(); }
int Helper::http_port() const { return impl_->http_port(); }
const std::string& Helper::registrar_socket_path() const { return impl_->paths().registrar; }
const std::string& Helper::dra_socket_path() const { return impl_->paths().dra; }

}  // namespace dra::kubeletplugin
