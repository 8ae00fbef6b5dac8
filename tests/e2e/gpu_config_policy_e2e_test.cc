// The GPU example's two admission checks of GpuConfigs on a real
// kube-apiserver that serves resource.k8s.io v1, v1beta1 and v1beta2: its
// ValidatingAdmissionPolicy (examples/gpu/deploy/gpu-config-policy.yaml) and
// dra-example-webhook, the admission webhook the reference's chart runs from
// the image. A ResourceClaim or ResourceClaimTemplate whose config for the
// driver breaks a rule is refused at creation in every version, the message
// naming the field and the rule as the driver names them at prepare time, in
// the reference's words; good configs and other drivers' configs pass.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "e2e/e2e_cluster.h"
#include "e2e/manifests.h"
#include "e2e/private_cluster.h"
#include "support/certificate.h"
#include "support/free_port.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {
namespace {

using nlohmann::json;

constexpr char kGpuConfigApiVersion[] = "gpu.resource.example.com/v1alpha1";

json GpuConfig(json sharing) {
  json config = {{"apiVersion", kGpuConfigApiVersion}, {"kind", "GpuConfig"}};
  if (!sharing.is_null()) config["sharing"] = std::move(sharing);
  return config;
}

json TimeSlicing(const std::string& interval) {
  return {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", interval}}}};
}

// A claim spec of `version` with one request, another driver's config (never
// looked at) and `parameters` for the GPU driver.
json ClaimSpec(const std::string& version, const json& parameters) {
  json request = {{"name", "gpu"}};
  if (version == "v1beta1") {
    request["deviceClassName"] = "gpu.example.com";
  } else {
    request["exactly"] = {{"deviceClassName", "gpu.example.com"}};
  }
  return {{"devices",
           {{"requests", json::array({request})},
            {"config", json::array({{{"opaque", {{"driver", "nic.example.com"}, {"parameters", {{"speed", 1}}}}}},
                                    {{"opaque", {{"driver", "gpu.example.com"}, {"parameters", parameters}}}}})}}}};
}

struct Kind {
  std::string resource;  // resourceclaims, resourceclaimtemplates
  std::string kind;
  std::string spec_path;
};
const Kind kClaim{"resourceclaims", "ResourceClaim", "spec"};
const Kind kTemplate{"resourceclaimtemplates", "ResourceClaimTemplate", "spec.spec"};

// Creates a claim or template of `version` with `parameters` in `ns`; the
// error, or OK.
absl::Status Create(k8s::Client& admin, const std::string& version, const Kind& kind, const json& parameters,
                    const std::string& ns = "default") {
  static int serial = 0;
  json object = {{"apiVersion", "resource.k8s.io/" + version},
                 {"kind", kind.kind},
                 {"metadata", {{"name", absl::StrCat("c", ++serial)}, {"namespace", ns}}}};
  const json spec = ClaimSpec(version, parameters);
  if (kind.resource == kClaim.resource) {
    object["spec"] = spec;
  } else {
    object["spec"]["spec"] = spec;
  }
  return admin.Create(k8s::ResourceRef{"resource.k8s.io", version, kind.resource, true}, ns, object).status();
}

TEST_CASE(
    "the GPU example's GpuConfig policy refuses a bad config at creation in every served version of claims "
    "and templates - naming the field and the rule",
    "[e2e][gpu][admission]") {
  PrivateCluster cluster("", "resource.k8s.io/v1=true,resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true");
  std::shared_ptr<k8s::Client> admin = cluster.Admin();
  const std::string path = absl::StrCat(DRA_SOURCE_DIR, "/examples/gpu/deploy/gpu-config-policy.yaml");
  for (json& object : ManifestObjects(testing::ReadFile(path), path)) ApplyObject(*admin, std::move(object));
  // The API server takes a new policy in through an informer: once a bad
  // claim is refused it is in force.
  REQUIRE(
      Eventually([&] { return !Create(*admin, "v1", kClaim, GpuConfig(TimeSlicing("Fast"))).ok(); }, absl::Minutes(2)));

  const std::string interval =
      ".devices.config[1].opaque.parameters.sharing.timeSlicingConfig.interval: Unsupported value: "
      "\"InvalidInterval\": unknown time-slice interval: InvalidInterval; supported values: \"Default\", \"Long\", "
      "\"Medium\", \"Short\"";
  for (const std::string version : {"v1", "v1beta1", "v1beta2"}) {
    for (const Kind& kind : {kClaim, kTemplate}) {
      INFO(version << " " << kind.kind);
      const absl::Status bad = Create(*admin, version, kind, GpuConfig(TimeSlicing("InvalidInterval")));
      CHECK(absl::IsInvalidArgument(bad));
      CHECK_THAT(std::string(bad.message()), Catch::Contains(kind.spec_path + interval));
      CHECK(Create(*admin, version, kind, GpuConfig(TimeSlicing("Long"))).ok());
    }
  }

  const std::string at = "spec.devices.config[1].opaque.parameters";
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"apiVersion", kGpuConfigApiVersion}, {"kind", "NicConfig"}},
       at + ": Invalid value: must be a GpuConfig (apiVersion gpu.resource.example.com/v1alpha1, kind GpuConfig)"},
      {{{"apiVersion", kGpuConfigApiVersion}, {"kind", "GpuConfig"}, {"shraing", json::object()}},
       at + ".shraing: Forbidden: unknown field"},
      {GpuConfig(5), at + ".sharing: Invalid value: must be an object"},
      {GpuConfig({{"strategy", "TimeSlicing"}, {"mode", 1}}), at + ".sharing.mode: Forbidden: unknown field"},
      {GpuConfig({{"strategy", "Fast"}}),
       at + ".sharing.strategy: Unsupported value: \"Fast\": unknown GPU sharing strategy: Fast; supported values: "
            "\"SpacePartitioning\", \"TimeSlicing\""},
      {GpuConfig(json::object()), at + ".sharing.strategy: Required value: must be TimeSlicing or SpacePartitioning"},
      {GpuConfig({{"strategy", "TimeSlicing"}, {"spacePartitioningConfig", json::object()}}),
       at + ".sharing.spacePartitioningConfig: Forbidden: may only be set with SpacePartitioning"},
      {GpuConfig({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", 3}}}}),
       at + ".sharing.timeSlicingConfig.interval: Unsupported value: not a string; supported values: \"Default\""},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 17}}}}),
       at + ".sharing.spacePartitioningConfig.partitionCount: Invalid value: 17: must be an integer between 1 and 16"},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 0}}}}),
       at + ".sharing.spacePartitioningConfig.partitionCount: Invalid value: 0: must be an integer between 1 and 16"},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"count", 2}}}}),
       at + ".sharing.spacePartitioningConfig.count: Forbidden: unknown field"},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"timeSlicingConfig", json::object()}}),
       at + ".sharing.timeSlicingConfig: Forbidden: may only be set with TimeSlicing"},
  };
  for (const auto& [parameters, message] : cases) {
    INFO(parameters.dump());
    const absl::Status refused = Create(*admin, "v1", kClaim, parameters);
    CHECK(absl::IsInvalidArgument(refused));
    CHECK_THAT(std::string(refused.message()), Catch::Contains(message));
  }
  for (const json& good :
       {GpuConfig(nullptr), GpuConfig({{"strategy", "TimeSlicing"}}),
        GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 16}}}})}) {
    INFO(good.dump());
    CHECK(Create(*admin, "v1", kClaim, good).ok());
  }
}

TEST_CASE(
    "dra-example-webhook from the GPU example's binary behind a real kube-apiserver refuses a bad GpuConfig in "
    "claims and templates of every version in the reference's words",
    "[e2e][gpu][admission]") {
  std::shared_ptr<k8s::Client> admin = MakeClient(AdminConfig());
  testing::TempDir dir;
  const testing::CertificateFiles cert = testing::MakeSelfSignedCertificate(dir.path(), "webhook");
  // The reference's chart runs the image's dra-example-webhook, which the
  // image links to the driver's binary.
  const std::string program = dir.Join("dra-example-webhook");
  std::filesystem::create_symlink(DRA_GPU_DRIVER, program);
  absl::StatusOr<testing::ProcessResult> no_cert = testing::RunProcess({program, "--port=1"});
  REQUIRE(no_cert.ok());
  CHECK(no_cert->exit_code == 2);
  CHECK_THAT(no_cert->err, Catch::Contains("flag --tls-cert-file is required"));

  const int port = testing::FreePort();
  const std::string log = dir.Join("webhook.log");
  absl::StatusOr<testing::ChildProcess> webhook = testing::ChildProcess::Spawn(
      {program, "--tls-cert-file=" + cert.cert, "--tls-private-key-file=" + cert.key, absl::StrCat("--port=", port),
       "--device-profile=gpu", "--driver-name=gpu.example.com", "-v=2"},
      log);
  REQUIRE(webhook.ok());
  INFO("the webhook's log:\n" << testing::ReadFile(log));
  REQUIRE(Eventually([&] { return testing::ReadFile(log).find("Webhook serving") != std::string::npos; },
                     absl::Minutes(1)));

  // The chart's ValidatingWebhookConfiguration, reaching the webhook by URL
  // (the API server runs on this machine) and only for this test's
  // namespace: the tests beside it create claims too.
  const std::string ns = CreateNamespace(*admin, "webhook");
  const std::string name = UniqueName("dra-example-webhook");
  const k8s::ResourceRef configurations{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", false};
  const json rule = {{"apiGroups", json::array({"resource.k8s.io"})},
                     {"apiVersions", {"v1beta1", "v1beta2", "v1"}},
                     {"operations", {"CREATE", "UPDATE"}},
                     {"resources", {"resourceclaims", "resourceclaimtemplates"}},
                     {"scope", "Namespaced"}};
  const json hook = {{"name", "dra.example.com"},
                     {"rules", json::array({rule})},
                     {"clientConfig",
                      {{"url", absl::StrCat("https://127.0.0.1:", port, "/validate-resource-claim-parameters")},
                       {"caBundle", absl::Base64Escape(testing::ReadFile(cert.cert))}}},
                     {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", ns}}}}},
                     {"admissionReviewVersions", json::array({"v1"})},
                     {"sideEffects", "None"},
                     {"failurePolicy", "Fail"}};
  const json configuration = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                              {"kind", "ValidatingWebhookConfiguration"},
                              {"metadata", {{"name", name}}},
                              {"webhooks", json::array({hook})}};
  REQUIRE(admin->Create(configurations, "", configuration).ok());
  absl::Cleanup remove = [&] { (void)admin->Delete(configurations, "", name); };
  // The API server takes a new configuration in through an informer: once a
  // bad claim is refused it is in force.
  REQUIRE(Eventually([&] { return !Create(*admin, "v1", kClaim, GpuConfig(TimeSlicing("Fast")), ns).ok(); },
                     absl::Minutes(2)));

  for (const std::string version : {"v1", "v1beta1", "v1beta2"}) {
    for (const Kind& kind : {kClaim, kTemplate}) {
      INFO(version << " " << kind.kind);
      const absl::Status bad = Create(*admin, version, kind, GpuConfig(TimeSlicing("InvalidInterval")), ns);
      CHECK(absl::IsInvalidArgument(bad));
      // The words the reference's e2e suite looks for, after the webhook's
      // name as the API server reports it.
      CHECK_THAT(
          std::string(bad.message()),
          Catch::Contains("admission webhook \"dra.example.com\" denied the request: 1 configs failed to "
                          "validate: object at " +
                          kind.spec_path +
                          ".devices.config[1].opaque.parameters is invalid: sharing.timeSlicingConfig.interval: "
                          "Unsupported value: \"InvalidInterval\": unknown time-slice interval: InvalidInterval"));
      CHECK(Create(*admin, version, kind, GpuConfig(TimeSlicing("Long")), ns).ok());
    }
  }
  const absl::Status strategy = Create(*admin, "v1", kClaim, GpuConfig({{"strategy", "Fast"}}), ns);
  CHECK_THAT(std::string(strategy.message()), Catch::Contains("unknown GPU sharing strategy: Fast"));
  CHECK(Create(*admin, "v1", kClaim, GpuConfig(nullptr), ns).ok());
  CHECK_THAT(testing::ReadFile(log), Catch::Contains("Refused"));
}

}  // namespace
}  // namespace dra::e2e
