// example::ReviewClaimConfigs: the answer of a validating admission webhook
// that checks a driver's opaque device configs, as dra-example-webhook gives
// it. The request is an AdmissionReview (admission.k8s.io/v1) of a
// ResourceClaim or ResourceClaimTemplate in resource.k8s.io v1, v1beta1 or
// v1beta2 (their configs sit at the same place in all three); each opaque
// config naming `driver` is checked, the others are left to their drivers.
// A refusal names every bad config the way the reference does:
//
//   1 configs failed to validate: object at spec.devices.config[0].opaque.parameters
//   is invalid: sharing.timeSlicingConfig.interval: Unsupported value: "Fast":
//   unknown time-slice interval: Fast; supported values: "Default", ...
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace example {

// Checks one config's opaque parameters; the error's message is the
// refusal's (it should name the field and the rule).
using OpaqueParametersCheck = std::function<absl::Status(const nlohmann::json& parameters)>;

// The AdmissionReview to send back: allowed, or refused with reason Invalid
// (code 422) naming each bad config, or with reason BadRequest (code 400)
// for an object that is not a claim or template of a version listed above.
// InvalidArgument when `review` is no AdmissionReview request at all (the
// HTTP answer is then 400 with that message).
absl::StatusOr<nlohmann::json> ReviewClaimConfigs(const nlohmann::json& review, const std::string& driver,
                                                  const OpaqueParametersCheck& check);

}  // namespace example
