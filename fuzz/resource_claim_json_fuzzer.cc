// ResourceClaim JSON (dra::k8s::ParseResourceClaim): every input decodes or
// fails with InvalidArgument, and a decoded claim survives encode -> text ->
// decode unchanged, its encoding included.
#include "dra/k8s/resource_claim_json.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<dra::k8s::ResourceClaim> claim = dra::k8s::ParseResourceClaim(dra::fuzz::AsText(data, size));
  if (!claim.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(claim.status()));
    return 0;
  }
  const nlohmann::json encoded = dra::k8s::ToJson(*claim);
  absl::StatusOr<dra::k8s::ResourceClaim> again = dra::k8s::ParseResourceClaim(encoded.dump());
  DRA_FUZZ_CHECK(again.ok());
  DRA_FUZZ_CHECK(*again == *claim);
  DRA_FUZZ_CHECK(dra::k8s::ToJson(*again) == encoded);
  return 0;
}
