// The Helper over real Unix sockets, driven by a kubelet-like client.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <future>
#include <thread>
#include <tuple>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "kubeletplugin/checkpoint.h"
#include "kubeletplugin/health_staleness.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "support/discard_logger.h"
#include "support/helper_dirs.h"
#include "support/http_get.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletclient::DraApi;
using kubeletclient::DraClient;
using kubeletclient::HealthApi;
using kubeletplugin::Helper;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using testing::AllocatedClaim;
using testing::HttpGet;
using testing::TestDriver;

// The Helper's dirs in a temp dir, claims in memory.
struct Fixture : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();

  Options MakeOptions() const { return HelperDirs::MakeOptions(claims); }
  using HelperDirs::Start;
  std::unique_ptr<Helper> Start(TestDriver& driver) const { return Start(driver, MakeOptions()); }
};

bool IsSocket(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

bool Exists(const std::string& path) { return std::filesystem::exists(std::filesystem::symlink_status(path)); }

// Leaves a socket file behind at `path`, as a crashed process would.
void MakeStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  close(fd);
}

std::vector<k8s::ClaimRef> Refs(std::initializer_list<k8s::ClaimRef> refs) { return refs; }

TEST_CASE("registration handshake as the kubelet does it", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);

  std::vector<std::string> sockets = *kubeletclient::DiscoverSockets(f.registry);
  REQUIRE(sockets == std::vector<std::string>{f.registry + "/gpu.example.com-reg.sock"});
  CHECK(helper->registration_status().notified == false);

  kubeletclient::Registration registration = kubeletclient::RegisterPlugin(sockets[0]);
  INFO(registration.status.ToString());
  REQUIRE(registration.status.ok());
  CHECK(registration.info.type == "DRAPlugin");
  CHECK(registration.info.name == "gpu.example.com");
  CHECK(registration.info.endpoint == f.data + "/dra.sock");
  CHECK(registration.info.endpoint == helper->dra_socket_path());
  CHECK(registration.info.supported_versions == std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin"});
  CHECK(registration.chosen_service == "v1.DRAPlugin");

  auto status = helper->WaitForRegistration(absl::Seconds(10));
  CHECK(status.notified);
  CHECK(status.registered);
  CHECK(status.error.empty());
}

TEST_CASE("a driver with health advertises both health services after DRA", "[helper]") {
  Fixture f;
  TestDriver driver(/*reports_health=*/true);
  auto helper = f.Start(driver);
  kubeletclient::Registration registration = kubeletclient::RegisterPlugin(helper->registrar_socket_path());
  REQUIRE(registration.status.ok());
  CHECK(registration.info.supported_versions == std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                                                         "v1.DRAResourceHealth",
                                                                         "v1alpha1.DRAResourceHealth"});
}

TEST_CASE("only the enabled DRA versions are served and advertised", "[helper]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  options.services.dra_v1 = false;
  auto helper = f.Start(driver, options);
  kubeletclient::Registration registration = kubeletclient::RegisterPlugin(helper->registrar_socket_path());
  REQUIRE(registration.status.ok());
  CHECK(registration.info.supported_versions == std::vector<std::string>{"v1beta1.DRAPlugin"});
  CHECK(registration.chosen_service == "v1beta1.DRAPlugin");

  auto client = DraClient::Create(helper->dra_socket_path());
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  auto v1 = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE_FALSE(v1.ok());
  CHECK(v1.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(client->NodePrepareResources(DraApi::kV1beta1, Refs({{"ns", "c", "uid-1"}})).ok());
}

TEST_CASE("a refused registration reaches HandleError with the kubelet's message", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);

  auto channel = grpc::CreateChannel("unix:" + helper->registrar_socket_path(), grpc::InsecureChannelCredentials());
  auto stub = pluginregistration::Registration::NewStub(channel);
  grpc::ClientContext context;
  pluginregistration::RegistrationStatus request;
  request.set_plugin_registered(false);
  request.set_error("plugin validation failed: no supported version");
  pluginregistration::RegistrationStatusResponse response;
  grpc::Status rpc = stub->NotifyRegistrationStatus(&context, request, &response);
  CHECK_FALSE(rpc.ok());
  CHECK_THAT(rpc.error_message(), Catch::Contains("plugin validation failed: no supported version"));

  auto status = helper->registration_status();
  CHECK(status.notified);
  CHECK_FALSE(status.registered);
  CHECK(status.error == "plugin validation failed: no supported version");
  REQUIRE(driver.errors().size() == 1);
  CHECK_THAT(driver.errors()[0], Catch::StartsWith("registration (fatal): kubelet refused plugin registration: "));
}

TEST_CASE("prepare and unprepare over both DRA API versions", "[helper]") {
  const DraApi api = GENERATE(DraApi::kV1, DraApi::kV1beta1);
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  k8s::ResourceClaim claim = AllocatedClaim("default", "gpu-claim", "uid-1", {"gpu-0", "gpu-1"});
  claim.status.allocation->devices.results[0].request = "gpu/large";
  claim.status.allocation->devices.results[1].share_id = "share-7";
  f.claims->Put(claim);

  auto client = DraClient::Create(helper->dra_socket_path());
  auto prepared = client->NodePrepareResources(api, Refs({{"default", "gpu-claim", "uid-1"}}));
  REQUIRE(prepared.ok());
  REQUIRE(prepared->size() == 1);
  const kubeletclient::PrepareOutcome& outcome = prepared->at("uid-1");
  CHECK(outcome.error.empty());
  REQUIRE(outcome.devices.size() == 2);
  CHECK(outcome.devices[0].request_names == std::vector<std::string>{"gpu"});  // subrequest stripped
  CHECK(outcome.devices[0].pool_name == "pool-a");
  CHECK(outcome.devices[0].device_name == "gpu-0");
  CHECK(outcome.devices[0].cdi_device_ids == std::vector<std::string>{TestDriver::CdiId("uid-1", "gpu-0")});
  CHECK_FALSE(outcome.devices[0].share_id.has_value());
  if (api == DraApi::kV1) {
    CHECK(outcome.devices[1].share_id == std::optional<std::string>("share-7"));
  } else {
    CHECK_FALSE(outcome.devices[1].share_id.has_value());
  }

  auto unprepared = client->NodeUnprepareResources(api, Refs({{"default", "gpu-claim", "uid-1"}}));
  REQUIRE(unprepared.ok());
  CHECK(*unprepared == std::map<std::string, std::string>{{"uid-1", ""}});
  CHECK(driver.unprepared_uids() == std::vector<std::string>{"uid-1"});
}

TEST_CASE("each bad claim fails only itself", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  f.claims->Put(AllocatedClaim("ns", "good", "uid-good"));
  f.claims->Put(AllocatedClaim("ns", "replaced", "uid-new"));
  k8s::ResourceClaim unallocated = AllocatedClaim("ns", "pending", "uid-pending");
  unallocated.status.allocation.reset();
  f.claims->Put(unallocated);
  f.claims->Put(AllocatedClaim("ns", "broken", "uid-broken", {"gpu-1"}));
  driver.FailClaim("uid-broken");

  auto client = DraClient::Create(helper->dra_socket_path());
  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "good", "uid-good"},
                                                                  {"ns", "replaced", "uid-old"},
                                                                  {"ns", "pending", "uid-pending"},
                                                                  {"ns", "missing", "uid-missing"},
                                                                  {"ns", "broken", "uid-broken"}}));
  REQUIRE(prepared.ok());
  REQUIRE(prepared->size() == 5);
  CHECK(prepared->at("uid-good").error.empty());
  CHECK(prepared->at("uid-good").devices.size() == 1);
  CHECK(prepared->at("uid-old").error == "claim ns/replaced got replaced");
  CHECK(prepared->at("uid-pending").error == "claim ns/pending not allocated");
  CHECK_THAT(prepared->at("uid-missing").error,
             Catch::StartsWith("retrieve claim ns/missing: ") && Catch::Contains("not found"));
  CHECK(prepared->at("uid-broken").error == "injected failure");
  CHECK(prepared->at("uid-broken").devices.empty());
  // Another driver's result in the claim never reached ours (it would fail).
  CHECK(driver.prepare_calls() == 1);
}

TEST_CASE("a request over gRPC's 4 MiB limit is refused before any handler, and the next call is served", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  std::vector<k8s::ClaimRef> huge;
  for (int i = 0; i < 20000; ++i) huge.push_back({"ns", std::string(253, 'n'), absl::StrCat("uid-", i)});
  auto client = DraClient::Create(helper->dra_socket_path());
  auto refused = client->NodePrepareResources(DraApi::kV1, huge);
  INFO(refused.status().ToString());
  REQUIRE_FALSE(refused.ok());
  CHECK(absl::IsResourceExhausted(refused.status()));
  CHECK(driver.prepare_calls() == 0);
  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-1").error.empty());
}

TEST_CASE("a claim reference that could escape a directory fails before any file or the driver is touched",
          "[helper]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  auto helper = f.Start(driver);
  const std::string long_uid(200, 'a');
  const std::string nul_uid("uid\0../x", 8);
  // The claim source has them all: only the reference check stops them.
  for (const auto& [ns, name, uid] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"ns", "c", "../../etc/passwd"},
                                                                      {"ns", "c", "a/b"},
                                                                      {"ns", "c", long_uid},
                                                                      {"ns", "c", nul_uid},
                                                                      {"ns/..", "c", "uid-1"},
                                                                      {"ns", "../c", "uid-2"},
                                                                      {"ns", "c", ""}}) {
    f.claims->Put(AllocatedClaim(ns, name, uid));
  }
  auto client = DraClient::Create(helper->dra_socket_path());
  const std::vector<k8s::ClaimRef> refs = {
      {"ns", "c", "../../etc/passwd"}, {"ns", "c", "a/b"},      {"ns", "c", long_uid}, {"ns", "c", nul_uid},
      {"ns/..", "c", "uid-1"},         {"ns", "../c", "uid-2"}, {"ns", "c", ""}};
  auto prepared = client->NodePrepareResources(DraApi::kV1, refs);
  REQUIRE(prepared.ok());
  REQUIRE(prepared->size() == refs.size());
  CHECK(prepared->at("a/b").error == "invalid claim reference: uid \"a/b\": must consist of letters, digits and '-'");
  CHECK_THAT(prepared->at(long_uid).error, Catch::Contains("uid \"" + std::string(64, 'a') + "...\""));
  CHECK_THAT(prepared->at(nul_uid).error, Catch::Contains("uid \"uid?../x\""));
  CHECK_THAT(prepared->at("uid-1").error, Catch::StartsWith("invalid claim reference: namespace \"ns/..\": "));
  CHECK_THAT(prepared->at("uid-2").error, Catch::StartsWith("invalid claim reference: name \"../c\": "));
  for (const auto& [uid, outcome] : *prepared) {
    INFO(uid);
    CHECK_THAT(outcome.error, Catch::StartsWith("invalid claim reference: "));
  }
  auto unprepared = client->NodeUnprepareResources(DraApi::kV1, refs);
  REQUIRE(unprepared.ok());
  CHECK_THAT(unprepared->at("../../etc/passwd"), Catch::StartsWith("invalid claim reference: uid "));
  CHECK(driver.prepare_calls() == 0);
  CHECK(driver.unprepare_calls() == 0);
  CHECK((!std::filesystem::exists(f.cdi_dir) || std::filesystem::is_empty(f.cdi_dir)));
}

TEST_CASE("a claim named twice in one call gets one answer", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  auto client = DraClient::Create(helper->dra_socket_path());
  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}, {"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->size() == 1);
  CHECK(driver.prepared_uids() == std::vector<std::string>{"uid-1"});
  auto unprepared = client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}, {"ns", "c", "uid-1"}}));
  REQUIRE(unprepared.ok());
  CHECK(unprepared->size() == 1);
  CHECK(driver.unprepared_uids() == std::vector<std::string>{"uid-1"});
}

TEST_CASE("prepare is idempotent and unprepare of an unknown claim succeeds", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  auto client = DraClient::Create(helper->dra_socket_path());

  auto first = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  auto second = client->NodePrepareResources(DraApi::kV1beta1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(driver.prepare_calls() == 1);
  CHECK(second->at("uid-1").devices[0].cdi_device_ids == first->at("uid-1").devices[0].cdi_device_ids);

  auto unknown = client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "never", "uid-never"}}));
  REQUIRE(unknown.ok());
  CHECK(*unknown == std::map<std::string, std::string>{{"uid-never", ""}});

  // After unprepare, a new prepare goes to the driver again.
  REQUIRE(client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}})).ok());
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}})).ok());
  CHECK(driver.prepare_calls() == 2);
}

// Eight callers at once; the driver waits a little for company in each call.
int MaxConcurrencySeen(bool serialize) {
  Fixture f;
  TestDriver driver;
  driver.SetOverlapWindow(absl::Milliseconds(serialize ? 30 : 5000));
  Options options = f.MakeOptions();
  options.serialize = serialize;
  auto helper = Fixture::Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());
  std::vector<std::future<bool>> calls;
  for (int i = 0; i < 8; ++i) {
    const std::string uid = "uid-" + std::to_string(i);
    f.claims->Put(AllocatedClaim("ns", "c" + std::to_string(i), uid, {"gpu-" + std::to_string(i)}));
    calls.push_back(std::async(std::launch::async, [&client, i, uid] {
      auto result = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c" + std::to_string(i), uid}}));
      return result.ok() && result->at(uid).error.empty();
    }));
  }
  for (auto& call : calls) CHECK(call.get());
  return driver.max_concurrent_calls();
}

TEST_CASE("serialize on: the driver never sees two calls at once", "[helper]") { CHECK(MaxConcurrencySeen(true) == 1); }

TEST_CASE("serialize off: calls reach the driver concurrently", "[helper]") { CHECK(MaxConcurrencySeen(false) >= 2); }

TEST_CASE("rolling update: sockets carry the UID, two instances run side by side", "[helper]") {
  Fixture f;
  TestDriver old_driver, new_driver;
  Options old_options = f.MakeOptions();
  old_options.rolling_update_uid = "11111111-aaaa";
  Options new_options = f.MakeOptions();
  new_options.rolling_update_uid = "22222222-bbbb";
  auto old_helper = Fixture::Start(old_driver, old_options);
  auto new_helper = Fixture::Start(new_driver, new_options);

  CHECK(old_helper->registrar_socket_path() == f.registry + "/gpu.example.com-11111111-aaaa-reg.sock");
  CHECK(old_helper->dra_socket_path() == f.data + "/dra-11111111-aaaa.sock");
  CHECK(new_helper->dra_socket_path() == f.data + "/dra-22222222-bbbb.sock");
  CHECK(IsSocket(f.data + "/serialize.lock") == false);
  CHECK(Exists(f.data + "/serialize.lock"));
  CHECK(kubeletclient::DiscoverSockets(f.registry)->size() == 2);

  // Both serve and share one checkpoint: what one prepared, the other knows.
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  f.claims->Put(AllocatedClaim("ns", "d", "uid-2", {"gpu-1"}));
  auto old_client = DraClient::Create(old_helper->dra_socket_path());
  auto new_client = DraClient::Create(new_helper->dra_socket_path());
  for (Helper* helper : {old_helper.get(), new_helper.get()}) {
    CHECK(kubeletclient::RegisterPlugin(helper->registrar_socket_path()).status.ok());
  }
  REQUIRE(old_client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}})).ok());
  REQUIRE(new_client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "d", "uid-2"}})).ok());
  auto again = new_client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(again.ok());
  CHECK(again->at("uid-1").error.empty());
  CHECK(new_driver.prepared_uids() == std::vector<std::string>{"uid-2"});
  // Unprepared through the new one, the old one must not answer from memory.
  REQUIRE(new_client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}})).ok());
  REQUIRE(old_client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}})).ok());
  CHECK(old_driver.prepare_calls() == 2);

  old_helper->Stop();
  CHECK_FALSE(Exists(f.registry + "/gpu.example.com-11111111-aaaa-reg.sock"));
  CHECK(IsSocket(new_helper->registrar_socket_path()));
}

TEST_CASE("rolling update: long paths fall back to hashed socket names that work", "[helper]") {
  Fixture f;
  // Sized so that only the shortest registrar name ("dra-" + 22 + "-reg.sock")
  // and the short DRA socket name ("dra-" + 11) fit in 107 bytes.
  const size_t base = f.dir.path().size() + 1;
  REQUIRE(base < 60);
  const std::string deep = f.dir.Join(std::string(71 - base, 'r'));
  std::filesystem::create_directories(deep);
  Options options = f.MakeOptions();
  options.registrar_dir = deep;
  options.plugin_data_dir = f.dir.Join(std::string(91 - base, 'd'));
  options.rolling_update_uid = "0b3c1a9e-5f7d-4c2b-9a8e-1d2c3b4a5f6e";
  TestDriver driver;
  auto helper = Fixture::Start(driver, options);

  CHECK_THAT(helper->registrar_socket_path(), Catch::StartsWith(deep + "/dra-") && Catch::EndsWith("-reg.sock"));
  CHECK(helper->registrar_socket_path().size() == 107);
  CHECK(helper->dra_socket_path().size() == 107);
  CHECK(helper->dra_socket_path().find(options.rolling_update_uid) == std::string::npos);
  CHECK(IsSocket(helper->dra_socket_path()));

  auto registration = kubeletclient::RegisterPlugin(helper->registrar_socket_path());
  INFO(registration.status.ToString());
  REQUIRE(registration.status.ok());
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  auto prepared =
      DraClient::Create(registration.info.endpoint)->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-1").error.empty());
}

TEST_CASE("a socket path too long even when shortened is a clear start-up error", "[helper]") {
  Fixture f;
  const std::string deep = f.dir.Join(std::string(100, 'r'));
  std::filesystem::create_directories(deep);
  Options options = f.MakeOptions();
  options.registrar_dir = deep;
  TestDriver driver;
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, options);
  REQUIRE_FALSE(helper.ok());
  CHECK(helper.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(helper.status().message()),
             Catch::Contains(deep + "/gpu.example.com-reg.sock") && Catch::Contains("at most 107"));
}

TEST_CASE("a stale socket is replaced, any other file in the way stops start-up", "[helper]") {
  Fixture f;
  std::filesystem::create_directories(f.data);
  MakeStaleSocket(f.registry + "/gpu.example.com-reg.sock");
  MakeStaleSocket(f.data + "/dra.sock");
  TestDriver driver;
  {
    auto helper = f.Start(driver);
    CHECK(kubeletclient::RegisterPlugin(helper->registrar_socket_path()).status.ok());
  }
  testing::WriteFile(f.data + "/dra.sock", "not a socket");
  absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, f.MakeOptions());
  REQUIRE_FALSE(helper.ok());
  CHECK_THAT(std::string(helper.status().message()),
             Catch::Contains(f.data + "/dra.sock") && Catch::Contains("not a socket"));
  CHECK(testing::ReadFile(f.data + "/dra.sock") == "not a socket");
}

TEST_CASE("sockets and the data dir have tight permissions", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  struct stat st;
  REQUIRE(stat(helper->dra_socket_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(stat(helper->registrar_socket_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(stat(f.data.c_str(), &st) == 0);
  CHECK((st.st_mode & 0007) == 0);
  // Bound under hidden names and renamed into place: nothing else is left.
  for (const std::string& dir : {f.registry, f.data}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      INFO(entry.path());
      CHECK(entry.path().filename().string()[0] != '.');
    }
  }
}

TEST_CASE("the checkpoint answers prepared claims across a restart", "[helper]") {
  Fixture f;
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  std::vector<std::string> first_ids;
  {
    TestDriver driver;
    auto helper = f.Start(driver);
    auto prepared =
        DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
    REQUIRE(prepared.ok());
    first_ids = prepared->at("uid-1").devices.at(0).cdi_device_ids;
  }
  // The claim is gone from the API by now; the checkpoint still answers.
  f.claims->Remove("ns", "c");
  TestDriver restarted;
  auto helper = f.Start(restarted);
  auto prepared =
      DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-1").error.empty());
  CHECK(prepared->at("uid-1").devices.at(0).cdi_device_ids == first_ids);
  CHECK(restarted.prepare_calls() == 0);
}

// A driver that records what it handed out in PrepareResult::driver_data
// and hears it back after a restart.
class RecordingDriver : public TestDriver {
 public:
  absl::StatusOr<kubeletplugin::PrepareResults> PrepareResourceClaims(
      const dra::CallContext& ctx, std::span<const k8s::ResourceClaim> claims) override {
    absl::StatusOr<kubeletplugin::PrepareResults> results = TestDriver::PrepareResourceClaims(ctx, claims);
    if (results.ok()) {
      for (auto& [uid, result] : *results) result.driver_data = "cpus 4-7 for " + uid;
    }
    return results;
  }
  void RestorePreparedClaims(std::span<const kubeletplugin::PreparedClaim> claims) override {
    restored.assign(claims.begin(), claims.end());
    ++restore_calls;
  }
  std::vector<kubeletplugin::PreparedClaim> restored;
  int restore_calls = 0;
};

TEST_CASE("the driver's data of each prepared claim comes back after a restart, unprepared ones not", "[helper]") {
  Fixture f;
  f.claims->Put(AllocatedClaim("ns", "a", "uid-a", {"gpu-0", "gpu-1"}));
  f.claims->Put(AllocatedClaim("ns", "b", "uid-b", {"gpu-2"}));
  {
    RecordingDriver driver;
    auto helper = f.Start(driver);
    CHECK(driver.restore_calls == 1);
    CHECK(driver.restored.empty());
    auto client = DraClient::Create(helper->dra_socket_path());
    REQUIRE(client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "a", "uid-a"}, {"ns", "b", "uid-b"}})).ok());
    REQUIRE(client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "b", "uid-b"}})).ok());
  }
  RecordingDriver restarted;
  auto helper = f.Start(restarted);
  CHECK(restarted.restore_calls == 1);
  REQUIRE(restarted.restored.size() == 1);
  const kubeletplugin::PreparedClaim& claim = restarted.restored[0];
  CHECK(claim.claim.ToString() == "ns/a");
  CHECK(claim.claim.uid == "uid-a");
  CHECK(claim.driver_data == "cpus 4-7 for uid-a");
  REQUIRE(claim.devices.size() == 2);
  CHECK(claim.devices[1].device_name == "gpu-1");
  CHECK(claim.devices[1].cdi_device_ids == std::vector<std::string>{TestDriver::CdiId("uid-a", "gpu-1")});
  CHECK(restarted.prepare_calls() == 0);
}

TEST_CASE("a claim whose preparation had only started is prepared again after a crash", "[helper]") {
  Fixture f;
  std::filesystem::create_directories(f.data);
  {
    auto checkpoint = kubeletplugin::internal::Checkpoint::Open(f.data + "/checkpoint.json");
    REQUIRE(checkpoint.ok());
    kubeletplugin::internal::CheckpointEntry started{
        {"ns", "c", "uid-1"}, kubeletplugin::internal::ClaimState::kPrepareStarted, {}};
    REQUIRE((*checkpoint)->Commit({{"uid-1", started}}).ok());
  }
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  TestDriver driver;
  auto helper = f.Start(driver);
  auto prepared =
      DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-1").error.empty());
  CHECK(driver.prepare_calls() == 1);
}

TEST_CASE("start-up removes the temp file of a checkpoint replacement that a crash cut short", "[helper]") {
  Fixture f;
  std::filesystem::create_directories(f.data);
  const std::string path = f.data + "/checkpoint.json";
  {
    auto checkpoint = kubeletplugin::internal::Checkpoint::Open(path);
    REQUIRE(checkpoint.ok());
    kubeletplugin::internal::CheckpointEntry started{
        {"ns", "c", "uid-1"}, kubeletplugin::internal::ClaimState::kPrepareStarted, {}};
    REQUIRE((*checkpoint)->Commit({{"uid-1", started}}).ok());
  }
  // A crash in a compaction after the temp file, before the rename.
  const std::string temp = f.data + "/.checkpoint.json.tmp-AbC123";
  testing::WriteFile(temp, testing::ReadFile(path));
  const std::string other = f.data + "/.notes.tmp-AbC123";
  testing::WriteFile(other, "");
  TestDriver driver;
  auto helper = f.Start(driver);
  CHECK_FALSE(Exists(temp));
  CHECK(Exists(other));
  CHECK(kubeletplugin::internal::Checkpoint::Open(path).value()->Get("uid-1").has_value());
}

TEST_CASE("a checkpoint that cannot be read at all is kept aside, and start-up goes on", "[helper]") {
  Fixture f;
  std::filesystem::create_directories(f.data);
  const std::string path = f.data + "/checkpoint.json";
  const std::string damaged = "{\"version\":1,\"checksum\":\"00\",\"data\":{\"claims\":{}}}";
  testing::WriteFile(path, damaged);
  TestDriver driver;
  auto helper = f.Start(driver);
  CHECK(Exists(f.registry + "/gpu.example.com-reg.sock"));
  std::vector<std::string> aside;
  for (const auto& file : std::filesystem::directory_iterator(f.data)) {
    if (file.path().filename().string().starts_with("checkpoint.json.unreadable-")) aside.push_back(file.path());
  }
  REQUIRE(aside.size() == 1);
  CHECK(testing::ReadFile(aside[0]) == damaged);
  CHECK(Exists(path));  // what could be read of it: nothing
}

kubeletplugin::DeviceHealth Health(const std::string& device, kubeletplugin::HealthStatus status,
                                   const std::string& message = "", absl::Time updated = absl::InfinitePast(),
                                   absl::Duration timeout = absl::ZeroDuration()) {
  kubeletplugin::DeviceHealth health;
  health.pool_name = "pool-a";
  health.device_name = device;
  health.health = status;
  health.message = message;
  health.last_updated = updated;
  health.health_check_timeout = timeout;
  return health;
}

TEST_CASE("health: watchers get the current list at once and every update", "[helper]") {
  const HealthApi api = GENERATE(HealthApi::kV1, HealthApi::kV1alpha1);
  Fixture f;
  TestDriver driver(/*reports_health=*/true);
  Options options = f.MakeOptions();
  options.shutdown_grace = absl::Hours(1);
  auto helper = Fixture::Start(driver, options);
  helper->PublishHealth({Health("gpu-0", kubeletplugin::HealthStatus::kHealthy, "ok", absl::FromUnixSeconds(1700000000),
                                absl::Seconds(60)),
                         Health("gpu-1", kubeletplugin::HealthStatus::kUnhealthy, std::string(1500, 'x'))});

  auto client = DraClient::Create(helper->dra_socket_path());
  auto stream = client->WatchHealth(api);
  REQUIRE(stream.ok());
  auto first = (*stream)->Next(absl::Seconds(10));
  REQUIRE(first.ok());
  REQUIRE(first->size() == 2);
  CHECK((*first)[0].device_name == "gpu-0");
  CHECK((*first)[0].health == "HEALTHY");
  CHECK((*first)[0].last_updated_time == 1700000000);
  CHECK((*first)[0].health_check_timeout_seconds == 60);
  CHECK((*first)[1].health == "UNHEALTHY");
  CHECK((*first)[1].message == std::string(1021, 'x') + "...");
  CHECK((*first)[1].last_updated_time > 1700000000);  // filled with the publication time

  helper->PublishHealth({Health("gpu-0", kubeletplugin::HealthStatus::kUnknown)});
  auto second = (*stream)->Next(absl::Seconds(10));
  REQUIRE(second.ok());
  REQUIRE(second->size() == 1);
  CHECK((*second)[0].health == "UNKNOWN");

  // Stop ends the open stream rather than waiting for the grace period (an
  // hour here: waiting for it would time the test out).
  helper->Stop();
  CHECK_FALSE((*stream)->Next(absl::Seconds(10)).ok());
}

// The kubelet reads an entry as Unknown once it is older than its timeout;
// the Helper tells the driver, once per list, that it let the list go stale.
TEST_CASE("health: a list not published again within its devices' timeout reaches HandleError once", "[helper]") {
  Fixture f;
  TestDriver driver(/*reports_health=*/true);
  auto helper = f.Start(driver);
  helper->PublishHealth(
      {Health("gpu-0", kubeletplugin::HealthStatus::kHealthy, "", absl::InfinitePast(), absl::Seconds(1)),
       Health("gpu-1", kubeletplugin::HealthStatus::kHealthy)});
  // The check looks every half of the smallest timeout.
  REQUIRE(testing::PollUntil([&] { return !driver.errors().empty(); }, absl::Minutes(1)));
  const std::vector<std::string> errors = driver.errors();
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::StartsWith("device health (recoverable): device health was last published"));
  CHECK_THAT(errors[0], Catch::Contains("timeout of its devices (1s)"));
}

// Options::health_resend_interval: a driver that publishes once keeps its
// list fresh in the kubelet, and never hears that it went stale.
TEST_CASE("health: with a resend interval the Helper sends the last list again, each entry updated", "[helper]") {
  Fixture f;
  TestDriver driver(/*reports_health=*/true);
  Options options = f.MakeOptions();
  options.health_resend_interval = -absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<Helper>> refused = Helper::Start(driver, options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "options.health_resend_interval: Invalid value: \"-1s\": must not be negative");

  options.health_resend_interval = absl::Milliseconds(200);
  auto helper = Fixture::Start(driver, options);
  helper->PublishHealth({Health("gpu-0", kubeletplugin::HealthStatus::kUnhealthy, "hot",
                                absl::FromUnixSeconds(1700000000), absl::Seconds(60))});
  auto stream = DraClient::Create(helper->dra_socket_path())->WatchHealth(HealthApi::kV1);
  REQUIRE(stream.ok());
  auto first = (*stream)->Next(absl::Seconds(30));
  REQUIRE(first.ok());
  REQUIRE(first->size() == 1);
  CHECK((*first)[0].last_updated_time == 1700000000);
  // Nothing published since: the same entry again, now.
  auto again = (*stream)->Next(absl::Seconds(30));
  REQUIRE(again.ok());
  REQUIRE(again->size() == 1);
  CHECK((*again)[0].health == "UNHEALTHY");
  CHECK((*again)[0].message == "hot");
  CHECK((*again)[0].health_check_timeout_seconds == 60);
  CHECK((*again)[0].last_updated_time > 1700000000);
  helper->Stop();
  CHECK(driver.errors().empty());
}

TEST_CASE("health: StaleAfter is the smallest timeout, the kubelet's 30 s for a device without one", "[helper]") {
  using kubeletplugin::internal::StaleAfter;
  CHECK(StaleAfter({}) == absl::InfiniteDuration());
  CHECK(StaleAfter({Health("a", kubeletplugin::HealthStatus::kHealthy)}) == absl::Seconds(30));
  CHECK(StaleAfter({Health("a", kubeletplugin::HealthStatus::kHealthy, "", absl::InfinitePast(), absl::Minutes(5)),
                    Health("b", kubeletplugin::HealthStatus::kHealthy)}) == absl::Seconds(30));
  CHECK(StaleAfter({Health("a", kubeletplugin::HealthStatus::kHealthy, "", absl::InfinitePast(), absl::Seconds(5)),
                    Health("b", kubeletplugin::HealthStatus::kHealthy)}) == absl::Seconds(5));
}

TEST_CASE("health: a driver without health answers UNIMPLEMENTED", "[helper]") {
  Fixture f;
  TestDriver driver(/*reports_health=*/false);
  auto helper = f.Start(driver);
  auto stream = DraClient::Create(helper->dra_socket_path())->WatchHealth(HealthApi::kV1);
  absl::Status status = stream.ok() ? (*stream)->Next(absl::Seconds(10)).status() : stream.status();
  CHECK(status.code() == absl::StatusCode::kUnimplemented);
}

TEST_CASE("the standard gRPC health service reports the DRA services", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  auto client = DraClient::Create(helper->dra_socket_path());
  CHECK(client->CheckGrpcHealth("") == absl::StatusOr<std::string>("SERVING"));
  CHECK(client->CheckGrpcHealth("k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin") == absl::StatusOr<std::string>("SERVING"));
  CHECK(client->CheckGrpcHealth("k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin") ==
        absl::StatusOr<std::string>("SERVING"));
  CHECK(client->CheckGrpcHealth("no.such.Service").status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("the Helper leaves gRPC's process-wide default health service setting alone", "[helper]") {
  const bool before = grpc::DefaultHealthCheckServiceEnabled();
  for (const bool application_setting : {true, false}) {
    INFO("the application enabled gRPC's default health service: " << application_setting);
    grpc::EnableDefaultHealthCheckService(application_setting);
    Fixture f;
    TestDriver driver;
    auto helper = f.Start(driver);
    CHECK(grpc::DefaultHealthCheckServiceEnabled() == application_setting);
    CHECK(DraClient::Create(helper->dra_socket_path())->CheckGrpcHealth("k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin") ==
          absl::StatusOr<std::string>("SERVING"));
  }
  grpc::EnableDefaultHealthCheckService(before);
}

TEST_CASE("Stop removes both sockets and is idempotent", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto helper = f.Start(driver);
  const std::string registrar = helper->registrar_socket_path();
  const std::string dra = helper->dra_socket_path();
  REQUIRE(IsSocket(registrar));
  REQUIRE(IsSocket(dra));
  helper->Stop();
  CHECK_FALSE(Exists(registrar));
  CHECK_FALSE(Exists(dra));
  helper->Stop();
  helper.reset();
  CHECK(kubeletclient::DiscoverSockets(f.registry)->empty());
}

TEST_CASE("the kubelet may drop its connection and come back, the helper may restart under it", "[helper]") {
  Fixture f;
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  TestDriver driver;
  auto helper = f.Start(driver);
  {
    auto client = DraClient::Create(helper->dra_socket_path());
    REQUIRE(client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}})).ok());
  }  // connection dropped
  auto client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}})).ok());

  // The same client keeps working across a plugin restart, as the kubelet's does.
  helper.reset();
  TestDriver restarted;
  helper = f.Start(restarted);
  auto again = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(again.ok());
  CHECK(again->at("uid-1").error.empty());
  CHECK(restarted.prepare_calls() == 1);
  helper.reset();  // before the driver it calls
}

TEST_CASE("/metrics counts calls and claims, /healthz follows the registration", "[helper]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  options.http_endpoint = "127.0.0.1:0";
  int scrapes = 0;
  options.extra_metrics = [&scrapes] {
    return "# HELP driver_scrapes_total Scrapes.\n# TYPE driver_scrapes_total counter\ndriver_scrapes_total " +
           std::to_string(++scrapes) + "\n";
  };
  auto helper = Fixture::Start(driver, options);
  REQUIRE(helper->http_port() > 0);
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  auto client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}, {"ns", "gone", "uid-2"}})).ok());
  REQUIRE(kubeletclient::RegisterPlugin(helper->registrar_socket_path()).status.ok());
  REQUIRE(helper->WaitForRegistration(absl::Seconds(10)).registered);

  auto [status_line, metrics] = HttpGet(helper->http_port(), "/metrics");
  CHECK(status_line == "HTTP/1.1 200 OK");
  CHECK_THAT(metrics, Catch::Contains("dra_kubelet_calls_total{method=\"NodePrepareResources\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_claims_total{method=\"NodePrepareResources\"} 2\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_claim_errors_total{method=\"NodePrepareResources\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_kubelet_call_duration_seconds_count{method=\"NodePrepareResources\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_prepared_claims 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_checkpoint_writes_total 2\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_serialization_waiting_calls 0\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_registered 1\n"));
  // The driver's own metrics come last.
  CHECK_THAT(metrics, Catch::EndsWith("# TYPE driver_scrapes_total counter\ndriver_scrapes_total 1\n"));

  CHECK(HttpGet(helper->http_port(), "/healthz") ==
        std::make_pair(std::string("HTTP/1.1 200 OK"), std::string("ok\n")));
  CHECK(HttpGet(helper->http_port(), "/nothing").first == "HTTP/1.1 404 Not Found");

  // The kubelet changes its mind (for example after a restart).
  auto stub = pluginregistration::Registration::NewStub(
      grpc::CreateChannel("unix:" + helper->registrar_socket_path(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  pluginregistration::RegistrationStatus refusal;
  refusal.set_plugin_registered(false);
  refusal.set_error("no supported version");
  pluginregistration::RegistrationStatusResponse response;
  stub->NotifyRegistrationStatus(&context, refusal, &response);
  auto [code, body] = HttpGet(helper->http_port(), "/healthz");
  CHECK(code == "HTTP/1.1 503 Service Unavailable");
  CHECK(body == "kubelet refused registration: no supported version\n");
  // The driver heard it as fatal, and /metrics counted it.
  CHECK_THAT(HttpGet(helper->http_port(), "/metrics").second,
             Catch::Contains("dra_background_errors_total{severity=\"fatal\"} 1\n"));
}

TEST_CASE("/healthz fails, naming it, when a socket the kubelet uses is gone", "[helper]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  options.http_endpoint = "127.0.0.1:0";
  auto helper = Fixture::Start(driver, options);
  CHECK(HttpGet(helper->http_port(), "/healthz").first == "HTTP/1.1 200 OK");
  for (const std::string& socket : {helper->dra_socket_path(), helper->registrar_socket_path()}) {
    INFO(socket);
    const std::string moved = socket + ".moved";
    REQUIRE(std::rename(socket.c_str(), moved.c_str()) == 0);
    auto [code, body] = HttpGet(helper->http_port(), "/healthz");
    CHECK(code == "HTTP/1.1 503 Service Unavailable");
    CHECK(body == "connect " + socket + ": No such file or directory\n");
    REQUIRE(std::rename(moved.c_str(), socket.c_str()) == 0);
    CHECK(HttpGet(helper->http_port(), "/healthz").first == "HTTP/1.1 200 OK");
  }
  // Something else at the path, not listening.
  const std::string dra = helper->dra_socket_path();
  REQUIRE(std::rename(dra.c_str(), (dra + ".moved").c_str()) == 0);
  testing::WriteFile(dra, "not a socket");
  CHECK(HttpGet(helper->http_port(), "/healthz").second == "connect " + dra + ": Connection refused\n");
  std::filesystem::remove(dra);
  REQUIRE(std::rename((dra + ".moved").c_str(), dra.c_str()) == 0);
}

TEST_CASE("bad options stop start-up with a message naming the field", "[helper]") {
  Fixture f;
  TestDriver driver;
  auto expect_error = [&](Options options, const std::string& text) {
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    REQUIRE_FALSE(helper.ok());
    CHECK_THAT(std::string(helper.status().message()), Catch::Contains(text));
  };
  Options options = f.MakeOptions();
  options.driver_name = "";
  expect_error(options, "options.driver_name: Required value");
  options.driver_name = "GPU.example.com";
  expect_error(options, "options.driver_name: Invalid value: \"GPU.example.com\"");
  options.driver_name = std::string(60, 'a') + ".com";
  expect_error(options, "options.driver_name: Too long");
  options = f.MakeOptions();
  options.claim_source = nullptr;
  expect_error(options, "options.claim_source: Required value");
  options = f.MakeOptions();
  options.registrar_dir = f.dir.Join("missing");
  expect_error(options, "options.registrar_dir: " + f.dir.Join("missing") + " is not an existing directory");
  options = f.MakeOptions();
  options.rolling_update_uid = "uid";
  options.registrar_socket_name = "x.sock";
  expect_error(options, "mutually exclusive");
  options = f.MakeOptions();
  options.services.dra_v1 = options.services.dra_v1beta1 = false;
  expect_error(options, "no supported DRA gRPC API");
  options = f.MakeOptions();
  options.http_endpoint = "no-port-here";
  expect_error(options, "options.http_endpoint: HTTP endpoint \"no-port-here\"");
  options = f.MakeOptions();
  options.rolling_update_uid = "uid";
  options.serialize = false;
  expect_error(options, "options.serialize");
}

}  // namespace
}  // namespace dra
