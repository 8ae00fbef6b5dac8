/// @file
/// dra::k8s::Status: metav1.Status, the body of an API server error (and of
/// some successful deletes). `unknown_fields` is explained in object_meta.h.
/// JSON codec: status_json.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dra::k8s {

/// One reason for an error, e.g. one invalid field.
struct StatusCause {
  std::string reason;             ///< e.g. "FieldValueInvalid"
  std::string message;            ///< the cause in words
  std::string field;              ///< e.g. "spec.devices[0].name"
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const StatusCause&) const = default;  ///< member-wise equality
};

/// More about an error: which object, and why.
struct StatusDetails {
  std::string name;                 ///< the object's name, if one object is concerned
  std::string group;                ///< the object's API group
  std::string kind;                 ///< the object's kind (or resource)
  std::string uid;                  ///< the object's UID, if known
  std::vector<StatusCause> causes;  ///< e.g. the invalid fields
  int32_t retry_after_seconds = 0;  ///< how long to wait before a retry; 0: not said
  nlohmann::json unknown_fields;    ///< the keys this library does not model (object_meta.h)

  bool operator==(const StatusDetails&) const = default;  ///< member-wise equality
};

/// metav1.Status.
struct Status {
  std::string status;                    ///< "Success" or "Failure"
  std::string message;                   ///< the error in words
  std::string reason;                    ///< e.g. "NotFound", "Conflict", "AlreadyExists"
  int32_t code = 0;                      ///< the HTTP status code
  std::optional<StatusDetails> details;  ///< more about the error, if the server says more
  nlohmann::json unknown_fields;         ///< "metadata" (ListMeta), ...

  bool operator==(const Status&) const = default;  ///< member-wise equality
};

}  // namespace dra::k8s
