#include "dra/k8s/status_json.h"

#include <cstdint>
#include <limits>
#include <tuple>

#include "k8s/json_fields.h"
#include "k8s/json_text.h"

namespace dra::k8s {
namespace internal {

// Go's int32 (metav1.Status.code, StatusDetails.retryAfterSeconds). Only this
// file decodes int32 fields.
template <>
struct Codec<int32_t> {
  static absl::Status Decode(const json& value, int32_t& out, const Path& path) {
    int64_t wide = 0;
    if (absl::Status status = Codec<int64_t>::Decode(value, wide, path); !status.ok()) return status;
    if (wide < std::numeric_limits<int32_t>::min() || wide > std::numeric_limits<int32_t>::max()) {
      return InvalidValue(path, value, "must fit in a 32-bit signed integer");
    }
    out = static_cast<int32_t>(wide);
    return absl::OkStatus();
  }
  static json Encode(int32_t value) { return value; }
  static bool IsEmpty(int32_t value) { return value == 0; }
};

template <>
struct JsonObject<StatusCause> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("reason", &StatusCause::reason),
      OmitEmpty("message", &StatusCause::message),
      OmitEmpty("field", &StatusCause::field),
  };
};

template <>
struct JsonObject<StatusDetails> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("name", &StatusDetails::name),     OmitEmpty("group", &StatusDetails::group),
      OmitEmpty("kind", &StatusDetails::kind),     OmitEmpty("uid", &StatusDetails::uid),
      OmitEmpty("causes", &StatusDetails::causes), OmitEmpty("retryAfterSeconds", &StatusDetails::retry_after_seconds),
  };
};

template <>
struct JsonObject<Status> {
  static constexpr auto kFields = std::tuple{
      ConstantField{"apiVersion", "v1"},    ConstantField{"kind", "Status"},
      OmitEmpty("status", &Status::status), OmitEmpty("message", &Status::message),
      OmitEmpty("reason", &Status::reason), OmitEmpty("details", &Status::details),
      OmitEmpty("code", &Status::code),
  };
};

}  // namespace internal

absl::StatusOr<Status> StatusFromJson(const nlohmann::json& value) { return internal::FromJson<Status>(value); }

absl::StatusOr<Status> ParseStatus(std::string_view json_text) {
  absl::StatusOr<nlohmann::json> value = internal::ParseJsonText(absl::string_view(json_text.data(), json_text.size()));
  if (!value.ok()) return value.status();
  return StatusFromJson(*value);
}

nlohmann::json ToJson(const Status& status) { return internal::ToJson(status); }

}  // namespace dra::k8s
