// dra::k8s::ClaimRef: what the kubelet names a ResourceClaim by.
#pragma once

#include <compare>
#include <string>

namespace dra::k8s {

struct ClaimRef {
  std::string namespace_;
  std::string name;
  std::string uid;

  // "namespace/name", the form used in messages.
  std::string ToString() const { return namespace_ + "/" + name; }
  auto operator<=>(const ClaimRef&) const = default;
};

}  // namespace dra::k8s
