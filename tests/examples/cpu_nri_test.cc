// The CPU example's NRI plugin against a runtime played by the test over a
// real Unix socket, with nri::Connection on the runtime's side: it
// registers, subscribes to container creation, stop and removal, pins what
// Synchronize reports and what CreateContainer creates, moves the shared
// containers when claims come and go (from its own thread), survives the
// runtime going away, and lets only one instance per lock file connect.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <deque>

#include "base/mutex.h"
#include "cpu_pinner.h"
#include "support/capturing_logger.h"
#include "support/poll.h"
#include "support/temp_dir.h"

namespace {

namespace api = nri::api;
using cpu::ClaimPlacement;
using cpu::PinningState;

constexpr absl::Duration kEventually = absl::Seconds(60);

// The runtime's side: listens, accepts plugins, records what they call.
class FakeRuntime {
 public:
  explicit FakeRuntime(const std::string& path) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(::bind(listener_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(listener_, 4) == 0);
  }
  ~FakeRuntime() { ::close(listener_); }

  // The next plugin to connect.
  std::unique_ptr<nri::Connection> Accept() {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    REQUIRE(fd >= 0);
    return std::make_unique<nri::Connection>(fd, nri::kRuntimeServiceConn, nri::kPluginServiceConn,
                                             [this](const std::string& service, const std::string& method,
                                                    const std::string& payload) -> absl::StatusOr<std::string> {
                                               if (service != nri::kRuntimeService)
                                                 return absl::UnimplementedError("service " + service);
                                               dra::MutexLock lock(&mu_);
                                               calls_.push_back({method, payload});
                                               cv_.SignalAll();
                                               if (method == "UpdateContainers")
                                                 return api::UpdateContainersResponse().SerializeAsString();
                                               return api::Empty().SerializeAsString();
                                             });
  }

  // The payload of the next call of `method` (others before it are dropped).
  std::string Next(const std::string& method) {
    const absl::Time until = absl::Now() + kEventually;
    dra::MutexLock lock(&mu_);
    for (;;) {
      while (!calls_.empty()) {
        auto [name, payload] = std::move(calls_.front());
        calls_.pop_front();
        if (name == method) return payload;
      }
      if (cv_.WaitWithDeadline(&mu_, until)) {
        FAIL("no " << method << " call within " << absl::FormatDuration(kEventually));
      }
    }
  }

 private:
  int listener_ = -1;
  dra::Mutex mu_;
  dra::CondVar cv_;
  std::deque<std::pair<std::string, std::string>> calls_ ABSL_GUARDED_BY(mu_);
};

template <typename Reply>
Reply Call(nri::Connection& conn, const std::string& method, const google::protobuf::Message& request) {
  absl::StatusOr<std::string> payload =
      conn.Call(nri::kPluginService, method, request.SerializeAsString(), kEventually);
  REQUIRE(payload.ok());
  Reply reply;
  REQUIRE(reply.ParseFromString(*payload));
  return reply;
}

api::Container Container(const std::string& id, std::vector<std::string> env, const std::string& cpus = "") {
  api::Container c;
  c.set_id(id);
  c.set_pod_sandbox_id("pod-" + id);
  c.set_name(id);
  c.set_state(api::CONTAINER_RUNNING);
  for (std::string& e : env) c.add_env(std::move(e));
  c.mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus(cpus);
  return c;
}

// container ID -> cpus of `updates`.
template <typename Updates>
std::map<std::string, std::string> Cpus(const Updates& updates) {
  std::map<std::string, std::string> cpus;
  for (const api::ContainerUpdate& u : updates) cpus[u.container_id()] = u.linux().resources().cpu().cpus();
  return cpus;
}

// What the driver would report, set by the test.
struct Claims {
  dra::Mutex mu;
  PinningState state ABSL_GUARDED_BY(mu);

  void Set(std::map<std::string, ClaimPlacement> claims) {
    dra::MutexLock lock(&mu);
    state.claims = std::move(claims);
  }
  std::function<PinningState()> Source() {
    return [this] {
      dra::MutexLock lock(&mu);
      return state;
    };
  }
};

struct Fixture {
  dra::testing::TempDir dir;
  std::string socket = dir.Join("nri.sock");
  FakeRuntime runtime{socket};
  std::shared_ptr<dra::testing::CapturingSink> sink = std::make_shared<dra::testing::CapturingSink>();
  dra::Logger logger{sink};
  Claims claims;

  Fixture() {
    dra::MutexLock lock(&claims.mu);
    claims.state.online = {0, 1, 2, 3, 4, 5, 6, 7};
  }

  nri::PluginOptions Options() {
    nri::PluginOptions options;
    options.socket_path = socket;
    options.name = "cpu.example.com";
    options.lock_path = dir.Join("nri.lock");
    options.min_backoff = absl::Milliseconds(10);
    return options;
  }

  // Accepts the plugin, checks its registration and configuration, and
  // synchronizes `containers`: the updates the plugin answered.
  std::pair<std::unique_ptr<nri::Connection>, std::map<std::string, std::string>> Connect(
      std::vector<api::Container> containers) {
    std::unique_ptr<nri::Connection> conn = runtime.Accept();
    api::RegisterPluginRequest registration;
    REQUIRE(registration.ParseFromString(runtime.Next("RegisterPlugin")));
    CHECK(registration.plugin_name() == "cpu.example.com");
    CHECK(registration.plugin_idx() == "00");
    api::ConfigureRequest configure;
    configure.set_runtime_name("fake");
    // CREATE_CONTAINER (4), STOP_CONTAINER (10), REMOVE_CONTAINER (11): 1 << (event - 1).
    CHECK(Call<api::ConfigureResponse>(*conn, "Configure", configure).events() == 0x608);
    api::SynchronizeRequest sync;
    for (api::Container& c : containers) *sync.add_containers() = std::move(c);
    const auto reply = Call<api::SynchronizeResponse>(*conn, "Synchronize", sync);
    return {std::move(conn), Cpus(reply.update())};
  }
};

TEST_CASE_METHOD(Fixture, "NRI: Synchronize pins every container, claim containers to their claims' CPUs",
                 "[cpu][nri]") {
  claims.Set({{"a-1", {{2, 3}, {}}}});
  cpu::CpuPinner pinner(Options(), claims.Source(), logger);
  auto [conn, updates] = Connect({Container("shared", {"PATH=/bin"}), Container("claimed", {"DRA_CPUSET_a_1=2-3"}),
                                  Container("forged", {"DRA_CPUSET_nope=0-7"}), Container("already", {}, "0-1,4-7")});
  CHECK(updates ==
        std::map<std::string, std::string>{{"shared", "0-1,4-7"}, {"claimed", "2-3"}, {"forged", "0-1,4-7"}});
  CHECK(pinner.Metrics().find("dra_cpu_nri_connected 1") != std::string::npos);
  CHECK(pinner.Metrics().find("dra_cpu_pinned_containers 4") != std::string::npos);
}

TEST_CASE_METHOD(Fixture, "NRI: a claim's new container gets its CPUs and the shared containers move off them",
                 "[cpu][nri]") {
  cpu::CpuPinner pinner(Options(), claims.Source(), logger);
  auto [conn, updates] = Connect({Container("shared", {})});
  CHECK(updates == std::map<std::string, std::string>{{"shared", "0-7"}});

  claims.Set({{"b-2", {{6}, {1}}}});
  api::ContainerRequest create;
  create.mutable_pod()->set_namespace_("ns");
  create.mutable_pod()->set_name("pod");
  *create.mutable_container() = Container("pinned", {"DRA_CPUSET_b_2=6", "DRA_MEMS_b_2=1"});
  const auto created = Call<api::CreateContainerResponse>(*conn, "CreateContainer", create);
  CHECK(created.adjust().linux().resources().cpu().cpus() == "6");
  CHECK(created.adjust().linux().resources().cpu().mems() == "1");
  CHECK(Cpus(created.update()) == std::map<std::string, std::string>{{"shared", "0-5,7"}});
  CHECK(sink->Matching("Pinned container").size() == 1);

  SECTION("once the claim is unprepared the shared containers get its CPUs back, from the plugin's own call") {
    Call<api::StopContainerResponse>(*conn, "StopContainer", create);
    Call<api::Empty>(*conn, "RemoveContainer", create);
    claims.Set({});
    pinner.ClaimsChanged();
    api::UpdateContainersRequest moved;
    REQUIRE(moved.ParseFromString(runtime.Next("UpdateContainers")));
    CHECK(Cpus(moved.update()) == std::map<std::string, std::string>{{"shared", "0-7"}});
  }
  SECTION("a stopped container is not moved") {
    Call<api::StopContainerResponse>(*conn, "StopContainer", create);
    claims.Set({{"c-3", {{0}, {}}}});
    pinner.ClaimsChanged();
    api::UpdateContainersRequest moved;
    REQUIRE(moved.ParseFromString(runtime.Next("UpdateContainers")));
    CHECK(Cpus(moved.update()) == std::map<std::string, std::string>{{"shared", "1-7"}});
  }
}

TEST_CASE_METHOD(Fixture, "NRI: when the runtime goes away the plugin connects again and synchronizes anew",
                 "[cpu][nri]") {
  cpu::CpuPinner pinner(Options(), claims.Source(), logger);
  {
    auto [conn, updates] = Connect({Container("shared", {})});
    CHECK(updates.size() == 1);
  }  // the runtime closes the connection (containerd restarted)
  claims.Set({{"a-1", {{0, 1}, {}}}});
  auto [conn, updates] = Connect({Container("shared", {}, "0-7"), Container("claimed", {"DRA_CPUSET_a_1=0-1"}, "0-7")});
  CHECK(updates == std::map<std::string, std::string>{{"shared", "2-7"}, {"claimed", "0-1"}});
  CHECK(sink->Matching("Not connected to the runtime's NRI; retrying").size() == 1);
}

TEST_CASE_METHOD(Fixture, "NRI: a split Synchronize is answered more=true until its last part", "[cpu][nri]") {
  cpu::CpuPinner pinner(Options(), claims.Source(), logger);
  std::unique_ptr<nri::Connection> conn = runtime.Accept();
  runtime.Next("RegisterPlugin");
  Call<api::ConfigureResponse>(*conn, "Configure", api::ConfigureRequest());
  api::SynchronizeRequest first;
  first.set_more(true);
  // Over 4096 bytes: the message spans several multiplexer chunks.
  for (int i = 0; i < 200; ++i) *first.add_containers() = Container("c" + std::to_string(i), {"PATH=/usr/bin:/bin"});
  const auto partial = Call<api::SynchronizeResponse>(*conn, "Synchronize", first);
  CHECK(partial.more());
  CHECK(partial.update_size() == 0);
  api::SynchronizeRequest last;
  *last.add_containers() = Container("c-last", {});
  const auto done = Call<api::SynchronizeResponse>(*conn, "Synchronize", last);
  CHECK_FALSE(done.more());
  CHECK(done.update_size() == 201);
}

TEST_CASE_METHOD(Fixture, "NRI: an unknown method is answered Unimplemented and the connection stays up",
                 "[cpu][nri]") {
  cpu::CpuPinner pinner(Options(), claims.Source(), logger);
  auto [conn, updates] = Connect({});
  absl::StatusOr<std::string> reply = conn->Call(nri::kPluginService, "ValidateContainerAdjustment", "", kEventually);
  CHECK(absl::IsUnimplemented(reply.status()));
  absl::StatusOr<std::string> garbage = conn->Call(nri::kPluginService, "CreateContainer", "\xff\xff", kEventually);
  CHECK(absl::IsInvalidArgument(garbage.status()));
  CHECK(Call<api::CreateContainerResponse>(*conn, "CreateContainer", api::ContainerRequest())
            .adjust()
            .linux()
            .resources()
            .cpu()
            .cpus() == "0-7");
}

TEST_CASE_METHOD(Fixture, "NRI: a second instance waits for the first's lock before it connects", "[cpu][nri]") {
  auto first = std::make_unique<cpu::CpuPinner>(Options(), claims.Source(), logger);
  auto [conn, updates] = Connect({});
  auto second = std::make_unique<cpu::CpuPinner>(Options(), claims.Source(), logger);
  REQUIRE(dra::testing::PollUntil(
      [&] { return !sink->Matching("Another instance is the node's NRI plugin; waiting").empty(); }, kEventually));
  first.reset();  // the old pod exits
  auto [second_conn, second_updates] = Connect({});
  CHECK(second_updates.empty());
}

}  // namespace
