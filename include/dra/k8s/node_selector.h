// dra::k8s::NodeSelector: core/v1 NodeSelector as plain values, used by
// ResourceSlice (spec.nodeSelector, spec.devices[].nodeSelector) and by
// ResourceClaim (status.allocation.nodeSelector). `unknown_fields` is
// explained in object_meta.h.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dra::k8s {

struct NodeSelectorRequirement {
  std::string key;        // a label key, or a field name for match_fields
  std::string operator_;  // "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
  std::vector<std::string> values;
  nlohmann::json unknown_fields;

  bool operator==(const NodeSelectorRequirement&) const = default;
};

// The requirements of one term are ANDed.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on node labels
  std::vector<NodeSelectorRequirement> match_fields;       // on node fields ("metadata.name")
  nlohmann::json unknown_fields;

  bool operator==(const NodeSelectorTerm&) const = default;
};

// The terms are ORed.
struct NodeSelector {
  std::vector<NodeSelectorTerm> node_selector_terms;
  nlohmann::json unknown_fields;

  bool operator==(const NodeSelector&) const = default;
};

}  // namespace dra::k8s
