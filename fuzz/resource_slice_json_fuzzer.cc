// ResourceSlice JSON (dra::k8s::ParseResourceSlice): every input decodes or
// fails with InvalidArgument, and a decoded slice survives encode -> text ->
// decode unchanged, its encoding included. The legacy node-allocatable shape
// either encodes or fails with InvalidArgument, and what it encodes decodes.
#include "dra/k8s/resource_slice_json.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<dra::k8s::ResourceSlice> slice = dra::k8s::ParseResourceSlice(dra::fuzz::AsText(data, size));
  if (!slice.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(slice.status()));
    return 0;
  }
  const nlohmann::json encoded = dra::k8s::ToJson(*slice);
  absl::StatusOr<dra::k8s::ResourceSlice> again = dra::k8s::ParseResourceSlice(encoded.dump());
  DRA_FUZZ_CHECK(again.ok());
  DRA_FUZZ_CHECK(*again == *slice);
  DRA_FUZZ_CHECK(dra::k8s::ToJson(*again) == encoded);

  absl::StatusOr<nlohmann::json> legacy =
      dra::k8s::ToJson(*slice, {.node_allocatable_shape = dra::k8s::NodeAllocatableShape::kLegacyMappings});
  if (!legacy.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(legacy.status()));
    return 0;
  }
  DRA_FUZZ_CHECK(dra::k8s::ParseResourceSlice(legacy->dump()).ok());
  return 0;
}
