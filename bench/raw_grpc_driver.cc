// bench_raw_grpc_driver: the floor under bench/go_vs_cpp.sh's dra-cpp column.
// The trivial driver's answers without the SDK: a plain grpc++ server with
// the kubelet's registration service and the DRA v1 service, claims looked up
// by UID in a read-only map preloaded with the same N claims (namespace
// "default", name "claim-<i>", UID "00000000-0000-4000-8000-<i as 12 hex
// digits>"), one device with one CDI ID per claim, unprepare always OK. No
// checkpoint, no serialization, no metrics, no logging.
//
//   bench_raw_grpc_driver --registrar-dir DIR --plugin-data-dir DIR
//       [--driver-name NAME] [--claims N] [--api sync|callback]
//       [--arg NAME=INT ...] [--sync-cqs N] [--min-pollers N] [--max-pollers N]
//
// --arg sets an integer channel argument on the DRA server (for example
// grpc.http2.bdp_probe=0); --sync-cqs, --min-pollers and --max-pollers set
// grpc++'s sync server options (defaults: one CQ per core, 1, 2).
//
// --api sync (default) uses grpc++'s synchronous service API; --api callback
// the callback API (handlers run on gRPC's own threads, no hand-off to a
// worker thread pool); --api callback-handoff the callback API with each
// call's work handed to one worker thread that answers it, as the dra-cpp
// Helper does, without any SDK logic. Runs until SIGTERM/SIGINT.
#include <pthread.h>
#include <sys/stat.h>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench/driver_flags.h"
#include "dra/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace {

namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace reg = ::pluginregistration;

struct ClaimInfo {
  std::string namespace_;
  std::string name;
};

class Answers {
 public:
  Answers(std::string driver_name, long claims) : driver_name_(std::move(driver_name)) {
    for (long i = 0; i < claims; ++i) claims_[dra::bench::BenchClaimUid(i)] = {"default", "claim-" + std::to_string(i)};
  }

  void Prepare(const v1::NodePrepareResourcesRequest& request, v1::NodePrepareResourcesResponse& response) const {
    auto& out = *response.mutable_claims();
    for (const v1::Claim& claim : request.claims()) {
      v1::NodePrepareResourceResponse& result = out[claim.uid()];
      auto it = claims_.find(claim.uid());
      if (it == claims_.end() || it->second.namespace_ != claim.namespace_() || it->second.name != claim.name()) {
        result.set_error("claim " + claim.namespace_() + "/" + claim.name() + " not found");
        continue;
      }
      v1::Device* device = result.add_devices();
      device->add_request_names("gpu");
      device->set_pool_name("pool-a");
      device->set_device_name("gpu-0");
      device->add_cdi_device_ids(driver_name_ + "/device=" + claim.uid() + "-gpu-0");
    }
  }

  static void Unprepare(const v1::NodeUnprepareResourcesRequest& request,
                        v1::NodeUnprepareResourcesResponse& response) {
    auto& out = *response.mutable_claims();
    for (const v1::Claim& claim : request.claims()) out[claim.uid()].set_error("");
  }

 private:
  const std::string driver_name_;
  std::unordered_map<std::string, ClaimInfo> claims_;
};

class SyncDra final : public v1::DRAPlugin::Service {
 public:
  explicit SyncDra(const Answers& answers) : answers_(answers) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*, const v1::NodePrepareResourcesRequest* request,
                                    v1::NodePrepareResourcesResponse* response) override {
    answers_.Prepare(*request, *response);
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const v1::NodeUnprepareResourcesRequest* request,
                                      v1::NodeUnprepareResourcesResponse* response) override {
    Answers::Unprepare(*request, *response);
    return grpc::Status::OK;
  }

 private:
  const Answers& answers_;
};

class CallbackDra final : public v1::DRAPlugin::CallbackService {
 public:
  explicit CallbackDra(const Answers& answers) : answers_(answers) {}
  grpc::ServerUnaryReactor* NodePrepareResources(grpc::CallbackServerContext* context,
                                                 const v1::NodePrepareResourcesRequest* request,
                                                 v1::NodePrepareResourcesResponse* response) override {
    answers_.Prepare(*request, *response);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* NodeUnprepareResources(grpc::CallbackServerContext* context,
                                                   const v1::NodeUnprepareResourcesRequest* request,
                                                   v1::NodeUnprepareResourcesResponse* response) override {
    Answers::Unprepare(*request, *response);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const Answers& answers_;
};

// The callback API with each call's work handed to a thread of its own and
// answered from there: what it costs a server whose gRPC threads never run
// the work (the dra-cpp Helper's design) before any SDK logic.
class HandoffDra final : public v1::DRAPlugin::CallbackService {
 public:
  explicit HandoffDra(const Answers& answers) : answers_(answers), worker_([this] { Work(); }) {}
  ~HandoffDra() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    worker_.join();
  }
  grpc::ServerUnaryReactor* NodePrepareResources(grpc::CallbackServerContext* context,
                                                 const v1::NodePrepareResourcesRequest* request,
                                                 v1::NodePrepareResourcesResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    Post([this, reactor, request, response] {
      answers_.Prepare(*request, *response);
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }
  grpc::ServerUnaryReactor* NodeUnprepareResources(grpc::CallbackServerContext* context,
                                                   const v1::NodeUnprepareResourcesRequest* request,
                                                   v1::NodeUnprepareResourcesResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    Post([reactor, request, response] {
      Answers::Unprepare(*request, *response);
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }

 private:
  void Post(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(work));
    }
    cv_.notify_one();
  }
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      work();
      lock.lock();
    }
  }

  const Answers& answers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread worker_;
};

class Registration final : public reg::Registration::Service {
 public:
  Registration(std::string driver_name, std::string endpoint)
      : driver_name_(std::move(driver_name)), endpoint_(std::move(endpoint)) {}
  grpc::Status GetInfo(grpc::ServerContext*, const reg::InfoRequest*, reg::PluginInfo* info) override {
    info->set_type("DRAPlugin");
    info->set_name(driver_name_);
    info->set_endpoint(endpoint_);
    info->add_supported_versions("v1.DRAPlugin");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const reg::RegistrationStatus* status,
                                        reg::RegistrationStatusResponse*) override {
    if (!status->plugin_registered()) std::cerr << "registration refused: " << status->error() << "\n";
    return grpc::Status::OK;
  }

 private:
  const std::string driver_name_;
  const std::string endpoint_;
};

struct ServerTuning {
  std::vector<std::pair<std::string, int>> args;
  int sync_cqs = 0, min_pollers = 0, max_pollers = 0;  // 0: grpc++'s default
};

std::unique_ptr<grpc::Server> Serve(const std::string& path, grpc::Service* service, const ServerTuning& tuning = {}) {
  std::filesystem::remove(path);
  grpc::ServerBuilder builder;
  for (const auto& [name, value] : tuning.args) builder.AddChannelArgument(name, value);
  if (tuning.sync_cqs > 0) builder.SetSyncServerOption(grpc::ServerBuilder::NUM_CQS, tuning.sync_cqs);
  if (tuning.min_pollers > 0) builder.SetSyncServerOption(grpc::ServerBuilder::MIN_POLLERS, tuning.min_pollers);
  if (tuning.max_pollers > 0) builder.SetSyncServerOption(grpc::ServerBuilder::MAX_POLLERS, tuning.max_pollers);
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) std::cerr << "cannot serve on " << path << "\n";
  return server;
}

constexpr char kUsage[] =
    "usage: bench_raw_grpc_driver --registrar-dir DIR --plugin-data-dir DIR [--driver-name NAME]\n"
    "                             [--claims N] [--api sync|callback|callback-handoff] [--arg NAME=INT ...]\n"
    "                             [--sync-cqs N] [--min-pollers N] [--max-pollers N]\n";

}  // namespace

int main(int argc, char** argv) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  dra::bench::DriverFlags flags;
  std::string api = "sync";
  ServerTuning tuning;
  const int exit_code =
      dra::bench::ParseDriverFlags(argc, argv, flags, kUsage, [&](const std::string& flag, const std::string& value) {
        if (flag == "--api" && (value == "sync" || value == "callback" || value == "callback-handoff"))
          api = value;
        else if (flag == "--arg" && value.find('=') != std::string::npos)
          tuning.args.emplace_back(value.substr(0, value.find('=')), std::stoi(value.substr(value.find('=') + 1)));
        else if (flag == "--sync-cqs")
          tuning.sync_cqs = std::stoi(value);
        else if (flag == "--min-pollers")
          tuning.min_pollers = std::stoi(value);
        else if (flag == "--max-pollers")
          tuning.max_pollers = std::stoi(value);
        else
          return false;
        return true;
      });
  if (exit_code >= 0) return exit_code;
  if (flags.registrar_dir.empty() || flags.plugin_data_dir.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string& driver_name = flags.driver_name;
  const std::string& data_dir = flags.plugin_data_dir;
  std::filesystem::create_directories(data_dir);

  const Answers answers(driver_name, flags.claims);
  std::unique_ptr<grpc::Service> dra;
  if (api == "sync")
    dra = std::make_unique<SyncDra>(answers);
  else if (api == "callback")
    dra = std::make_unique<CallbackDra>(answers);
  else
    dra = std::make_unique<HandoffDra>(answers);
  const std::string dra_socket = data_dir + "/dra.sock";
  Registration registration(driver_name, dra_socket);
  // The DRA socket serves before the registration socket appears.
  std::unique_ptr<grpc::Server> dra_server = Serve(dra_socket, dra.get(), tuning);
  if (dra_server == nullptr) return 1;
  const std::string reg_socket = flags.registrar_dir + "/" + driver_name + "-reg.sock";
  std::unique_ptr<grpc::Server> reg_server = Serve(reg_socket, &registration);
  if (reg_server == nullptr) return 1;

  int signal = 0;
  sigwait(&signals, &signal);
  std::filesystem::remove(reg_socket);
  reg_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  dra_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  std::filesystem::remove(dra_socket);
  return 0;
}
