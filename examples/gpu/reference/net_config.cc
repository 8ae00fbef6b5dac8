#include "net_config.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "dra/k8s/field_error.h"

namespace gpu {
namespace {

using dra::k8s::FieldError;
using dra::k8s::GoQuote;
using nlohmann::json;

absl::Status Invalid(const FieldError& error) { return absl::InvalidArgumentError(error.ToString()); }

// 8 x (2^32 - 1): the reference refuses a burst whose eighth reaches 2^32 - 1.
constexpr uint64_t kBurstLimit = 8ULL * std::numeric_limits<uint32_t>::max();

absl::StatusOr<uint64_t> Burst(const json& bursts, const std::string& key) {
  auto it = bursts.find(key);
  if (it == bursts.end()) return 0;
  const std::string path = "bwBurst." + key;
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
    return Invalid(FieldError::Invalid(path, it->dump(), "must be a non-negative integer (bytes)"));
  }
  const uint64_t burst = it->get<uint64_t>();
  if (burst >= kBurstLimit) {
    return Invalid(FieldError::Invalid(path, it->dump(), absl::StrCat("must be below ", kBurstLimit, " (4 GiB/s)")));
  }
  return burst;
}

}  // namespace

absl::StatusOr<NetConfig> DecodeNetConfig(const json& parameters) {
  if (!parameters.is_object()) return Invalid(FieldError::Invalid("", parameters.dump(), "must be an object"));
  for (const auto& [key, value] : parameters.items()) {
    if (key != "apiVersion" && key != "kind" && key != "bwBurst")
      return Invalid(FieldError::Forbidden(key, "unknown field"));
  }
  auto shown = [&](const char* key) {
    auto it = parameters.find(key);
    return it == parameters.end() ? GoQuote("") : it->is_string() ? GoQuote(it->get<std::string>()) : it->dump();
  };
  if (parameters.value("apiVersion", json()) != kNetConfigApiVersion) {
    return Invalid(FieldError::NotSupported("apiVersion", shown("apiVersion"), {kNetConfigApiVersion}));
  }
  if (parameters.value("kind", json()) != kNetConfigKind) {
    return Invalid(FieldError::NotSupported("kind", shown("kind"), {kNetConfigKind}));
  }
  auto bursts = parameters.find("bwBurst");
  if (bursts == parameters.end()) return Invalid(FieldError::Required("bwBurst", "no burst set"));
  if (!bursts->is_object()) return Invalid(FieldError::Invalid("bwBurst", bursts->dump(), "must be an object"));
  for (const auto& [key, value] : bursts->items()) {
    if (key != "ingressBurst" && key != "egressBurst") {
      return Invalid(FieldError::Forbidden("bwBurst." + key, "unknown field"));
    }
  }
  NetConfig config;
  absl::StatusOr<uint64_t> ingress = Burst(*bursts, "ingressBurst");
  if (!ingress.ok()) return ingress.status();
  absl::StatusOr<uint64_t> egress = Burst(*bursts, "egressBurst");
  if (!egress.ok()) return egress.status();
  config.ingress_burst = *ingress;
  config.egress_burst = *egress;
  return config;
}

}  // namespace gpu
