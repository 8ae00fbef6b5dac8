// The Helper's DRA service (src/kubeletplugin/grpc_services.cc, over
// claim_preparer.cc) fed mutated kubelet requests, in process: one Helper
// per fuzzer process on Unix sockets in a temp dir, with TestDriver
// returning CDI edits and device metadata (so that the Helper writes
// per-claim files named after the claim) and a claim source that has every
// claim it is asked for.
//
// Input: one byte choosing the API (even: v1, odd: v1beta1), then a
// NodePrepareResourcesRequest. The same bytes are then sent as a
// NodeUnprepareResourcesRequest (the two messages have the same wire shape),
// as the kubelet does when the pod goes.
//
// Checks: both calls answer OK with an entry for every distinct claim UID;
// every claim prepared unprepares without error; afterwards the checkpoint
// holds no claim and no file is left anywhere in the temp dir but the
// sockets, the checkpoint and the serializer's lock file (a per-claim file
// that escaped its directory would be there too: the Helper's dirs are two
// levels down).
#include <filesystem>
#include <set>

#include <grpcpp/grpcpp.h>

#include "dra/kubeletplugin/claim_source.h"
#include "dra/kubeletplugin/helper.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "fuzz_check.h"
#include "fuzz_temp_dir.h"
#include "kubeletplugin/checkpoint.h"
#include "support/discard_logger.h"
#include "support/test_driver.h"

namespace {

namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
using dra::kubeletplugin::ClaimSource;

// Every claim exists, allocated to (name length % 3) devices of the test
// driver, except those whose name starts with "gone", which are NotFound.
class AnyClaimSource : public ClaimSource {
 public:
  absl::StatusOr<dra::k8s::ResourceClaim> GetClaim(const dra::k8s::ClaimRef& ref, const dra::CallContext&) override {
    if (ref.name.starts_with("gone")) return absl::NotFoundError("resourceclaims \"" + ref.name + "\" not found");
    std::vector<std::string> devices;
    for (size_t i = 0; i < ref.name.size() % 3; ++i) devices.push_back("gpu-" + std::to_string(i));
    return dra::testing::AllocatedClaim(ref.namespace_, ref.name, ref.uid, devices);
  }
};

struct Fixture {
  std::string root = dra::fuzz::ProcessTempDir().path();
  std::string base = root + "/a/b";
  std::string data_dir = base + "/plugins/gpu.example.com";
  dra::testing::TestDriver driver;
  std::unique_ptr<dra::kubeletplugin::Helper> helper;
  std::unique_ptr<v1::DRAPlugin::Stub> v1_stub;
  std::unique_ptr<v1beta1::DRAPlugin::Stub> v1beta1_stub;

  Fixture() {
    std::filesystem::create_directories(base + "/registry");
    dra::kubeletplugin::Options options;
    options.driver_name = dra::testing::kTestDriverName;
    options.node_name = "node-1";
    options.registrar_dir = base + "/registry";
    options.plugin_data_dir = data_dir;
    options.claim_source = std::make_shared<AnyClaimSource>();
    options.logger = dra::testing::DiscardLogger();
    options.cdi.dir.path = base + "/cdi";
    options.device_metadata.enabled = true;
    options.device_metadata.versions = {dra::kubeletplugin::kDeviceMetadataV1beta1};
    options.shutdown_grace = absl::Milliseconds(100);
    driver.ReturnCdiEdits();
    driver.ReturnMetadata();
    absl::StatusOr<std::unique_ptr<dra::kubeletplugin::Helper>> started =
        dra::kubeletplugin::Helper::Start(driver, std::move(options));
    if (!started.ok()) {
      std::fprintf(stderr, "Helper::Start: %s\n", started.status().ToString().c_str());
      std::abort();
    }
    helper = *std::move(started);
    auto channel = grpc::CreateChannel("unix://" + data_dir + "/dra.sock", grpc::InsecureChannelCredentials());
    v1_stub = v1::DRAPlugin::NewStub(channel);
    v1beta1_stub = v1beta1::DRAPlugin::NewStub(channel);
  }

  // Files (not directories) under the temp dir, other than those the Helper
  // keeps for its whole life.
  std::vector<std::string> StrayFiles() const {
    static const std::set<std::string> kExpected = {base + "/registry/gpu.example.com-reg.sock", data_dir + "/dra.sock",
                                                    data_dir + "/checkpoint.json", data_dir + "/serialize.lock"};
    std::vector<std::string> stray;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (!entry.is_directory() && !kExpected.contains(entry.path().string())) stray.push_back(entry.path());
    }
    return stray;
  }
};

Fixture& TheFixture() {
  static Fixture fixture;
  return fixture;
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

// The v1 and v1beta1 APIs have the same messages in different packages.
#define DRA_API_TAG(Tag, ns)                                      \
  struct Tag {                                                    \
    using Stub = ns::DRAPlugin::Stub;                             \
    using PrepareRequest = ns::NodePrepareResourcesRequest;       \
    using PrepareResponse = ns::NodePrepareResourcesResponse;     \
    using UnprepareRequest = ns::NodeUnprepareResourcesRequest;   \
    using UnprepareResponse = ns::NodeUnprepareResourcesResponse; \
  }
DRA_API_TAG(V1, v1);
DRA_API_TAG(V1beta1, v1beta1);
#undef DRA_API_TAG

// -1 (not for the corpus) when the bytes are no request.
template <typename Api>
int PrepareThenUnprepare(typename Api::Stub& stub, std::string_view bytes) {
  typename Api::PrepareRequest prepare;
  typename Api::UnprepareRequest unprepare;
  if (!prepare.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return -1;
  DRA_FUZZ_CHECK(unprepare.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  std::set<std::string> uids;
  for (const auto& claim : prepare.claims()) uids.insert(claim.uid());

  typename Api::PrepareResponse prepared;
  grpc::Status status = stub.NodePrepareResources(Context().get(), prepare, &prepared);
  if (!status.ok()) std::fprintf(stderr, "NodePrepareResources: %s\n", status.error_message().c_str());
  DRA_FUZZ_CHECK(status.ok());
  DRA_FUZZ_CHECK(static_cast<size_t>(prepared.claims_size()) == uids.size());
  for (const std::string& uid : uids) DRA_FUZZ_CHECK(prepared.claims().contains(uid));

  typename Api::UnprepareResponse unprepared;
  status = stub.NodeUnprepareResources(Context().get(), unprepare, &unprepared);
  if (!status.ok()) std::fprintf(stderr, "NodeUnprepareResources: %s\n", status.error_message().c_str());
  DRA_FUZZ_CHECK(status.ok());
  DRA_FUZZ_CHECK(static_cast<size_t>(unprepared.claims_size()) == uids.size());
  for (const auto& [uid, outcome] : prepared.claims()) {
    if (!outcome.error().empty()) continue;
    DRA_FUZZ_CHECK(unprepared.claims().contains(uid));
    if (!unprepared.claims().at(uid).error().empty()) {
      std::fprintf(stderr, "unprepare of prepared claim %s: %s\n", uid.c_str(),
                   unprepared.claims().at(uid).error().c_str());
    }
    DRA_FUZZ_CHECK(unprepared.claims().at(uid).error().empty());
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  Fixture& fixture = TheFixture();
  const std::string_view request = dra::fuzz::AsText(data + 1, size - 1);
  const int result = data[0] % 2 == 0 ? PrepareThenUnprepare<V1>(*fixture.v1_stub, request)
                                      : PrepareThenUnprepare<V1beta1>(*fixture.v1beta1_stub, request);
  if (result != 0) return result;
  absl::StatusOr<std::unique_ptr<dra::kubeletplugin::internal::Checkpoint>> checkpoint =
      dra::kubeletplugin::internal::Checkpoint::Open(fixture.data_dir + "/checkpoint.json");
  DRA_FUZZ_CHECK(checkpoint.ok());
  DRA_FUZZ_CHECK((*checkpoint)->Entries().empty());
  const std::vector<std::string> stray = fixture.StrayFiles();
  for (const std::string& path : stray) std::fprintf(stderr, "left behind: %s\n", path.c_str());
  DRA_FUZZ_CHECK(stray.empty());
  return 0;
}
