/// @file
/// dra::k8s::ClaimRef: what the kubelet names a ResourceClaim by.
#pragma once

#include <compare>
#include <string>

namespace dra::k8s {

/// Namespace, name and UID of a ResourceClaim, as the kubelet sends them.
struct ClaimRef {
  std::string namespace_;  ///< the claim's namespace
  std::string name;        ///< the claim's name
  std::string uid;         ///< the claim's UID: another UID is another claim

  /// "namespace/name", the form used in messages.
  std::string ToString() const { return namespace_ + "/" + name; }
  auto operator<=>(const ClaimRef&) const = default;  ///< member-wise order: namespace, name, UID
};

}  // namespace dra::k8s
