// dra::k8s::Quantity::Parse: every input parses or fails with
// InvalidArgument; a parsed quantity's canonical form parses to an equal
// quantity with the same canonical form, and the integer views do not
// overflow (UBSan watches the arithmetic).
#include "dra/k8s/quantity.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<dra::k8s::Quantity> quantity = dra::k8s::Quantity::Parse(dra::fuzz::AsText(data, size));
  if (!quantity.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(quantity.status()));
    return 0;
  }
  const std::string canonical = quantity->ToString();
  absl::StatusOr<dra::k8s::Quantity> again = dra::k8s::Quantity::Parse(canonical);
  DRA_FUZZ_CHECK(again.ok());
  DRA_FUZZ_CHECK(*again == *quantity);
  DRA_FUZZ_CHECK(again->ToString() == canonical);
  DRA_FUZZ_CHECK(again->Value() == quantity->Value());
  DRA_FUZZ_CHECK(again->MilliValue() == quantity->MilliValue());
  DRA_FUZZ_CHECK((*quantity - *again).IsZero());
  return 0;
}
