// dra::k8s::Status: metav1.Status, the body of an API server error (and of
// some successful deletes). `unknown_fields` is explained in object_meta.h.
// JSON codec: status_json.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dra::k8s {

struct StatusCause {
  std::string reason;  // e.g. "FieldValueInvalid"
  std::string message;
  std::string field;  // e.g. "spec.devices[0].name"
  nlohmann::json unknown_fields;

  bool operator==(const StatusCause&) const = default;
};

struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::vector<StatusCause> causes;
  int32_t retry_after_seconds = 0;
  nlohmann::json unknown_fields;

  bool operator==(const StatusDetails&) const = default;
};

struct Status {
  std::string status;  // "Success" or "Failure"
  std::string message;
  std::string reason;  // e.g. "NotFound", "Conflict", "AlreadyExists"
  int32_t code = 0;    // the HTTP status code
  std::optional<StatusDetails> details;
  nlohmann::json unknown_fields;  // "metadata" (ListMeta), ...

  bool operator==(const Status&) const = default;
};

}  // namespace dra::k8s
