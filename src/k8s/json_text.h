// Parsing JSON text for the Parse* entry points of the object codecs.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace dra::k8s::internal {

// The parsed document, or InvalidArgument "Invalid JSON: <parser message>".
absl::StatusOr<nlohmann::json> ParseJsonText(absl::string_view text);

}  // namespace dra::k8s::internal
