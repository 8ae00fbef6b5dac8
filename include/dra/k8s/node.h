/// @file
/// dra::k8s::Node: core/v1 Node, metadata only. Name, UID and labels are in
/// ObjectMeta; spec and status are kept in unknown_fields (see object_meta.h)
/// and written back unchanged. JSON codec: node_json.h.
#pragma once

#include "dra/k8s/object_meta.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

/// A Node's metadata; spec and status ride along in unknown_fields.
struct Node {
  ObjectMeta metadata;            ///< name, UID, labels, ...
  nlohmann::json unknown_fields;  ///< "spec", "status", ...

  bool operator==(const Node&) const = default;  ///< member-wise equality
};

}  // namespace dra::k8s
