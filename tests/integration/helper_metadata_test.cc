// KEP-5304 device metadata through the Helper, over real Unix sockets: the
// per-request metadata file (a JSON stream, one object per version) and the
// CDI spec that mounts it, in the Go helper's layout; the CDI ID in the
// answer; re-creation after a reboot from the checkpoint; removal at
// unprepare; and the options that must be right.
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "dra/cdi/codec.h"
#include "dra/kubeletplugin/helper.h"
#include "dractl/kubelet_client.h"
#include "support/cdi_schema_validator.h"
#include "support/helper_dirs.h"
#include "support/temp_dir.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using kubeletclient::DraApi;
using kubeletclient::DraClient;
using kubeletplugin::Helper;
using kubeletplugin::InMemoryClaimSource;
using kubeletplugin::Options;
using nlohmann::json;
using testing::AllocatedClaim;
using testing::ReadFile;
using testing::TestDriver;

constexpr char kUid[] = "0d3c5f1e-8a2b-4c6d-9e0f-123456789abc";

struct Fixture : testing::HelperDirs {
  std::shared_ptr<InMemoryClaimSource> claims = std::make_shared<InMemoryClaimSource>();

  Options MakeOptions() const {
    Options options = HelperDirs::MakeOptions(claims);
    options.device_metadata.enabled = true;
    options.device_metadata.versions = {kubeletplugin::kDeviceMetadataV1beta1, kubeletplugin::kDeviceMetadataV1alpha1};
    return options;
  }
  std::string MetadataPath(const std::string& claim, const std::string& request) const {
    return data + "/dra-device-metadata/ns_" + claim + "/" + request + "/metadata.json";
  }
  std::string SpecPath(const std::string& request) const {
    return cdi_dir + "/gpu.example.com_metadata_" + std::string(kUid) + "_" + request + ".json";
  }
};

// The objects of a JSON stream, in order.
std::vector<json> ReadStream(const std::string& path) {
  std::istringstream in(ReadFile(path));
  std::vector<json> objects;
  while (in >> std::ws && in.peek() != EOF) {
    json object;
    in >> object;
    objects.push_back(std::move(object));
  }
  return objects;
}

std::vector<k8s::ClaimRef> Claim() { return {{"ns", "c", kUid}}; }

TEST_CASE("device metadata: the file, its CDI spec and ID in the Go helper's layout", "[helper][metadata]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnMetadata();
  f.claims->Put(AllocatedClaim("ns", "c", kUid, {"gpu-0", "gpu-1"}));
  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());

  auto answer = client->NodePrepareResources(DraApi::kV1, Claim());
  INFO(answer.status().ToString());
  REQUIRE(answer.ok());
  const auto& outcome = answer->at(kUid);
  REQUIRE(outcome.error.empty());
  REQUIRE(outcome.devices.size() == 2);
  const std::string metadata_id = std::string("gpu.example.com/metadata=") + kUid + "_gpu";
  for (const auto& device : outcome.devices) {
    CHECK(device.cdi_device_ids.back() == metadata_id);
  }

  const std::vector<json> stream = ReadStream(f.MetadataPath("c", "gpu"));
  REQUIRE(stream.size() == 2);
  CHECK(stream[0]["apiVersion"] == "metadata.resource.k8s.io/v1beta1");
  CHECK(stream[1]["apiVersion"] == "metadata.resource.k8s.io/v1alpha1");
  for (const json& object : stream) {
    CHECK(object["kind"] == "DeviceMetadata");
    CHECK(object["metadata"] == json{{"name", "c"}, {"namespace", "ns"}, {"uid", kUid}, {"generation", 1}});
    CHECK_FALSE(object.contains("podClaimName"));
    REQUIRE(object["requests"].size() == 1);
    CHECK(object["requests"][0]["name"] == "gpu");
    const json& devices = object["requests"][0]["devices"];
    REQUIRE(devices.size() == 2);
    CHECK(devices[0] ==
          json{{"driver", "gpu.example.com"},
               {"pool", "pool-a"},
               {"name", "gpu-0"},
               {"attributes",
                {{"model", {{"string", "a100"}}}, {"resource.kubernetes.io/pciBusID", {{"string", "0000:3b:00.0"}}}}},
               {"networkData", {{"interfaceName", "net-gpu-0"}}}});
    CHECK(devices[1]["name"] == "gpu-1");
  }
  CHECK((std::filesystem::status(f.MetadataPath("c", "gpu")).permissions() & std::filesystem::perms::others_read) !=
        std::filesystem::perms::none);

  const std::string spec_text = ReadFile(f.SpecPath("gpu"));
  CHECK(testing::CdiSchemaValidator::Reference().ValidateText(spec_text) == std::vector<std::string>{});
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(spec_text, cdi::Format::kJson);
  REQUIRE(spec.ok());
  CHECK(spec->kind == "gpu.example.com/metadata");
  REQUIRE(spec->devices.size() == 1);
  CHECK(spec->devices[0].name == std::string(kUid) + "_gpu");
  REQUIRE(spec->devices[0].container_edits.mounts.size() == 1);
  const cdi::Mount& mount = spec->devices[0].container_edits.mounts[0];
  CHECK(mount.host_path == f.MetadataPath("c", "gpu"));
  CHECK(mount.container_path ==
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/c/gpu/gpu.example.com-metadata.json");
  CHECK(mount.options == std::vector<std::string>{"ro", "bind"});

  // A reboot empties the CDI dir: the next ask re-creates the spec from the
  // checkpoint, without calling the driver.
  std::filesystem::remove(f.SpecPath("gpu"));
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Claim()).ok());
  CHECK(driver.prepare_calls() == 1);
  CHECK(ReadFile(f.SpecPath("gpu")) == spec_text);
  // So does a new instance after a restart.
  helper.reset();
  std::filesystem::remove(f.SpecPath("gpu"));
  std::filesystem::remove(f.MetadataPath("c", "gpu"));
  helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Claim()).ok());
  CHECK(driver.prepare_calls() == 1);
  CHECK(ReadStream(f.MetadataPath("c", "gpu")) == stream);
  CHECK(ReadFile(f.SpecPath("gpu")) == spec_text);

  auto unprepared = client->NodeUnprepareResources(DraApi::kV1, Claim());
  REQUIRE(unprepared.ok());
  CHECK(unprepared->at(kUid).empty());
  CHECK_FALSE(std::filesystem::exists(f.data + "/dra-device-metadata/ns_c"));
  CHECK_FALSE(std::filesystem::exists(f.SpecPath("gpu")));
}

TEST_CASE("device metadata: a template's claim is mounted under its pod claim name, subrequests keep their name",
          "[helper][metadata]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnMetadata();
  k8s::ResourceClaim claim = AllocatedClaim("ns", "pod-gpu-x7k2q", kUid, {"gpu-0"});
  claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"] = "gpu";
  claim.status.allocation->devices.results[0].request = "gpu/large";
  f.claims->Put(claim);
  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());
  const std::vector<k8s::ClaimRef> refs{{"ns", "pod-gpu-x7k2q", kUid}};
  auto answer = client->NodePrepareResources(DraApi::kV1, refs);
  REQUIRE(answer.ok());
  REQUIRE(answer->at(kUid).error.empty());
  CHECK(answer->at(kUid).devices.at(0).request_names == std::vector<std::string>{"gpu"});

  const std::vector<json> stream = ReadStream(f.MetadataPath("pod-gpu-x7k2q", "gpu"));
  REQUIRE(stream.size() == 2);
  CHECK(stream[0]["podClaimName"] == "gpu");
  CHECK(stream[0]["requests"][0]["name"] == "gpu/large");
  absl::StatusOr<cdi::Spec> spec = cdi::DecodeSpec(ReadFile(f.SpecPath("gpu")), cdi::Format::kJson);
  REQUIRE(spec.ok());
  CHECK(spec->devices.at(0).container_edits.mounts.at(0).container_path ==
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/gpu/gpu/gpu.example.com-metadata.json");
}

TEST_CASE("device metadata: at start, files of claims the checkpoint does not know are removed, nothing else",
          "[helper][metadata]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnMetadata();
  f.claims->Put(AllocatedClaim("ns", "c", kUid, {"gpu-0"}));
  {
    auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
    REQUIRE(DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, Claim()).ok());
  }
  // A crash after writing an orphan's files, before the checkpoint knew it.
  const std::string orphan_uid = "11111111-2222-3333-4444-555555555555";
  const std::string orphan_dir = f.data + "/dra-device-metadata/ns_orphan";
  std::filesystem::create_directories(orphan_dir + "/gpu");
  testing::WriteFile(orphan_dir + "/gpu/metadata.json", "{}");
  const std::string orphan_spec = f.cdi_dir + "/gpu.example.com_metadata_" + orphan_uid + "_gpu.json";
  testing::WriteFile(orphan_spec, ReadFile(f.SpecPath("gpu")));
  const std::string other_driver = f.cdi_dir + "/nic.example.com_metadata_" + orphan_uid + "_nic.json";
  testing::WriteFile(other_driver, "{}");
  // Temp files of crashed spec writes: the orphan's goes, the prepared
  // claim's may be a write in progress and stays (as its CDI spec's would).
  const std::string orphan_temp = f.cdi_dir + "/.gpu.example.com_metadata_" + orphan_uid + "_gpu.json.tmp-AbC123";
  testing::WriteFile(orphan_temp, "{");
  const std::string kept_temp = f.cdi_dir + "/.gpu.example.com_metadata_" + std::string(kUid) + "_gpu.json.tmp-XyZ789";
  testing::WriteFile(kept_temp, "{");

  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  CHECK_FALSE(std::filesystem::exists(orphan_dir));
  CHECK_FALSE(std::filesystem::exists(orphan_spec));
  CHECK_FALSE(std::filesystem::exists(orphan_temp));
  CHECK(std::filesystem::exists(kept_temp));
  CHECK(std::filesystem::exists(other_driver));
  CHECK(std::filesystem::exists(f.MetadataPath("c", "gpu")));
  CHECK(std::filesystem::exists(f.SpecPath("gpu")));
}

TEST_CASE("device metadata: off, Device::metadata is ignored, bad options stop start-up", "[helper][metadata]") {
  Fixture f;
  TestDriver driver;
  driver.ReturnMetadata();
  f.claims->Put(AllocatedClaim("ns", "c", kUid, {"gpu-0"}));
  Options off = f.MakeOptions();
  off.device_metadata.enabled = false;
  {
    auto helper = testing::HelperDirs::Start(driver, off);
    auto answer = DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, Claim());
    REQUIRE(answer.ok());
    CHECK(answer->at(kUid).devices.at(0).cdi_device_ids == std::vector<std::string>{TestDriver::CdiId(kUid, "gpu-0")});
    CHECK_FALSE(std::filesystem::exists(f.data + "/dra-device-metadata"));
  }

  auto start_error = [&](Options options) {
    absl::StatusOr<std::unique_ptr<Helper>> helper = Helper::Start(driver, std::move(options));
    REQUIRE_FALSE(helper.ok());
    return std::string(helper.status().message());
  };
  Options options = f.MakeOptions();
  options.device_metadata.versions = {};
  CHECK_THAT(start_error(options), Catch::StartsWith("options.device_metadata.versions: Required value"));
  options.device_metadata.versions = {kubeletplugin::kDeviceMetadataV1alpha1};
  CHECK_THAT(start_error(options), Catch::Contains("must include the latest version metadata.resource.k8s.io/v1beta1"));
  options.device_metadata.versions = {"metadata.resource.k8s.io/v2"};
  CHECK_THAT(start_error(options), Catch::StartsWith("options.device_metadata.versions: Unsupported value: "
                                                     "\"metadata.resource.k8s.io/v2\""));
  options = f.MakeOptions();
  options.cdi.enabled = false;
  CHECK_THAT(start_error(options), Catch::StartsWith("options.device_metadata.enabled: needs options.cdi.enabled"));
}

TEST_CASE(
    "device metadata deferred: UpdateRequestMetadata replaces the request's file with the next generation, "
    "kept through a reboot and a crash",
    "[helper][metadata]") {
  Fixture f;
  TestDriver driver;  // prepares without metadata, as a driver that learns it later
  f.claims->Put(AllocatedClaim("ns", "c", kUid, {"gpu-0", "gpu-1"}));
  auto helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  auto client = DraClient::Create(helper->dra_socket_path());
  auto answer = client->NodePrepareResources(DraApi::kV1, Claim());
  REQUIRE(answer.ok());
  REQUIRE(answer->at(kUid).error.empty());
  const std::string path = f.MetadataPath("c", "gpu");
  const std::vector<json> first = ReadStream(path);
  REQUIRE(first.size() == 2);
  CHECK(first[0]["metadata"]["generation"] == 1);
  CHECK(first[0]["requests"][0]["devices"][0] ==
        json{{"driver", "gpu.example.com"}, {"pool", "pool-a"}, {"name", "gpu-0"}});
  const std::string spec_text = ReadFile(f.SpecPath("gpu"));

  auto device = [](const std::string& name, const std::string& interface) {
    kubeletplugin::Device d;
    d.pool_name = "pool-a";
    d.device_name = name;
    kubeletplugin::DeviceMetadata& metadata = d.metadata.emplace();
    metadata.attributes["model"].string_value = "a100";
    metadata.network_data.emplace().interface_name = interface;
    return d;
  };
  const k8s::ClaimRef ref = Claim()[0];
  // Any order; the file keeps the prepare result's.
  REQUIRE(helper->UpdateRequestMetadata(ref, "gpu", {device("gpu-1", "eth1"), device("gpu-0", "eth0")}).ok());
  std::vector<json> second = ReadStream(path);
  REQUIRE(second.size() == 2);
  for (const json& object : second) {
    CHECK(object["metadata"] == json{{"name", "c"}, {"namespace", "ns"}, {"uid", kUid}, {"generation", 2}});
    const json& devices = object["requests"][0]["devices"];
    REQUIRE(devices.size() == 2);
    CHECK(devices[0] == json{{"driver", "gpu.example.com"},
                             {"pool", "pool-a"},
                             {"name", "gpu-0"},
                             {"attributes", {{"model", {{"string", "a100"}}}}},
                             {"networkData", {{"interfaceName", "eth0"}}}});
    CHECK(devices[1]["networkData"]["interfaceName"] == "eth1");
  }
  CHECK(second[1]["apiVersion"] == "metadata.resource.k8s.io/v1alpha1");
  CHECK(ReadFile(f.SpecPath("gpu")) == spec_text);  // the mount is the same
  // The kubelet asking again gets the same answer; the driver is not called.
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Claim()).ok());
  CHECK(driver.prepare_calls() == 1);
  REQUIRE(helper->UpdateRequestMetadata(ref, "gpu", {device("gpu-0", "eth2"), device("gpu-1", "eth3")}).ok());
  const std::vector<json> third = ReadStream(path);
  CHECK(third[0]["metadata"]["generation"] == 3);

  // Refusals name what is wrong and leave the file alone.
  auto refused = [&](const k8s::ClaimRef& claim, const std::string& request,
                     const std::vector<kubeletplugin::Device>& devices) {
    absl::Status status = helper->UpdateRequestMetadata(claim, request, devices);
    CHECK(ReadStream(path) == third);
    return status;
  };
  absl::Status status = refused(ref, "gpu", {device("gpu-0", "x"), device("gpu-7", "y")});
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(status.message()),
             Catch::Contains("has device pool-a/gpu-7, which it was not prepared with") &&
                 Catch::Contains("(pool-a/gpu-0, pool-a/gpu-1)"));
  status = refused(ref, "gpu", {device("gpu-0", "x")});
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(status.message()), Catch::Contains("lacks a device"));
  status = refused(ref, "gpu", {device("gpu-0", "x"), device("gpu-0", "y")});
  CHECK_THAT(std::string(status.message()), Catch::Contains("device pool-a/gpu-0 is listed twice"));
  status = refused(ref, "nic", {device("gpu-0", "x")});
  CHECK(status.code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(status.message()), Catch::Contains("request \"nic\" of claim ns/c"));
  status = refused({"ns", "c", "99999999-2222-3333-4444-555555555555"}, "gpu", {device("gpu-0", "x")});
  CHECK(status.code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(status.message()), Catch::Contains("is not prepared"));
  status = refused({"ns", "other", kUid}, "gpu", {device("gpu-0", "x")});
  CHECK(status.code() == absl::StatusCode::kNotFound);

  // A reboot empties the tmpfs: the file comes back as last updated.
  helper.reset();
  std::filesystem::remove(path);
  std::filesystem::remove(f.SpecPath("gpu"));
  helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  client = DraClient::Create(helper->dra_socket_path());
  REQUIRE(client->NodePrepareResources(DraApi::kV1, Claim()).ok());
  CHECK(ReadStream(path) == third);
  // A crash between recording an update and writing it: start-up writes it.
  helper.reset();
  testing::WriteFile(path, ReadFile(path).substr(0, 10));
  helper = testing::HelperDirs::Start(driver, f.MakeOptions());
  CHECK(ReadStream(path) == third);
  CHECK(driver.prepare_calls() == 1);

  helper->Stop();
  CHECK(helper->UpdateRequestMetadata(ref, "gpu", {device("gpu-0", "x"), device("gpu-1", "y")}).code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("device metadata deferred: refused with device metadata off", "[helper][metadata]") {
  Fixture f;
  TestDriver driver;
  f.claims->Put(AllocatedClaim("ns", "c", kUid, {"gpu-0"}));
  Options options = f.MakeOptions();
  options.device_metadata.enabled = false;
  auto helper = testing::HelperDirs::Start(driver, options);
  REQUIRE(DraClient::Create(helper->dra_socket_path())->NodePrepareResources(DraApi::kV1, Claim()).ok());
  kubeletplugin::Device device;
  device.pool_name = "pool-a";
  device.device_name = "gpu-0";
  absl::Status status = helper->UpdateRequestMetadata(Claim()[0], "gpu", {device});
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(status.message()), Catch::Contains("options.device_metadata.enabled is off"));
}

}  // namespace
}  // namespace dra
