// The admission review of claims' opaque configs (dra-example-webhook's
// answers): which configs are checked, where they are found in each kind and
// version, and the reference's wording of a refusal.
#include <catch2/catch.hpp>

#include "common/claim_config_review.h"
#include "gpu_config.h"

namespace {

using nlohmann::json;

json GpuConfig(const std::string& interval) {
  return {{"apiVersion", gpu::kGpuConfigApiVersion},
          {"kind", gpu::kGpuConfigKind},
          {"sharing", {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", interval}}}}}};
}

json Opaque(const std::string& driver, json parameters) {
  return {{"requests", json::array({"ts-gpu"})},
          {"opaque", {{"driver", driver}, {"parameters", std::move(parameters)}}}};
}

json Review(const std::string& version, const std::string& resource, json configs) {
  json devices = {{"requests", {{{"name", "ts-gpu"}, {"deviceClassName", "gpu.example.com"}}}}};
  if (!configs.is_null()) devices["config"] = std::move(configs);
  json spec = {{"devices", devices}};
  const bool claim = resource == "resourceclaims";
  json object = {{"apiVersion", "resource.k8s.io/" + version},
                 {"kind", claim ? "ResourceClaim" : "ResourceClaimTemplate"},
                 {"metadata", {{"name", "webhook-test"}, {"namespace", "default"}}},
                 {"spec", claim ? spec : json{{"spec", spec}}}};
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"resource", {{"group", "resource.k8s.io"}, {"version", version}, {"resource", resource}}},
            {"operation", "CREATE"},
            {"object", object}}}};
}

json Answer(const json& review) {
  absl::StatusOr<json> answer = example::ReviewClaimConfigs(
      review, "gpu.example.com", [](const json& parameters) { return gpu::DecodeGpuConfig(parameters).status(); });
  REQUIRE(answer.ok());
  CHECK((*answer)["apiVersion"] == "admission.k8s.io/v1");
  CHECK((*answer)["kind"] == "AdmissionReview");
  CHECK((*answer)["response"]["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002");
  return (*answer)["response"];
}

constexpr char kIntervalError[] =
    "is invalid: sharing.timeSlicingConfig.interval: Unsupported value: \"InvalidInterval\": unknown time-slice "
    "interval: InvalidInterval; supported values: \"Default\", \"Long\", \"Medium\", \"Short\"";

}  // namespace

TEST_CASE("claim config review: a bad GpuConfig is refused in every version and kind, in the reference's words",
          "[webhook]") {
  for (const std::string version : {"v1", "v1beta1", "v1beta2"}) {
    for (const std::string resource : {"resourceclaims", "resourceclaimtemplates"}) {
      INFO(version << " " << resource);
      const std::string at = resource == "resourceclaims" ? "spec" : "spec.spec";
      const json refused =
          Answer(Review(version, resource, json::array({Opaque("gpu.example.com", GpuConfig("InvalidInterval"))})));
      CHECK(refused["allowed"] == false);
      CHECK(refused["status"]["code"] == 422);
      CHECK(refused["status"]["reason"] == "Invalid");
      CHECK(refused["status"]["message"] ==
            "1 configs failed to validate: object at " + at + ".devices.config[0].opaque.parameters " + kIntervalError);
      CHECK(Answer(Review(version, resource, json::array({Opaque("gpu.example.com", GpuConfig("Long"))})))["allowed"] ==
            true);
    }
  }
}

TEST_CASE("claim config review: only the driver's configs are checked, each bad one is named", "[webhook]") {
  CHECK(Answer(Review("v1", "resourceclaims", nullptr))["allowed"] == true);
  CHECK(Answer(Review("v1", "resourceclaims", json::array({Opaque("other.example.com", json::object())})))["allowed"] ==
        true);
  const json no_opaque = {{"requests", json::array({"ts-gpu"})}};
  const json refused = Answer(Review("v1", "resourceclaims",
                                     json::array({Opaque("gpu.example.com", GpuConfig("InvalidInterval")), no_opaque,
                                                  Opaque("other.example.com", GpuConfig("InvalidInterval")),
                                                  Opaque("gpu.example.com", {{"kind", "GpuConfig"}})})));
  CHECK(refused["status"]["message"] ==
        std::string("2 configs failed to validate: object at spec.devices.config[0].opaque.parameters ") +
            kIntervalError +
            "; object at spec.devices.config[3].opaque.parameters is invalid: apiVersion: Unsupported value: \"\": "
            "supported values: \"gpu.resource.example.com/v1alpha1\"");
}

TEST_CASE("claim config review: other objects are bad requests, a body that is no review is an error", "[webhook]") {
  json pods = Review("v1", "resourceclaims", nullptr);
  pods["request"]["resource"] = {{"group", ""}, {"version", "v1"}, {"resource", "pods"}};
  const json refused = Answer(pods);
  CHECK(refused["allowed"] == false);
  CHECK(refused["status"]["code"] == 400);
  CHECK(refused["status"]["reason"] == "BadRequest");
  CHECK(refused["status"]["message"] ==
        "expected resource to be resourceclaims or resourceclaimtemplates in resource.k8s.io v1, v1beta1 or "
        "v1beta2, got /v1, Resource=pods");

  json numbers = Review("v1", "resourceclaims", nullptr);
  numbers["request"]["resource"] = {{"group", 1}, {"version", 2}, {"resource", 3}};
  CHECK(Answer(numbers)["status"]["message"] ==
        "expected resource to be resourceclaims or resourceclaimtemplates in resource.k8s.io v1, v1beta1 or "
        "v1beta2, got 1/2, Resource=3");

  json no_object = Review("v1", "resourceclaims", nullptr);
  no_object["request"].erase("object");
  CHECK(Answer(no_object)["status"]["message"] == "request.object: Required value: the resourceclaims to review");

  json config_not_list = Review("v1", "resourceclaims", nullptr);
  config_not_list["request"]["object"]["spec"]["devices"]["config"] = "x";
  CHECK(Answer(config_not_list)["status"]["message"] == "spec.devices.config: Invalid value: must be a list");

  const auto check = [](const json&) { return absl::OkStatus(); };
  json wrong_version = Review("v1", "resourceclaims", nullptr);
  wrong_version["apiVersion"] = "admission.k8s.io/v1beta1";
  for (const json& bad :
       {json(), json::array(), wrong_version,
        json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", {{"uid", 5}}}}}) {
    INFO(bad.dump());
    absl::StatusOr<json> answer = example::ReviewClaimConfigs(bad, "gpu.example.com", check);
    CHECK(absl::IsInvalidArgument(answer.status()));
  }
}
