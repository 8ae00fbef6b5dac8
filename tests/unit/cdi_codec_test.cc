#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "cdi_test_specs.h"
#include "dra/cdi/codec.h"
#include "dra/cdi/validation.h"
#include "support/cdi_schema_validator.h"
#include "support/temp_dir.h"

namespace dra::cdi {
namespace {

using dra::testing::CdiSchemaValidator;
using testing::FullSpec;
using testing::MinimalSpec;

const std::string kGoldenDir = DRA_SOURCE_DIR "/tests/data/cdi";
const std::string kReferenceTestdata = DRA_REFERENCE_DIR "/cdi/testdata";

void CheckSchema(const std::string& text) {
  INFO(text);
  CHECK(CdiSchemaValidator::Reference().ValidateText(text) == std::vector<std::string>{});
}

// Compares with tests/data/cdi/<name>; DRA_UPDATE_GOLDEN=1 rewrites it.
void CheckGolden(const std::string& name, const std::string& text) {
  const std::string path = kGoldenDir + "/" + name;
  if (std::getenv("DRA_UPDATE_GOLDEN") != nullptr) dra::testing::WriteFile(path, text);
  INFO(path);
  CHECK(dra::testing::ReadFile(path) == text);
}

struct GoldenCase {
  const char* file;
  Spec spec;
  Format format;
};

TEST_CASE("specs encode to the golden files, validate against the schema and decode back", "[cdi][codec]") {
  const GoldenCase cases[] = {
      {"minimal.json", MinimalSpec(), Format::kJson},
      {"minimal.yaml", MinimalSpec(), Format::kYaml},
      {"full.json", FullSpec(), Format::kJson},
      {"full.yaml", FullSpec(), Format::kYaml},
  };
  for (const GoldenCase& c : cases) {
    INFO(c.file);
    absl::StatusOr<std::string> text = EncodeSpec(c.spec, c.format);
    REQUIRE(text.ok());
    CheckGolden(c.file, *text);
    CheckSchema(*text);
    CHECK(*EncodeSpec(c.spec, c.format) == *text);  // stable

    absl::StatusOr<Spec> decoded = DecodeSpec(*text, c.format);
    REQUIRE(decoded.ok());
    Spec expected = c.spec;
    expected.cdi_version = decoded->cdi_version;
    CHECK(*decoded == expected);
    CHECK(ValidateSpec(*decoded).ok());
  }
}

TEST_CASE("the version written is the minimum unless pinned", "[cdi][codec]") {
  CHECK(DecodeSpec(*EncodeSpec(MinimalSpec(), Format::kJson), Format::kJson)->cdi_version == "0.3.0");
  CHECK(DecodeSpec(*EncodeSpec(FullSpec(), Format::kJson), Format::kJson)->cdi_version == "1.1.0");
  Spec pinned = MinimalSpec();
  pinned.cdi_version = "0.6.0";
  CHECK(DecodeSpec(*EncodeSpec(pinned, Format::kYaml), Format::kYaml)->cdi_version == "0.6.0");
  Spec too_old = FullSpec();
  too_old.cdi_version = "0.6.0";
  CHECK(EncodeSpec(too_old, Format::kJson).status().message() ==
        "cdiVersion \"0.6.0\" is too old: devices[\"gpu0\"].containerEdits.intelRdt.schemata needs CDI 1.1.0 or "
        "later");
}

TEST_CASE("invalid specs are not encoded", "[cdi][codec]") {
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits.device_nodes[0].permissions = "x";
  CHECK(EncodeSpec(spec, Format::kJson).status().message() ==
        "devices[\"gpu0\"].containerEdits.deviceNodes[0].permissions: \"x\" has 'x'; allowed are r, w and m");
}

// Found with fuzz_cdi_spec: nlohmann's serializer threw out of EncodeSpec on
// such a string, which a driver's edits can carry into the Helper's prepare.
TEST_CASE("strings that are not UTF-8 are encoded with U+FFFD in their place", "[cdi][codec]") {
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits.env = {"SERIAL=\xb1\xff"};
  for (Format format : {Format::kJson, Format::kYaml}) {
    absl::StatusOr<std::string> text = EncodeSpec(spec, format);
    REQUIRE(text.ok());
    absl::StatusOr<Spec> decoded = DecodeSpec(*text, format);
    REQUIRE(decoded.ok());
    CHECK(decoded->devices[0].container_edits.env == std::vector<std::string>{"SERIAL=\uFFFD\uFFFD"});
  }
}

TEST_CASE("YAML keeps strings that look like other scalars as strings", "[cdi][codec]") {
  Spec spec = MinimalSpec();
  spec.devices[0].name = "0";
  spec.devices[0].container_edits.env = {"true=null"};
  spec.annotations["a"] = "123";
  absl::StatusOr<std::string> text = EncodeSpec(spec, Format::kYaml);
  REQUIRE(text.ok());
  CheckSchema(*text);
  absl::StatusOr<Spec> decoded = DecodeSpec(*text, Format::kYaml);
  REQUIRE(decoded.ok());
  CHECK(decoded->devices[0].name == "0");
  CHECK(decoded->annotations.at("a") == "123");
}

TEST_CASE("decoding is strict and names the field", "[cdi][codec]") {
  CHECK(DecodeSpec("{", Format::kJson).status().message() == "CDI spec: not valid JSON");
  CHECK(DecodeSpec("[]", Format::kJson).status().message() == "CDI spec: the document: must be an object");
  CHECK(DecodeSpec(R"({"cdiVersion":"0.3.0","kind":"a.com/b"})", Format::kJson).status().message() ==
        "CDI spec: devices: required");
  CHECK(DecodeSpec(R"({"cdiVersion":"0.3.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{"envs":[]}}]})",
                   Format::kJson)
            .status()
            .message() == "CDI spec: devices[0].containerEdits.envs: unknown field");
  CHECK(DecodeSpec(R"({"cdiVersion":"0.3.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":)"
                   R"({"deviceNodes":[{"path":"/dev/x","uid":-1}]}}]})",
                   Format::kJson)
            .status()
            .message() == "CDI spec: devices[0].containerEdits.deviceNodes[0].uid: out of range [0, 4294967295]");
  CHECK(DecodeSpec("cdiVersion: 0.3.0\nkind: 5\ndevices: []\n", Format::kYaml).status().message() ==
        "CDI spec: kind: must be a string");
  CHECK(DecodeSpec("a: [", Format::kYaml).status().message().substr(0, 28) == "CDI spec: not valid YAML: ya");
}

// Found by fuzz_cdi_spec: yaml-cpp passed the byte 0xb1 into the env entry,
// and encoding the spec threw from nlohmann's serializer.
TEST_CASE("YAML that is not UTF-8 is refused, as by Go's YAML decoder and any JSON parser", "[cdi][codec]") {
  const auto yaml = [](const std::string& value) {
    return "cdiVersion: 0.3.0\nkind: a.com/b\ncontainerEdits: {env: [" + value + "]}\ndevices: []\n";
  };
  CHECK(DecodeSpec(yaml("A=\xb1"), Format::kYaml).status().message() ==
        "CDI spec: not valid YAML: invalid UTF-8 at byte 57");
  CHECK(!DecodeSpec(yaml("A=\xc0\xa0"), Format::kYaml).ok());          // overlong
  CHECK(!DecodeSpec(yaml("A=\xed\xa0\x80"), Format::kYaml).ok());      // a surrogate
  CHECK(!DecodeSpec(yaml("A=\xf4\x90\x80\x80"), Format::kYaml).ok());  // above U+10FFFF
  CHECK(!DecodeSpec(yaml("A=\xe2\x82"), Format::kYaml).ok());          // cut short
  CHECK(!DecodeSpec(R"({"cdiVersion":"0.3.0","kind":"a.com/b","containerEdits":{"env":["A=)"
                    "\xb1"
                    R"("]},"devices":[]})",
                    Format::kJson)
             .ok());
  absl::StatusOr<Spec> accented = DecodeSpec(yaml("A=\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), Format::kYaml);
  REQUIRE(accented.ok());
  CHECK(accented->container_edits.env == std::vector<std::string>{"A=\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"});
}

// The reference good/bad examples: our decoder+validator agrees with the schema.
TEST_CASE("the reference testdata: good files pass, bad ones fail, as with the schema", "[cdi][codec]") {
  for (const char* name : {"good/minimal.json", "good/spec-example.json"}) {
    INFO(name);
    const std::string text = dra::testing::ReadFile(kReferenceTestdata + "/" + name);
    REQUIRE(!text.empty());
    CheckSchema(text);
    absl::StatusOr<Spec> spec = DecodeSpec(text, Format::kJson);
    REQUIRE(spec.ok());
    CHECK(ValidateSpec(*spec).ok());
    CHECK(DecodeSpec(text, Format::kYaml).ok());  // YAML reads JSON too
  }
  const std::string bad = dra::testing::ReadFile(kReferenceTestdata + "/bad/explicit-empty.json");
  CHECK(!CdiSchemaValidator::Reference().ValidateText(bad).empty());
  CHECK(DecodeSpec(bad, Format::kJson).status().message() == "CDI spec: cdiVersion: required");
}

TEST_CASE("the schema validator catches what the schema forbids", "[cdi][codec]") {
  const auto& schema = CdiSchemaValidator::Reference();
  CHECK(schema.ValidateText(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"x"}]})") ==
        std::vector<std::string>{"devices[0]: missing required field \"containerEdits\""});
  CHECK(
      schema.ValidateText(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"x","containerEdits":)"
                          R"({"deviceNodes":[{"path":"/x","uid":4294967296}]}}]})") ==
      std::vector<std::string>{"devices[0].containerEdits.deviceNodes[0].uid: 4294967296 violates maximum 4294967295"});
  CHECK(schema.ValidateText(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[],"annotations":{"k":1}})") ==
        std::vector<std::string>{"annotations[k]: want type string, got 1"});
}

}  // namespace
}  // namespace dra::cdi
