/// @file
/// dra::k8s::NodeSelector: core/v1 NodeSelector as plain values, used by
/// ResourceSlice (spec.nodeSelector, spec.devices[].nodeSelector) and by
/// ResourceClaim (status.allocation.nodeSelector). `unknown_fields` is
/// explained in object_meta.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace dra::k8s {

/// One requirement on a node label or field.
struct NodeSelectorRequirement {
  std::string key;                  ///< a label key, or a field name for match_fields
  std::string operator_;            ///< "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
  std::vector<std::string> values;  ///< In, NotIn: candidates; Gt, Lt: one integer; Exists, DoesNotExist: none
  nlohmann::json unknown_fields;    ///< the keys this library does not model (object_meta.h)

  bool operator==(const NodeSelectorRequirement&) const = default;  ///< member-wise equality
};

/// The requirements of one term are ANDed.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  ///< on node labels
  std::vector<NodeSelectorRequirement> match_fields;       ///< on node fields ("metadata.name")
  nlohmann::json unknown_fields;                           ///< the keys this library does not model (object_meta.h)

  bool operator==(const NodeSelectorTerm&) const = default;  ///< member-wise equality
};

/// The terms are ORed.
struct NodeSelector {
  std::vector<NodeSelectorTerm> node_selector_terms;  ///< ORed; none selects nothing
  nlohmann::json unknown_fields;                      ///< the keys this library does not model (object_meta.h)

  bool operator==(const NodeSelector&) const = default;  ///< member-wise equality
};

/// Whether `selector` selects the node named `node_name` with `labels`, as
/// the scheduler decides it (k8s.io/component-helpers nodeaffinity): terms
/// are ORed and an empty term selects nothing; within a term, match_expressions
/// on labels (In, NotIn, Exists, DoesNotExist, Gt, Lt) and match_fields on
/// "metadata.name" (In, NotIn, one value each) are ANDed. A term with an
/// invalid requirement (unknown operator, wrong number of values, a Gt/Lt
/// value that is not an integer, a bad key) selects nothing.
bool NodeSelectorMatches(const NodeSelector& selector, const std::string& node_name,
                         const std::map<std::string, std::string>& labels);

/// The nodes whose label `key` has one of `values`: one term, operator In,
/// e.g. for a pool of network-attached devices.
NodeSelector NodeSelectorForLabel(std::string key, std::vector<std::string> values);
/// The node named `node_name` (matchFields metadata.name In), as the
/// scheduler writes into the allocation of a node-local or bindsToNode device.
NodeSelector NodeSelectorForName(std::string node_name);
/// The reverse: the one node `selector` names when it is a single term with
/// only matchFields metadata.name In one value (what bindsToNode makes the
/// scheduler write); nullopt for a selector by labels or of several nodes.
std::optional<std::string> SelectedNodeName(const NodeSelector& selector);

}  // namespace dra::k8s
