#include "common/claim_config_review.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace example {
namespace {

using nlohmann::json;

constexpr char kAdmissionApiVersion[] = "admission.k8s.io/v1";

json Response(const json& uid, bool allowed) {
  return json{{"apiVersion", kAdmissionApiVersion},
              {"kind", "AdmissionReview"},
              {"response", {{"uid", uid}, {"allowed", allowed}}}};
}

json Refusal(const json& uid, int code, const std::string& reason, const std::string& message) {
  json review = Response(uid, false);
  review["response"]["status"] = {{"code", code}, {"reason", reason}, {"message", message}};
  return review;
}

// The object's configs and the path they sit at, or why there are none.
struct Configs {
  const json* list = nullptr;  // null: the object has none
  std::string path;            // "spec" or "spec.spec"
};

// A field as text: a string as it is, anything else as JSON, "" when absent
// (json::value with a string default throws on a field of another type).
std::string TextOf(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

absl::StatusOr<Configs> FindConfigs(const json& request) {
  const json resource = request.value("resource", json::object());
  const std::string group = TextOf(resource, "group");
  const std::string version = TextOf(resource, "version");
  const std::string name = TextOf(resource, "resource");
  const bool known_version = version == "v1" || version == "v1beta1" || version == "v1beta2";
  if (group != "resource.k8s.io" || !known_version || (name != "resourceclaims" && name != "resourceclaimtemplates")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected resource to be resourceclaims or resourceclaimtemplates in resource.k8s.io v1, v1beta1 or v1beta2, "
        "got ",
        group, "/", version, ", Resource=", name));
  }
  const auto object = request.find("object");
  if (object == request.end() || !object->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("request.object: Required value: the ", name, " to review"));
  }
  const bool claim = name == "resourceclaims";
  Configs configs;
  configs.path = claim ? "spec" : "spec.spec";
  const std::vector<std::string> keys = claim ? std::vector<std::string>{"spec", "devices", "config"}
                                              : std::vector<std::string>{"spec", "spec", "devices", "config"};
  const json* at = &*object;
  for (const std::string& key : keys) {
    if (!at->is_object()) return configs;
    const auto next = at->find(key);
    if (next == at->end() || next->is_null()) return configs;
    at = &*next;
  }
  if (!at->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(configs.path, ".devices.config: Invalid value: must be a list"));
  }
  configs.list = at;
  return configs;
}

}  // namespace

absl::StatusOr<json> ReviewClaimConfigs(const json& review, const std::string& driver,
                                        const OpaqueParametersCheck& check) {
  if (!review.is_object() || review.value("apiVersion", json()) != kAdmissionApiVersion ||
      review.value("kind", json()) != "AdmissionReview") {
    return absl::InvalidArgumentError("expected an AdmissionReview of admission.k8s.io/v1");
  }
  const auto request = review.find("request");
  if (request == review.end() || !request->is_object() || !request->contains("uid") || !(*request)["uid"].is_string()) {
    return absl::InvalidArgumentError("AdmissionReview.request: Required value: a request with its uid");
  }
  const json& uid = (*request)["uid"];
  absl::StatusOr<Configs> configs = FindConfigs(*request);
  if (!configs.ok()) return Refusal(uid, 400, "BadRequest", std::string(configs.status().message()));
  if (configs->list == nullptr) return Response(uid, true);

  std::vector<std::string> errors;
  for (size_t i = 0; i < configs->list->size(); ++i) {
    const json& config = (*configs->list)[i];
    const json opaque = config.is_object() ? config.value("opaque", json()) : json();
    if (!opaque.is_object() || opaque.value("driver", json()) != driver) continue;
    const std::string at = absl::StrCat(configs->path, ".devices.config[", i, "].opaque.parameters");
    if (absl::Status checked = check(opaque.value("parameters", json())); !checked.ok()) {
      errors.push_back(absl::StrCat("object at ", at, " is invalid: ", checked.message()));
    }
  }
  if (errors.empty()) return Response(uid, true);
  return Refusal(uid, 422, "Invalid",
                 absl::StrCat(errors.size(), " configs failed to validate: ", absl::StrJoin(errors, "; ")));
}

}  // namespace example
