#include <catch2/catch.hpp>

#include "dra/cdi/qualified_name.h"
#include "dra/cdi/spec_dir.h"

namespace dra::cdi {
namespace {

TEST_CASE("vendor and class names follow the CDI parser rules", "[cdi][names]") {
  for (const char* good : {"a", "example.com", "Vendor_1", "a-b.c_d", "x9"}) {
    INFO(good);
    CHECK(ValidateVendorName(good).ok());
    CHECK(ValidateClassName(good).ok());
  }
  CHECK(ValidateVendorName("").message() == "invalid vendor: empty");
  CHECK(ValidateVendorName("1vendor").message() == "invalid vendor \"1vendor\": must start with a letter");
  CHECK(ValidateClassName("gpu-").message() == "invalid class \"gpu-\": must end with a letter or digit");
  CHECK(ValidateClassName("g:pu").message() ==
        "invalid class \"g:pu\": invalid character ':'; allowed are letters, digits, '_', '-' and '.'");
}

TEST_CASE("device names are alphanumeric at both ends and may hold _ - . :", "[cdi][names]") {
  for (const char* good : {"0", "gpu0", "0:mig-1g.5gb", "a_b", "GPU-UUID.1"}) {
    INFO(good);
    CHECK(ValidateDeviceName(good).ok());
  }
  CHECK(ValidateDeviceName("").message() == "invalid device name: empty");
  CHECK(ValidateDeviceName("-gpu").message() == "invalid device name \"-gpu\": must start with a letter or digit");
  CHECK(ValidateDeviceName("gpu.").message() == "invalid device name \"gpu.\": must end with a letter or digit");
  CHECK(ValidateDeviceName("gp/u").message() ==
        "invalid device name \"gp/u\": invalid character '/'; allowed are letters, digits, '_', '-', '.' and ':'");
}

TEST_CASE("kinds and qualified names parse into their parts", "[cdi][names]") {
  absl::StatusOr<Kind> kind = ParseKind("example.com/gpu");
  REQUIRE(kind.ok());
  CHECK(kind->vendor == "example.com");
  CHECK(kind->class_name == "gpu");
  CHECK(kind->ToString() == "example.com/gpu");
  CHECK(ParseKind("gpu").status().message() == "invalid kind \"gpu\": want vendor/class");
  CHECK(ParseKind("example.com/gpu/x").status().message() ==
        "kind \"example.com/gpu/x\": invalid class \"gpu/x\": invalid character '/'; allowed are letters, "
        "digits, '_', '-' and '.'");

  absl::StatusOr<QualifiedName> name = ParseQualifiedName("example.com/gpu=0:mig");
  REQUIRE(name.ok());
  CHECK(name->vendor == "example.com");
  CHECK(name->class_name == "gpu");
  CHECK(name->name == "0:mig");
  CHECK(name->ToString() == "example.com/gpu=0:mig");
  CHECK(ParseQualifiedName("gpu0").status().message() == "unqualified device \"gpu0\": want vendor/class=name");
  CHECK(ParseQualifiedName("example.com/gpu=").status().message() ==
        "device \"example.com/gpu=\": invalid device name: empty");
  CHECK(ParseQualifiedName("/gpu=x").status().message() == "device \"/gpu=x\": kind \"/gpu\": invalid vendor: empty");
}

TEST_CASE("qualified IDs are built only from valid parts", "[cdi][names]") {
  CHECK(*MakeQualifiedName("example.com/gpu", "gpu0") == "example.com/gpu=gpu0");
  CHECK(MakeQualifiedName("example.com", "gpu0").status().message() ==
        "invalid kind \"example.com\": want vendor/class");
  CHECK(MakeQualifiedName("example.com/gpu", "gpu 0").status().message() ==
        "invalid device name \"gpu 0\": invalid character ' '; allowed are letters, digits, '_', '-', '.' and ':'");
}

TEST_CASE("spec file names follow the reference library", "[cdi][names]") {
  const Kind kind{"example.com", "gpu"};
  CHECK(SpecFileName(kind) == "example.com-gpu");
  CHECK(TransientSpecFileName(kind, "2f1c-uid") == "example.com-gpu_2f1c-uid");
  CHECK(TransientSpecFileName(kind, "ns/claim") == "example.com-gpu_ns_claim");
}

}  // namespace
}  // namespace dra::cdi
