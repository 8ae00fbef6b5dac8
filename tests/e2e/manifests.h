// Kubernetes manifests in the e2e tests: the API resource of each kind the
// example deployments use, reading a YAML file's objects, and applying one
// object server-side as `kubectl apply --server-side` does.
#pragma once

#include <string>
#include <vector>

#include "dra/k8s/client.h"
#include "nlohmann/json.hpp"

namespace dra::e2e {

// The resource of `kind`; fails the test for a kind it does not know.
const k8s::ResourceRef& ResourceOfKind(const std::string& kind);

// The objects of a multi-document YAML text; fails the test when it does not
// parse (`source` names it in the message).
std::vector<nlohmann::json> ManifestObjects(const std::string& yaml, const std::string& source);

// Server-side apply (field manager e2e-deploy, forced) of `object`, in `ns`
// when the kind is namespaced and `ns` is given; returns what the server
// stored. Fails the test on an error.
nlohmann::json ApplyObject(k8s::Client& admin, nlohmann::json object, const std::string& ns = "");

}  // namespace dra::e2e
