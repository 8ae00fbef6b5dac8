#include "e2e/e2e_node.h"

#include <fstream>
#include <map>
#include <sstream>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "e2e/e2e_cluster.h"
#include "support/claim_object.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {

using nlohmann::json;

NodeEnv Node() {
  const std::string file = ClusterDir() + "/node.env";
  std::ifstream in(file);
  INFO(file << " is missing: the node is not running (ctest starts it with `cluster.sh node-start` for the "
               "tests labelled node; by hand: tests/e2e/cluster.sh node-start DIR)");
  REQUIRE(in.good());
  std::map<std::string, std::string> values;
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  NodeEnv node{values["DRA_E2E_NODE_NAME"],        values["DRA_E2E_RUNTIME"],     values["DRA_E2E_NODE_DIR"],
               values["DRA_E2E_PLUGINS_REGISTRY"], values["DRA_E2E_PLUGINS_DIR"], values["DRA_E2E_CDI_DIR"],
               values["DRA_E2E_CRI_RECORD"],       values["DRA_E2E_KUBELET_URL"]};
  REQUIRE_FALSE(node.name.empty());
  REQUIRE((node.runtime != "stand-in" || !node.cri_record.empty()));
  return node;
}

std::vector<json> CriContainers(const NodeEnv& node, const std::string& pod_uid) {
  // The stand-in replaces the file atomically: a read sees one whole version.
  const std::string text = testing::ReadFile(node.cri_record);
  std::vector<json> found;
  if (text.empty()) return found;
  const json record = json::parse(text);
  for (const json& container : record.value("containers", json::array())) {
    if (container.value("podUID", "") == pod_uid) found.push_back(container);
  }
  return found;
}

void RestartKubelet() {
  absl::StatusOr<testing::ProcessResult> run =
      testing::RunProcess({DRA_E2E_CLUSTER_SH, "kubelet-restart", ClusterDir()});
  REQUIRE(run.ok());
  INFO("cluster.sh kubelet-restart: exit " << run->exit_code << "\n" << run->out << run->err);
  REQUIRE(run->exit_code == 0);
}

std::string KubeletLogLines(const std::string& text) {
  std::istringstream log(testing::ReadFile(ClusterDir() + "/logs/kubelet.log"));
  std::string lines;
  for (std::string line; std::getline(log, line);) {
    if (line.find(text) != std::string::npos) absl::StrAppend(&lines, line, "\n");
  }
  return lines;
}

json DriverDeviceClass(const std::string& name, const std::string& driver, const std::string& run) {
  std::string expression = absl::StrCat("device.driver == \"", driver, "\"");
  if (!run.empty()) {
    const std::string attributes = absl::StrCat("device.attributes[\"", driver, "\"]");
    absl::StrAppend(&expression, " && \"run\" in ", attributes, " && ", attributes, ".run == \"", run, "\"");
  }
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "DeviceClass"},
              {"metadata", {{"name", name}}},
              {"spec", {{"selectors", json::array({{{"cel", {{"expression", expression}}}}})}}}};
}

std::string CreateClaim(k8s::Client& admin, const std::string& ns, const std::string& name,
                        const std::string& device_class) {
  absl::StatusOr<json> created =
      admin.Create(k8s::kResourceClaims, ns, testing::NewClaimObject(ns, name, device_class));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  return (*created)["metadata"]["uid"].get<std::string>();
}

json PodWithClaims(const std::string& ns, const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& claims, bool template_claims) {
  json container_claims = json::array();
  json pod_claims = json::array();
  for (const auto& [pod_claim, source] : claims) {
    container_claims.push_back({{"name", pod_claim}});
    pod_claims.push_back(
        {{"name", pod_claim}, {template_claims ? "resourceClaimTemplateName" : "resourceClaimName", source}});
  }
  json container = {
      {"name", "app"}, {"image", "registry.example/app:1"}, {"resources", {{"claims", container_claims}}}};
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"namespace", ns}, {"name", name}}},
              {"spec",
               {{"containers", json::array({container})},
                {"automountServiceAccountToken", false},
                {"terminationGracePeriodSeconds", 5},
                {"resourceClaims", pod_claims}}}};
}

bool WaitForPod(k8s::Client& admin, const std::string& ns, const std::string& name,
                const std::function<bool(const json&)>& condition, json* last, absl::Duration timeout) {
  return Eventually(
      [&] {
        absl::StatusOr<json> pod = admin.Get(kPods, ns, name);
        if (!pod.ok()) return false;
        *last = *pod;
        return condition(*pod);
      },
      timeout);
}

bool PodRunning(const json& pod) { return pod.contains("status") && pod["status"].value("phase", "") == "Running"; }

std::string GeneratedClaimName(const json& pod, const std::string& pod_claim) {
  if (!pod.contains("status")) return "";
  for (const json& status : pod["status"].value("resourceClaimStatuses", json::array())) {
    if (status.value("name", "") == pod_claim) return status.value("resourceClaimName", "");
  }
  return "";
}

std::vector<std::string> PodEvents(k8s::Client& admin, const std::string& ns, const std::string& pod) {
  k8s::ListOptions options;
  options.field_selector = absl::StrCat("involvedObject.kind=Pod,involvedObject.name=", pod);
  absl::StatusOr<k8s::ListResult> events = admin.List(kEvents, ns, options);
  std::vector<std::string> lines;
  if (!events.ok()) return lines;
  for (const json& event : events->items) {
    lines.push_back(absl::StrCat(event.value("reason", ""), ": ", event.value("message", "")));
  }
  return lines;
}

}  // namespace dra::e2e
