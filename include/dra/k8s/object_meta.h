// dra::k8s::ObjectMeta and Condition: the metav1 parts that API objects embed.
//
// Every struct here and in the other dra::k8s object headers that maps a JSON
// object has a member `unknown_fields`: the keys of that object this library
// does not model (null when there were none). The codecs write them back, so a
// read-modify-write never drops fields that a newer API server added.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dra::k8s {

// metav1.OwnerReference.
struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  nlohmann::json unknown_fields;

  bool operator==(const OwnerReference&) const = default;
};

// metav1.ObjectMeta. Fields not listed (managedFields, selfLink,
// deletionGracePeriodSeconds, ...) are kept in unknown_fields.
struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339 as the server sent it; empty if unset
  std::optional<std::string> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  std::vector<OwnerReference> owner_references;
  nlohmann::json unknown_fields;

  bool operator==(const ObjectMeta&) const = default;
};

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // "True", "False" or "Unknown"
  std::optional<int64_t> observed_generation;
  std::string last_transition_time;  // RFC 3339
  std::string reason;
  std::string message;
  nlohmann::json unknown_fields;

  bool operator==(const Condition&) const = default;
};

}  // namespace dra::k8s
