#include "k8s/protobuf_codec.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "dra/k8s/resource_slice_json.h"
#include "k8s/meta_v1.pb.h"
#include "k8s/resource_v1.pb.h"
#include "k8s/runtime.pb.h"
#include "support/resource_slice_fixtures.h"

namespace dra::k8s::internal {
namespace {

using nlohmann::json;
namespace meta = ::k8s::io::apimachinery::pkg::apis::meta::v1;
namespace resource = ::k8s::io::api::resource::v1;
namespace runtime = ::k8s::io::apimachinery::pkg::runtime;

template <typename T>
T Must(absl::StatusOr<T> value) {
  if (!value.ok()) FAIL(value.status().ToString());
  return *std::move(value);
}

std::string Envelope(const std::string& api_version, const std::string& kind, const google::protobuf::Message& object) {
  runtime::Unknown unknown;
  unknown.mutable_typemeta()->set_apiversion(api_version);
  unknown.mutable_typemeta()->set_kind(kind);
  object.SerializeToString(unknown.mutable_raw());
  return std::string("k8s\0", 4) + unknown.SerializeAsString();
}

std::string Frame(const std::string& payload) {
  const size_t n = payload.size();
  std::string out{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                  static_cast<char>(n)};
  return out + payload;
}

TEST_CASE("A slice with every field survives protobuf both ways, typed and as JSON") {
  for (const char* text : {dra::testing::kSlice, dra::testing::kCounterSlice}) {
    const json original = json::parse(text);
    const std::string wire = Must(EncodeProtobuf(original));
    CHECK(wire.substr(0, 4) == std::string("k8s\0", 4));
    CHECK(wire.size() < original.dump().size());
    const json decoded = Must(DecodeProtobuf(wire));
    CHECK(Must(ResourceSliceFromJson(decoded)) == Must(ResourceSliceFromJson(original)));
    CHECK(decoded == original);
  }
}

// A 1.36 server answers in protobuf with its shape of node allocatable
// resources (Device field 13, retired in 1.37): kept, not silently lost.
TEST_CASE("Kubernetes 1.36's nodeAllocatableResourceMappings survive protobuf both ways") {
  const json original = json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
      "metadata": {"name": "s"},
      "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "n", "generation": 1,
               "resourceSliceCount": 1},
               "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": "16Gi"}},
                            "nodeAllocatableResourceMappings": {
                                "cpu": {"allocationMultiplier": "8"},
                                "memory": {"capacityKey": "memory", "allocationMultiplier": "2"}}}]}})");
  const json decoded = Must(DecodeProtobuf(Must(EncodeProtobuf(original))));
  CHECK(decoded["spec"]["devices"][0]["nodeAllocatableResourceMappings"] ==
        original["spec"]["devices"][0]["nodeAllocatableResourceMappings"]);
  CHECK(Must(ResourceSliceFromJson(decoded)).spec.devices[0].node_allocatable_resources.size() == 2);
}

TEST_CASE("The envelope names the kind, the message carries the fields with Kubernetes' numbers") {
  const json slice = json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
      "metadata": {"name": "s", "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u",
                   "controller": true}], "creationTimestamp": "2026-03-01T09:00:00Z"},
      "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "generation": 2, "resourceSliceCount": 1},
               "nodeName": "n", "devices": [{"name": "gpu-0", "attributes": {"index": {"int": 0}},
               "capacity": {"memory": {"value": "80Gi"}}}]}})");
  const std::string wire = Must(EncodeProtobuf(slice));
  runtime::Unknown unknown;
  REQUIRE(unknown.ParseFromString(wire.substr(4)));
  CHECK(unknown.typemeta().apiversion() == "resource.k8s.io/v1");
  CHECK(unknown.typemeta().kind() == "ResourceSlice");
  resource::ResourceSlice message;
  REQUIRE(message.ParseFromString(unknown.raw()));
  CHECK(message.metadata().name() == "s");
  CHECK(message.metadata().creationtimestamp().seconds() == 1772355600);
  CHECK(message.metadata().ownerreferences(0).controller());
  CHECK(message.spec().pool().generation() == 2);
  CHECK(message.spec().devices(0).attributes().at("index").has_int_());
  CHECK(message.spec().devices(0).attributes().at("index").int_() == 0);
  CHECK(message.spec().devices(0).capacity().at("memory").value().string() == "80Gi");
}

TEST_CASE("What the schema cannot carry is refused with the field's path, so the client sends JSON") {
  json slice = json::parse(dra::testing::kSlice);
  slice["spec"]["devices"][1]["futureField"] = true;
  absl::StatusOr<std::string> wire = EncodeProtobuf(slice);
  REQUIRE(absl::IsInvalidArgument(wire.status()));
  CHECK_THAT(std::string(wire.status().message()), Catch::Contains("spec.devices[1].futureField: unknown field"));

  slice = json::parse(dra::testing::kSlice);
  slice["spec"]["pool"]["generation"] = "2";
  CHECK_THAT(std::string(EncodeProtobuf(slice).status().message()),
             Catch::Contains("spec.pool.generation: not a 64-bit integer"));
  slice = json::parse(dra::testing::kSlice);
  slice["metadata"]["creationTimestamp"] = "yesterday";
  CHECK_THAT(std::string(EncodeProtobuf(slice).status().message()),
             Catch::Contains("metadata.creationTimestamp: not an RFC 3339 time"));
  slice = json::parse(dra::testing::kSlice);
  slice["spec"]["devices"][0]["attributes"]["model"]["string"] = 7;
  CHECK_THAT(std::string(EncodeProtobuf(slice).status().message()),
             Catch::Contains("spec.devices[0].attributes[\"model\"].string: not a string"));

  CHECK(absl::IsInvalidArgument(EncodeProtobuf(json{{"apiVersion", "v1"}, {"kind", "Pod"}}).status()));
  CHECK(absl::IsInvalidArgument(EncodeProtobuf(json{{"kind", "ResourceSlice"}}).status()));
}

TEST_CASE("Lists, Status and PartialObjectMetadata decode, managed fields keep their JSON") {
  resource::ResourceSliceList list;
  list.mutable_metadata()->set_resourceversion("42");
  list.mutable_metadata()->set_continue_("token");
  auto* item = list.add_items();
  item->mutable_metadata()->set_name("a");
  auto* managed = item->mutable_metadata()->add_managedfields();
  managed->set_manager("dra");
  managed->mutable_fieldsv1()->set_raw(R"({"f:spec":{}})");
  const json decoded = Must(DecodeProtobuf(Envelope("resource.k8s.io/v1", "ResourceSliceList", list)));
  CHECK(decoded["kind"] == "ResourceSliceList");
  CHECK(decoded["metadata"]["resourceVersion"] == "42");
  CHECK(decoded["metadata"]["continue"] == "token");
  CHECK(decoded["items"][0]["metadata"]["name"] == "a");
  CHECK(decoded["items"][0]["metadata"]["managedFields"][0]["fieldsV1"] == json::parse(R"({"f:spec":{}})"));

  meta::Status status;
  status.set_status("Failure");
  status.set_reason("Conflict");
  status.set_code(409);
  status.mutable_details()->add_causes()->set_field("spec.devices");
  const json st = Must(DecodeProtobuf(Envelope("v1", "Status", status)));
  CHECK(st["kind"] == "Status");
  CHECK(st["code"] == 409);
  CHECK(st["details"]["causes"][0]["field"] == "spec.devices");

  meta::PartialObjectMetadata metadata;
  metadata.mutable_metadata()->set_name("a");
  metadata.mutable_metadata()->set_resourceversion("43");
  const json partial = Must(DecodeProtobuf(Envelope("meta.k8s.io/v1", "PartialObjectMetadata", metadata)));
  CHECK(partial == json::parse(R"({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                                   "metadata": {"name": "a", "resourceVersion": "43"}})"));
}

TEST_CASE("Bodies that are not Kubernetes protobuf are errors, not crashes") {
  CHECK(absl::IsInternal(DecodeProtobuf("{\"kind\":\"Status\"}").status()));
  CHECK(absl::IsInternal(DecodeProtobuf(std::string("k8s\0\xff\xff", 6)).status()));
  meta::Status status;
  CHECK_THAT(std::string(DecodeProtobuf(Envelope("v1", "Pod", status)).status().message()),
             Catch::Contains("no protobuf schema here for v1 Pod"));
  CHECK(absl::IsInternal(DecodeProtobufWatchEvent("\xff\xff").status()));
}

TEST_CASE("Watch frames split at any chunking, each an event around an envelope") {
  resource::ResourceSlice slice;
  slice.mutable_metadata()->set_name("a");
  slice.mutable_metadata()->set_resourceversion("7");
  meta::WatchEvent event;
  event.set_type("MODIFIED");
  event.mutable_object()->set_raw(Envelope("resource.k8s.io/v1", "ResourceSlice", slice));
  const std::string stream = Frame(event.SerializeAsString()) + Frame(event.SerializeAsString());

  FrameDecoder decoder;
  std::vector<json> events;
  for (char c : stream) {
    REQUIRE(decoder
                .Feed(std::string_view(&c, 1),
                      [&](std::string_view frame) {
                        events.push_back(Must(DecodeProtobufWatchEvent(frame)));
                        return absl::OkStatus();
                      })
                .ok());
  }
  REQUIRE(events.size() == 2);
  CHECK(events[1]["type"] == "MODIFIED");
  CHECK(events[1]["object"]["metadata"]["resourceVersion"] == "7");
  CHECK(events[1]["object"]["kind"] == "ResourceSlice");
  CHECK(decoder.pending() == 0);

  FrameDecoder small(16);
  absl::Status status = small.Feed(Frame(std::string(17, 'x')), [](std::string_view) { return absl::OkStatus(); });
  CHECK_THAT(std::string(status.message()), Catch::Contains("over the limit of 16"));
}

TEST_CASE("Content types") {
  CHECK(IsProtobufContentType("application/vnd.kubernetes.protobuf"));
  CHECK(IsProtobufContentType("application/vnd.kubernetes.protobuf;stream=watch"));
  CHECK_FALSE(IsProtobufContentType("application/json"));
  CHECK(HasProtobufSchema(kResourceSlices));
  CHECK_FALSE(HasProtobufSchema(kResourceClaims));
}

}  // namespace
}  // namespace dra::k8s::internal
