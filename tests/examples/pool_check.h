// What an example driver publishes, checked as the API server would take it:
// every slice of a pool against its validation rules (ValidateResourceSlice)
// and against the official OpenAPI document of resource.k8s.io/v1 kept in
// the repository.
#pragma once

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dra/k8s/resource_slice_json.h"
#include "dra/k8s/validation.h"
#include "dra/resourceslice/driver_resources.h"
#include "support/openapi_validator.h"

namespace dra::testing {

inline const OpenApiValidator& ResourceV1Validator() {
  static const OpenApiValidator validator = [] {
    auto loaded =
        OpenApiValidator::FromFile(std::string(DRA_REFERENCE_DIR) + "/openapi/apis__resource.k8s.io__v1_openapi.json");
    if (!loaded.ok()) FAIL(loaded.status().ToString());
    return *std::move(loaded);
  }();
  return validator;
}

// The slices of `pool` of `driver` on node `node_name`, or, when it is
// empty, for the nodes of the pool's node selector.
inline void CheckPoolValid(const resourceslice::Pool& pool, const std::string& driver, const std::string& node_name) {
  REQUIRE_FALSE(pool.slices.empty());
  for (size_t i = 0; i < pool.slices.size(); ++i) {
    k8s::ResourceSlice slice;
    slice.metadata.name = "slice-" + std::to_string(i);
    slice.spec.driver = driver;
    slice.spec.pool.name = "pool";
    slice.spec.pool.generation = 1;
    slice.spec.pool.resource_slice_count = static_cast<int64_t>(pool.slices.size());
    if (!node_name.empty()) {
      slice.spec.node_name = node_name;
    } else {
      slice.spec.node_selector = pool.node_selector;
    }
    slice.spec.devices = pool.slices[i].devices;
    slice.spec.shared_counters = pool.slices[i].shared_counters;
    const k8s::FieldErrors errors = k8s::ValidateResourceSlice(slice);
    INFO("slice " << i << ": " << (errors.empty() ? "" : errors.front().ToString()));
    CHECK(errors.empty());
    nlohmann::json object = k8s::ToJson(slice);
    object["apiVersion"] = "resource.k8s.io/v1";
    object["kind"] = "ResourceSlice";
    const std::vector<std::string> schema_errors =
        ResourceV1Validator().Validate(object, "io.k8s.api.resource.v1.ResourceSlice");
    INFO((schema_errors.empty() ? "" : schema_errors.front()));
    CHECK(schema_errors.empty());
  }
}

}  // namespace dra::testing
