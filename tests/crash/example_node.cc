#include "crash/example_node.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dra/k8s/resource_claim_json.h"
#include "example_driver_process.h"
#include "kubeletplugin/checkpoint.h"
#include "support/checkpoint_file.h"
#include "support/subprocess.h"

namespace dra::testing {

using nlohmann::json;

absl::StatusOr<ExampleNode> StartExampleNode(const TempDir& dir) {
  FakeApiServer::Options options;
  options.extra_args = {"--quiet", "--exit-with-parent"};
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(options);
  if (!server.ok())
    return absl::Status(server.status().code(), absl::StrCat("fake API server: ", server.status().message()));
  ExampleNode node;
  node.server = *std::move(server);
  k8s::ClientConfig config;
  config.server = node.server->url();
  config.ca_file = node.server->ca_file();
  config.bearer_token = node.server->admin_token();
  config.qps = 0;
  absl::StatusOr<std::shared_ptr<k8s::Client>> client = k8s::Client::Create(config);
  if (!client.ok()) return client.status();
  node.client = *std::move(client);
  const json object = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", kExampleNode}}}};
  if (absl::StatusOr<json> created = node.client->Create(k8s::kNodes, "", object); !created.ok()) {
    return created.status();
  }
  WriteExampleKubeconfig(*node.server, dir.Join("kubeconfig"));
  for (const char* sub : {"registry", "plugins", "cdi"}) std::filesystem::create_directories(dir.Join(sub));
  return node;
}

absl::StatusOr<k8s::ClaimRef> CreateAllocatedClaim(k8s::Client& client, const std::string& driver_name,
                                                   const std::string& name,
                                                   std::vector<k8s::DeviceRequestAllocationResult> results) {
  json requests = json::array();
  for (k8s::DeviceRequestAllocationResult& result : results) {
    result.driver = driver_name;
    result.pool = kExampleNode;
    requests.push_back({{"name", result.request}, {"exactly", {{"deviceClassName", driver_name}}}});
  }
  const json object = {{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaim"},
                       {"metadata", {{"namespace", kHarnessNamespace}, {"name", name}}},
                       {"spec", {{"devices", {{"requests", requests}}}}}};
  absl::StatusOr<json> created = client.Create(k8s::kResourceClaims, kHarnessNamespace, object);
  if (!created.ok())
    return absl::Status(created.status().code(), absl::StrCat("create claim ", name, ": ", created.status().message()));
  absl::StatusOr<k8s::ResourceClaim> typed = k8s::ResourceClaimFromJson(*created);
  if (!typed.ok()) return typed.status();
  typed->status.allocation.emplace().devices.results = std::move(results);
  if (absl::StatusOr<k8s::ResourceClaim> updated = client.UpdateResourceClaimStatus(*typed); !updated.ok()) {
    return absl::Status(updated.status().code(),
                        absl::StrCat("allocate claim ", name, ": ", updated.status().message()));
  }
  return k8s::ClaimRef{kHarnessNamespace, name, typed->metadata.uid};
}

std::vector<std::string> LeftAfterUnprepare(const TempDir& dir, const std::string& driver_name,
                                            const std::vector<k8s::ClaimRef>& claims,
                                            const std::set<std::string>& orphans) {
  std::vector<std::string> left;
  for (const auto& file : std::filesystem::recursive_directory_iterator(dir.Join("cdi"))) {
    const std::string name = file.path().filename();
    for (const k8s::ClaimRef& claim : claims) {
      if (absl::StrContains(name, claim.uid)) left.push_back(absl::StrCat("CDI spec ", name));
    }
  }
  const std::string plugin_dir = dir.Join("plugins/" + driver_name);
  std::error_code error;
  for (const auto& file : std::filesystem::directory_iterator(plugin_dir + "/dra-device-metadata", error)) {
    left.push_back(absl::StrCat("device metadata ", file.path().string()));
  }
  absl::StatusOr<std::unique_ptr<kubeletplugin::internal::Checkpoint>> checkpoint =
      kubeletplugin::internal::Checkpoint::Open(testing::CheckpointFile(plugin_dir));
  if (!checkpoint.ok()) {
    left.push_back(absl::StrCat("a checkpoint that does not load: ", checkpoint.status().ToString()));
  } else {
    std::vector<kubeletplugin::internal::CheckpointEntry> entries = (*checkpoint)->Entries();
    std::erase_if(entries, [&](const auto& entry) { return orphans.contains(entry.claim.uid); });
    if (!entries.empty()) left.push_back(absl::StrCat(entries.size(), " claims in the checkpoint"));
  }
  return left;
}

absl::StatusOr<std::string> KubeletPeerBinary(const std::string& peer) {
  if (!peer.empty()) return peer;
  absl::StatusOr<ProcessResult> dir = RunProcess({DRA_E2E_BUILD_K8S, "--print-dir", "kubeletpeer"});
  if (!dir.ok()) return dir.status();
  if (dir->exit_code != 0) return absl::FailedPreconditionError(absl::StrCat("no kubelet peer: ", dir->err));
  return absl::StrCat(absl::StripTrailingAsciiWhitespace(dir->out), "/kubeletpeer");
}

}  // namespace dra::testing
