/// @file
/// dra::k8s::ObjectMeta and Condition: the metav1 parts that API objects embed.
///
/// Every struct here and in the other dra::k8s object headers that maps a JSON
/// object has a member `unknown_fields`: the keys of that object this library
/// does not model (null when there were none). The codecs write them back, so a
/// read-modify-write never drops fields that a newer API server added.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dra::k8s {

/// metav1.OwnerReference.
struct OwnerReference {
  std::string api_version;                   ///< the owner's apiVersion, e.g. "v1"
  std::string kind;                          ///< the owner's kind, e.g. "Node"
  std::string name;                          ///< the owner's name
  std::string uid;                           ///< the owner's UID
  std::optional<bool> controller;            ///< true: the owner is the managing controller
  std::optional<bool> block_owner_deletion;  ///< the owner's foreground deletion waits for this object
  nlohmann::json unknown_fields;             ///< the keys this library does not model (object_meta.h)

  bool operator==(const OwnerReference&) const = default;  ///< member-wise equality
};

/// metav1.ObjectMeta. Fields not listed (managedFields, selfLink,
/// deletionGracePeriodSeconds, ...) are kept in unknown_fields.
struct ObjectMeta {
  std::string name;                ///< unique per namespace (or cluster) and kind
  std::string generate_name;       ///< the prefix of a name the server generates when `name` is empty
  std::string namespace_;          ///< empty for cluster-scoped objects
  std::string uid;                 ///< set by the server; differs between an object and one that replaced it
  std::string resource_version;    ///< set by the server at every write; a precondition of an update
  int64_t generation = 0;          ///< set by the server: bumped when the spec changes; 0 if unset
  std::string creation_timestamp;  ///< RFC 3339 as the server sent it; empty if unset
  std::optional<std::string> deletion_timestamp;   ///< RFC 3339: set when the object is being deleted
  std::map<std::string, std::string> labels;       ///< identifying key/value pairs, which selectors match
  std::map<std::string, std::string> annotations;  ///< non-identifying key/value pairs
  std::vector<std::string> finalizers;             ///< what must happen before the object is deleted
  std::vector<OwnerReference> owner_references;    ///< the objects this one belongs to
  nlohmann::json unknown_fields;                   ///< the keys this library does not model (object_meta.h)

  bool operator==(const ObjectMeta&) const = default;  ///< member-wise equality
};

/// metav1.Condition.
struct Condition {
  std::string type;                            ///< CamelCase or a qualified name, e.g. "Ready"
  std::string status;                          ///< "True", "False" or "Unknown"
  std::optional<int64_t> observed_generation;  ///< the metadata.generation the condition was set for
  std::string last_transition_time;            ///< RFC 3339
  std::string reason;                          ///< CamelCase, why the condition last changed
  std::string message;                         ///< human-readable details
  nlohmann::json unknown_fields;               ///< the keys this library does not model (object_meta.h)

  bool operator==(const Condition&) const = default;  ///< member-wise equality
};

}  // namespace dra::k8s
