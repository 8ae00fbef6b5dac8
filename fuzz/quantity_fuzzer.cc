// dra::k8s::Quantity::Parse: every input parses or fails with
// InvalidArgument; a parsed quantity's canonical form parses to an equal
// quantity, whose canonical form is then a fixed point; the integer views do
// not overflow (UBSan watches the arithmetic).
//
// Only a fixed point after one round, as in apimachinery: "62.5Ki" prints
// "64000" (BinarySI that is no whole number of Ki), which parses as DecimalSI
// and prints "64k" (regressions/quantity/binary-si-not-whole-ki).
#include "dra/k8s/quantity.h"
#include "fuzz_check.h"

namespace {

dra::k8s::Quantity Reparse(const dra::k8s::Quantity& quantity) {
  absl::StatusOr<dra::k8s::Quantity> again = dra::k8s::Quantity::Parse(quantity.ToString());
  DRA_FUZZ_CHECK(again.ok());
  DRA_FUZZ_CHECK(*again == quantity);
  DRA_FUZZ_CHECK(again->Value() == quantity.Value());
  DRA_FUZZ_CHECK(again->MilliValue() == quantity.MilliValue());
  DRA_FUZZ_CHECK((quantity - *again).IsZero());
  return *again;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<dra::k8s::Quantity> quantity = dra::k8s::Quantity::Parse(dra::fuzz::AsText(data, size));
  if (!quantity.ok()) {
    DRA_FUZZ_CHECK(absl::IsInvalidArgument(quantity.status()));
    return 0;
  }
  const dra::k8s::Quantity once = Reparse(*quantity);
  DRA_FUZZ_CHECK(Reparse(once).ToString() == once.ToString());
  return 0;
}
