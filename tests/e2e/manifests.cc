#include "e2e/manifests.h"

#include <map>

#include <catch2/catch.hpp>

#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "support/yaml_json.h"

namespace dra::e2e {

using nlohmann::json;

const k8s::ResourceRef& ResourceOfKind(const std::string& kind) {
  static const std::map<std::string, k8s::ResourceRef> resources = {
      {"Namespace", {"", "v1", "namespaces", false}},
      {"ServiceAccount", {"", "v1", "serviceaccounts", true}},
      {"ClusterRole", {"rbac.authorization.k8s.io", "v1", "clusterroles", false}},
      {"ClusterRoleBinding", {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", false}},
      {"ValidatingAdmissionPolicy", {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", false}},
      {"ValidatingAdmissionPolicyBinding",
       {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", false}},
      {"DeviceClass", k8s::kDeviceClasses},
      {"DaemonSet", {"apps", "v1", "daemonsets", true}},
      {"Deployment", {"apps", "v1", "deployments", true}},
      {"ResourceClaimTemplate", kResourceClaimTemplates},
      {"ResourceClaim", k8s::kResourceClaims},
      {"Pod", kPods},
  };
  INFO("kind " << kind);
  REQUIRE(resources.contains(kind));
  return resources.at(kind);
}

std::vector<json> ManifestObjects(const std::string& yaml, const std::string& source) {
  absl::StatusOr<std::vector<json>> documents = testing::YamlDocuments(yaml);
  INFO(source << ": " << documents.status().ToString());
  REQUIRE(documents.ok());
  return *std::move(documents);
}

json ApplyObject(k8s::Client& admin, json object, const std::string& ns) {
  const std::string kind = object.value("kind", "");
  const std::string name = object["metadata"].value("name", "");
  INFO(kind << " " << name);
  const k8s::ResourceRef& ref = ResourceOfKind(kind);
  if (ref.namespaced && !ns.empty()) object["metadata"]["namespace"] = ns;
  k8s::PatchOptions options;
  options.field_manager = "e2e-deploy";
  options.force = true;
  absl::StatusOr<json> result = admin.Patch(ref, ref.namespaced ? object["metadata"].value("namespace", "") : "", name,
                                            k8s::PatchType::kApply, object, options);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *std::move(result);
}

}  // namespace dra::e2e
