#include "k8s/json_text.h"

#include "absl/strings/str_cat.h"

namespace dra::k8s::internal {

absl::StatusOr<nlohmann::json> ParseJsonText(absl::string_view text) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    // Drop the "[json.exception.parse_error.101] " tag.
    absl::string_view message = e.what();
    if (size_t tag_end = message.find("] "); tag_end != absl::string_view::npos) message.remove_prefix(tag_end + 2);
    return absl::InvalidArgumentError(absl::StrCat("Invalid JSON: ", message));
  }
}

}  // namespace dra::k8s::internal
