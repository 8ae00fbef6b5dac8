// CDI spec files (dra::cdi::DecodeSpec), as JSON and as YAML: every input
// decodes or fails with InvalidArgument. A spec that also validates encodes
// in both formats; what it encodes decodes to the same spec (with cdiVersion
// written as resolved) and encodes to the same bytes.
#include "dra/cdi/codec.h"
#include "dra/cdi/validation.h"
#include "dra/cdi/version.h"
#include "fuzz_check.h"

namespace {

using dra::cdi::Format;

void CheckRoundTrip(const dra::cdi::Spec& spec) {
  dra::cdi::Spec expected = spec;
  absl::StatusOr<dra::cdi::Version> version = dra::cdi::ResolveVersion(spec);
  if (!version.ok()) {
    DRA_FUZZ_CHECK(!dra::cdi::EncodeSpec(spec, Format::kJson).ok());
    return;
  }
  expected.cdi_version = version->ToString();
  for (Format format : {Format::kJson, Format::kYaml}) {
    absl::StatusOr<std::string> encoded = dra::cdi::EncodeSpec(spec, format);
    DRA_FUZZ_CHECK(encoded.ok());
    absl::StatusOr<dra::cdi::Spec> again = dra::cdi::DecodeSpec(*encoded, format);
    DRA_FUZZ_CHECK(again.ok());
    DRA_FUZZ_CHECK(*again == expected);
    absl::StatusOr<std::string> reencoded = dra::cdi::EncodeSpec(*again, format);
    DRA_FUZZ_CHECK(reencoded.ok());
    DRA_FUZZ_CHECK(*reencoded == *encoded);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(dra::fuzz::AsText(data, size));
  for (Format format : {Format::kJson, Format::kYaml}) {
    absl::StatusOr<dra::cdi::Spec> spec = dra::cdi::DecodeSpec(text, format);
    if (!spec.ok()) {
      DRA_FUZZ_CHECK(absl::IsInvalidArgument(spec.status()));
      continue;
    }
    if (absl::Status valid = dra::cdi::ValidateSpec(*spec); !valid.ok()) {
      DRA_FUZZ_CHECK(absl::IsInvalidArgument(valid));
      continue;
    }
    CheckRoundTrip(*spec);
  }
  return 0;
}
