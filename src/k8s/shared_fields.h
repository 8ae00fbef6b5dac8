// JsonObject<T> tables (see json_fields.h) for structs that more than one
// object codec embeds: core/v1 NodeSelector (ResourceSlice, ResourceClaim) and
// the device selector and opaque configuration types (ResourceClaim,
// DeviceClass). An explicit specialization must be visible in every
// translation unit that encodes or decodes the type, so they live here and
// nowhere else.
#pragma once

#include <tuple>

#include "dra/k8s/node_selector.h"
#include "dra/k8s/resource_claim.h"
#include "k8s/json_fields.h"

namespace dra::k8s::internal {

template <>
struct JsonObject<NodeSelectorRequirement> {
  static constexpr auto kFields = std::tuple{
      Always("key", &NodeSelectorRequirement::key),
      Always("operator", &NodeSelectorRequirement::operator_),
      OmitEmpty("values", &NodeSelectorRequirement::values),
  };
};

template <>
struct JsonObject<NodeSelectorTerm> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("matchExpressions", &NodeSelectorTerm::match_expressions),
      OmitEmpty("matchFields", &NodeSelectorTerm::match_fields),
  };
};

template <>
struct JsonObject<NodeSelector> {
  // Go has no omitempty here; an empty list is written as [] rather than
  // Go's null so that the output stays valid against the schema's "required".
  static constexpr auto kFields = std::tuple{Always("nodeSelectorTerms", &NodeSelector::node_selector_terms)};
};

template <>
struct JsonObject<CELDeviceSelector> {
  static constexpr auto kFields = std::tuple{Always("expression", &CELDeviceSelector::expression)};
};

template <>
struct JsonObject<DeviceSelector> {
  static constexpr auto kFields = std::tuple{OmitEmpty("cel", &DeviceSelector::cel)};
};

template <>
struct JsonObject<OpaqueDeviceConfiguration> {
  static constexpr auto kFields = std::tuple{
      Always("driver", &OpaqueDeviceConfiguration::driver),
      OmitEmpty("parameters", &OpaqueDeviceConfiguration::parameters),
  };
};

}  // namespace dra::k8s::internal
