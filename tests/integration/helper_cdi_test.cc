// The Helper's per-claim CDI spec files, over real Unix sockets.
#include <catch2/catch.hpp>
#include <filesystem>
#include <future>

#include "dra/cdi/codec.h"
#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "support/cdi_schema_validator.h"
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
using kubeletplugin::Helper;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using testing::AllocatedClaim;
using testing::HttpGet;
using testing::ReadFile;
using testing::TestDriver;
using testing::WriteFile;

struct Fixture : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();

  Options MakeOptions() const { return HelperDirs::MakeOptions(claims); }

  std::unique_ptr<Helper> Start(TestDriver& driver) const { return Start(driver, MakeOptions()); }
  static std::unique_ptr<Helper> Start(TestDriver& driver, Options options) {
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    INFO(helper.status().ToString());
    REQUIRE(helper.ok());
    return *std::move(helper);
  }

  std::string SpecPath(const std::string& uid) const { return cdi_dir + "/gpu.example.com-claim_" + uid + ".json"; }
};

std::vector<k8s::ClaimRef> Refs(std::initializer_list<k8s::ClaimRef> refs) { return refs; }

void CheckSchema(const std::string& path) {
  INFO(path);
  const std::string text = ReadFile(path);
  REQUIRE(!text.empty());
  CHECK(testing::CdiSchemaValidator::Reference().ValidateText(text) == std::vector<std::string>{});
}

TEST_CASE("the Helper writes the claim's CDI spec, returns its IDs and removes it at unprepare", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  auto helper = f.Start(driver);
  auto client = DraClient::Create(helper->dra_socket_path());
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1", {"gpu-0", "gpu-1"}));

  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  const kubeletclient::PrepareOutcome& outcome = prepared->at("uid-1");
  REQUIRE(outcome.error.empty());
  REQUIRE(outcome.devices.size() == 2);
  CHECK(outcome.devices[0].cdi_device_ids == std::vector<std::string>{"gpu.example.com/claim=uid-1-gpu-0"});
  CHECK(outcome.devices[1].cdi_device_ids == std::vector<std::string>{"gpu.example.com/claim=uid-1-gpu-1"});

  const std::string path = f.SpecPath("uid-1");
  CheckSchema(path);
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(ReadFile(path), cdi::Format::kJson);
  REQUIRE(spec.ok());
  CHECK(spec->cdi_version == "0.3.0");
  CHECK(spec->kind == "gpu.example.com/claim");
  REQUIRE(spec->devices.size() == 2);
  CHECK(spec->devices[0].name == "uid-1-gpu-0");
  CHECK(spec->devices[0].container_edits.env == std::vector<std::string>{"DEVICE=gpu-0"});
  CHECK(spec->devices[1].container_edits.device_nodes.at(0).path == "/dev/gpu-1");
  CHECK((std::filesystem::status(path).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));

  auto unprepared = client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(unprepared.ok());
  CHECK(unprepared->at("uid-1").empty());
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("after a reboot emptied the spec dir, a checkpointed claim gets its spec back", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.claims->Put(AllocatedClaim("ns", "c", "0f1e2d3c-uid"));
  const std::string path = f.SpecPath("0f1e2d3c-uid");
  std::string before;
  {
    auto helper = f.Start(driver);
    auto client = DraClient::Create(helper->dra_socket_path());
    auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "0f1e2d3c-uid"}}));
    REQUIRE(prepared.ok());
    REQUIRE(prepared->at("0f1e2d3c-uid").error.empty());
    before = ReadFile(path);
    REQUIRE(!before.empty());
  }
  // The node reboots: /var/run/cdi is a tmpfs, the checkpoint is on disk.
  std::filesystem::remove_all(f.cdi_dir);

  auto helper = f.Start(driver);
  CHECK(ReadFile(path) == before);  // at start, before the kubelet asks
  auto client = DraClient::Create(helper->dra_socket_path());
  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "0f1e2d3c-uid"}}));
  REQUIRE(prepared.ok());
  const kubeletclient::PrepareOutcome& outcome = prepared->at("0f1e2d3c-uid");
  CHECK(outcome.error.empty());
  CHECK(driver.prepare_calls() == 1);  // answered from the checkpoint
  CHECK(outcome.devices.at(0).cdi_device_ids == std::vector<std::string>{"gpu.example.com/claim=0f1e2d3c-uid-gpu-0"});
  CHECK(ReadFile(path) == before);
  CHECK(cdi::DecodeSpec(before, cdi::Format::kJson)->cdi_version == "0.5.0");  // a name starting with a digit
  CheckSchema(path);
}

cdi::Spec CommonSpec(const std::string& kind) {
  cdi::Spec spec;
  spec.kind = kind;
  cdi::Device& device = spec.devices.emplace_back();
  device.name = "common";
  device.container_edits.env = {"DRA_DRIVER_NAME=gpu.example.com"};
  return spec;
}

TEST_CASE("a node-wide spec is written at start and again before a prepare is answered when it is gone",
          "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  Options options = f.MakeOptions();
  options.cdi.node_specs = {CommonSpec("gpu.example.com/gpu")};
  const std::string path = f.cdi_dir + "/gpu.example.com-gpu.json";
  auto helper = Fixture::Start(driver, options);
  CheckSchema(path);
  const std::string written = ReadFile(path);
  CHECK(cdi::DecodeSpec(written, cdi::Format::kJson)->devices.at(0).name == "common");

  // The tmpfs emptied while the driver ran on (containerd and the kubelet
  // restarted after it): the spec comes back with the answer, for a new
  // claim and for one answered from the checkpoint.
  auto client = DraClient::Create(helper->dra_socket_path());
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}))->at("uid-1").error.empty());
  for (const auto& entry : std::filesystem::directory_iterator(f.cdi_dir)) std::filesystem::remove(entry.path());
  auto again = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(again.ok());
  CHECK(again->at("uid-1").error.empty());
  CHECK(ReadFile(path) == written);
  CHECK(std::filesystem::exists(f.SpecPath("uid-1")));
  CHECK(driver.prepare_calls() == 1);
}

TEST_CASE("a node-wide spec that is invalid or has the per-claim kind stops Start, naming it", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  Options options = f.MakeOptions();
  SECTION("the per-claim kind") {
    options.cdi.node_specs = {CommonSpec("gpu.example.com/gpu"), CommonSpec("gpu.example.com/claim")};
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, options);
    REQUIRE_FALSE(helper.ok());
    CHECK(helper.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(helper.status().message()),
               Catch::StartsWith("options.cdi.node_specs[1].kind: \"gpu.example.com/claim\" is the per-claim"));
  }
  SECTION("no devices") {
    cdi::Spec empty = CommonSpec("gpu.example.com/gpu");
    empty.devices.clear();
    options.cdi.node_specs = {empty};
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, options);
    REQUIRE_FALSE(helper.ok());
    CHECK_THAT(std::string(helper.status().message()), Catch::StartsWith("options.cdi.node_specs[0]: "));
  }
  CHECK_FALSE(std::filesystem::exists(f.cdi_dir + "/gpu.example.com-gpu.json"));
}

TEST_CASE("the claim spec's ID comes first, before IDs of specs the driver writes itself", "[helper][cdi]") {
  // The kubelet reports a device's health under its first CDI ID.
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  driver.AlsoReturnCdiId("gpu.example.com/gpu=common");
  auto helper = f.Start(driver);
  auto client = DraClient::Create(helper->dra_socket_path());
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1", {"gpu-0"}));
  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-1").devices.at(0).cdi_device_ids ==
        std::vector<std::string>{"gpu.example.com/claim=uid-1-gpu-0", "gpu.example.com/gpu=common"});
}

TEST_CASE("at start, a prepared claim's spec that a power loss left empty is written again, intact ones not",
          "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.claims->Put(AllocatedClaim("ns", "damaged", "uid-damaged"));
  f.claims->Put(AllocatedClaim("ns", "intact", "uid-intact", {"gpu-1"}));
  {
    auto helper = f.Start(driver);
    auto client = DraClient::Create(helper->dra_socket_path());
    auto prepared = client->NodePrepareResources(
        DraApi::kV1, Refs({{"ns", "damaged", "uid-damaged"}, {"ns", "intact", "uid-intact"}}));
    REQUIRE(prepared.ok());
    REQUIRE(prepared->at("uid-damaged").error.empty());
  }
  const std::string damaged = f.SpecPath("uid-damaged");
  const std::string intact = f.SpecPath("uid-intact");
  const std::string before = ReadFile(damaged);
  // The spec files are written without fsync: after a power loss the rename
  // may have reached the disk and the data not.
  WriteFile(damaged, "");
  const auto intact_time = std::filesystem::last_write_time(intact);
  const std::string intact_before = ReadFile(intact);

  auto helper = f.Start(driver);
  CHECK(ReadFile(damaged) == before);
  CheckSchema(damaged);
  CHECK(ReadFile(intact) == intact_before);
  CHECK(std::filesystem::last_write_time(intact) == intact_time);  // not rewritten
  CHECK(driver.prepare_calls() == 1);
}

TEST_CASE("a lost spec is re-created only when serialized: an unprepare in the driver goes first", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  Options options = f.MakeOptions();
  options.http_endpoint = "127.0.0.1:0";
  auto helper = Fixture::Start(driver, options);
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  const auto refs = Refs({{"ns", "c", "uid-1"}});
  auto client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(client->NodePrepareResources(DraApi::kV1, refs)->at("uid-1").error.empty());
  const std::string path = f.SpecPath("uid-1");
  REQUIRE(std::filesystem::remove(path));  // as after a reboot

  std::future<decltype(client->NodeUnprepareResources(DraApi::kV1, refs))> unprepared;
  std::future<decltype(client->NodePrepareResources(DraApi::kV1, refs))> prepared;
  struct ReleaseOnExit {  // before the futures wait, also when a REQUIRE fails
    TestDriver& driver;
    ~ReleaseOnExit() { driver.ReleaseCalls(); }
  } release{driver};
  driver.HoldCalls();
  unprepared = std::async(std::launch::async, [&] {
    return DraClient::Create(helper->dra_socket_path())->NodeUnprepareResources(DraApi::kV1, refs);
  });
  REQUIRE(testing::PollUntil([&] { return driver.calls_inside() == 1; }));
  // The checkpoint still has the claim as prepared, without its file.
  prepared = std::async(std::launch::async, [&] {
    return DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, refs);
  });
  auto waiting = [&](int calls) {
    return HttpGet(helper->http_port(), "/metrics")
               .second.find("dra_serialization_waiting_calls " + std::to_string(calls) + "\n") != std::string::npos;
  };
  REQUIRE(testing::PollUntil([&] { return waiting(1); }));
  CHECK_FALSE(std::filesystem::exists(path));
  driver.ReleaseCalls();

  auto unprepare_result = unprepared.get();
  REQUIRE(unprepare_result.ok());
  CHECK(unprepare_result->at("uid-1").empty());
  auto prepare_result = prepared.get();
  REQUIRE(prepare_result.ok());
  CHECK(prepare_result->at("uid-1").error ==
        "claim ns/c was unprepared while its CDI spec waited to be re-created; try again");
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(driver.prepare_calls() == 1);
  CHECK(waiting(0));
}

TEST_CASE("at start, orphaned per-claim specs of this driver are removed, nothing else", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.claims->Put(AllocatedClaim("ns", "c", "uid-kept"));
  {
    auto helper = f.Start(driver);
    auto client = DraClient::Create(helper->dra_socket_path());
    REQUIRE(client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-kept"}})).ok());
  }
  const std::string spec = ReadFile(f.SpecPath("uid-kept"));
  const std::vector<std::string> others = {
      f.cdi_dir + "/gpu.example.com-claim.json",             // a static spec of the same kind
      f.cdi_dir + "/gpu.example.com-gpu_uid-orphan.json",    // another class
      f.cdi_dir + "/nic.example.com-claim_uid-orphan.json",  // another driver
  };
  for (const std::string& path : others) WriteFile(path, spec);
  WriteFile(f.SpecPath("uid-orphan"), spec);  // crash after writing the spec, before the checkpoint knew it

  auto helper = f.Start(driver);
  CHECK_FALSE(std::filesystem::exists(f.SpecPath("uid-orphan")));
  CHECK(std::filesystem::exists(f.SpecPath("uid-kept")));
  for (const std::string& path : others) CHECK(std::filesystem::exists(path));
}

TEST_CASE("invalid CDI edits fail the claim, naming the device and the field", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  cdi::ContainerEdits bad;
  bad.env = {"NOVALUE"};
  driver.ReturnCdiEdits(bad);
  auto helper = f.Start(driver);
  auto client = DraClient::Create(helper->dra_socket_path());
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-1").error ==
        "write CDI spec of claim ns/c: devices[\"uid-1-gpu-0\"].containerEdits.env[0]: \"NOVALUE\" is not KEY=VALUE");
  CHECK_FALSE(std::filesystem::exists(f.SpecPath("uid-1")));
}

TEST_CASE(
    "a driver upgraded to another per-claim kind and format: its running claims' specs stay where they are until "
    "unprepared, new claims get the new kind",
    "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.claims->Put(AllocatedClaim("ns", "old", "uid-old"));
  f.claims->Put(AllocatedClaim("ns", "new", "uid-new", {"gpu-1"}));
  Options previous = f.MakeOptions();
  previous.cdi.node_specs = {CommonSpec("gpu.example.com/gpu")};
  {
    auto helper = f.Start(driver, previous);
    auto client = DraClient::Create(helper->dra_socket_path());
    auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "old", "uid-old"}}));
    REQUIRE(prepared.ok());
    REQUIRE(prepared->at("uid-old").error.empty());
  }
  const std::string old_spec = f.SpecPath("uid-old");
  const std::string old_content = ReadFile(old_spec);

  Options upgraded = previous;
  upgraded.cdi.vendor = "k8s.gpu.example.com";
  upgraded.cdi.class_name = "gpu";
  upgraded.cdi.dir.format = cdi::Format::kYaml;  // the node-wide spec's too
  upgraded.cdi.claim_format = cdi::Format::kYaml;
  auto helper = f.Start(driver, upgraded);
  // The node-wide spec in the new format only: two files defining
  // gpu.example.com/gpu=common would leave it unresolvable.
  CHECK(std::filesystem::exists(f.cdi_dir + "/gpu.example.com-gpu.yaml"));
  CHECK_FALSE(std::filesystem::exists(f.cdi_dir + "/gpu.example.com-gpu.json"));
  // Start repaired nothing and wrote no second file defining the old devices.
  CHECK(ReadFile(old_spec) == old_content);
  CHECK_FALSE(std::filesystem::exists(f.cdi_dir + "/gpu.example.com-claim_uid-old.yaml"));
  CHECK_FALSE(std::filesystem::exists(f.cdi_dir + "/k8s.gpu.example.com-gpu_uid-old.yaml"));
  auto client = DraClient::Create(helper->dra_socket_path());
  // Lost, it comes back where it was, as JSON.
  std::filesystem::remove(old_spec);
  auto again = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "old", "uid-old"}}));
  REQUIRE(again.ok());
  CHECK(again->at("uid-old").devices.at(0).cdi_device_ids.at(0) == "gpu.example.com/claim=uid-old-gpu-0");
  CHECK(ReadFile(old_spec) == old_content);

  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "new", "uid-new"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-new").devices.at(0).cdi_device_ids.at(0) == "k8s.gpu.example.com/gpu=uid-new-gpu-1");
  CheckSchema(f.cdi_dir + "/k8s.gpu.example.com-gpu_uid-new.yaml");

  auto unprepared = client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "old", "uid-old"}}));
  REQUIRE(unprepared.ok());
  CHECK(unprepared->at("uid-old").empty());
  CHECK_FALSE(std::filesystem::exists(old_spec));
  CHECK(driver.prepare_calls() == 2);
}

TEST_CASE("per-claim specs in their own format, node-wide ones in the dir's", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));
  Options options = f.MakeOptions();
  options.cdi.node_specs = {CommonSpec("gpu.example.com/gpu")};
  options.cdi.claim_format = cdi::Format::kYaml;
  auto helper = f.Start(driver, options);
  auto client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}))->at("uid-1").error.empty());
  CheckSchema(f.cdi_dir + "/gpu.example.com-gpu.json");
  CheckSchema(f.cdi_dir + "/gpu.example.com-claim_uid-1.yaml");
  CHECK_FALSE(std::filesystem::exists(f.SpecPath("uid-1")));
  REQUIRE(client->NodeUnprepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}))->at("uid-1").empty());
  CHECK_FALSE(std::filesystem::exists(f.cdi_dir + "/gpu.example.com-claim_uid-1.yaml"));
}

TEST_CASE("CDI options: vendor, class, format, edits with CDI off fail the claim", "[helper][cdi]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnCdiEdits();
  f.claims->Put(AllocatedClaim("ns", "c", "uid-1"));

  Options options = f.MakeOptions();
  options.cdi.vendor = "example.com";
  options.cdi.class_name = "gpu";
  options.cdi.dir.format = cdi::Format::kYaml;
  {
    auto helper = f.Start(driver, options);
    auto client = DraClient::Create(helper->dra_socket_path());
    auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
    REQUIRE(prepared.ok());
    CHECK(prepared->at("uid-1").devices.at(0).cdi_device_ids ==
          std::vector<std::string>{"example.com/gpu=uid-1-gpu-0"});
    CheckSchema(f.cdi_dir + "/example.com-gpu_uid-1.yaml");
  }

  options.cdi.class_name = "gpu-";
  CHECK(Helper::Start(driver, options).status().message() ==
        "options.cdi.vendor/class_name: kind \"example.com/gpu-\": invalid class \"gpu-\": must end with a letter or "
        "digit");

  Options off = f.MakeOptions();
  off.plugin_data_dir = f.dir.Join("other-data");
  off.cdi.enabled = false;
  auto helper = f.Start(driver, off);
  auto client = DraClient::Create(helper->dra_socket_path());
  auto prepared = client->NodePrepareResources(DraApi::kV1, Refs({{"ns", "c", "uid-1"}}));
  REQUIRE(prepared.ok());
  CHECK(prepared->at("uid-1").error == "device gpu-0 of claim ns/c has CDI edits but options.cdi.enabled is off");
}

}  // namespace
}  // namespace dra
