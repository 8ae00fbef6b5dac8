// Kubernetes' protobuf wire format as the API server sends it
// (DecodeProtobuf, in src/k8s/protobuf_codec.h: ResourceSlices, their
// lists, Status): every body decodes to JSON or fails with a Status; what
// decodes and encodes again decodes to the same JSON.
#include "fuzz_check.h"
#include "k8s/protobuf_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<nlohmann::json> object = dra::k8s::internal::DecodeProtobuf(dra::fuzz::AsText(data, size));
  if (!object.ok()) return 0;
  absl::StatusOr<std::string> encoded = dra::k8s::internal::EncodeProtobuf(*object);
  if (!encoded.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(encoded.status()));
    return 0;
  }
  absl::StatusOr<nlohmann::json> again = dra::k8s::internal::DecodeProtobuf(*encoded);
  DRA_FUZZ_CHECK(again.ok());
  DRA_FUZZ_CHECK(*again == *object);
  return 0;
}
