/// @file
/// CDI spec files: JSON (nlohmann_json) or YAML (yaml-cpp). Encoding is
/// stable: the same spec always gives the same bytes (fields in the order of
/// the specification, annotations sorted by key, every YAML string quoted).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/cdi/spec.h"

namespace dra::cdi {

/// The encoding of a spec file.
enum class Format { kJson, kYaml };

/// ".json" or ".yaml"
absl::string_view FileExtension(Format format);

/// Validates `spec` (validation.h), resolves cdiVersion (version.h) and
/// encodes it. The result ends with a newline.
absl::StatusOr<std::string> EncodeSpec(const Spec& spec, Format format);

/// Decodes a spec file strictly: unknown fields and wrong types are errors
/// naming the field. YAML is a superset of JSON, so kYaml reads both. The
/// result is not validated; call ValidateSpec.
absl::StatusOr<Spec> DecodeSpec(absl::string_view text, Format format);

}  // namespace dra::cdi
