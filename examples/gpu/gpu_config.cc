#include "gpu_config.h"

#include <algorithm>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dra/k8s/field_error.h"
#include "opaque_configs.h"

namespace gpu {
namespace {

using dra::k8s::FieldError;
using dra::k8s::GoQuote;
using nlohmann::json;

// Every key of `object` must be in `allowed`; the first stray one is the error.
std::optional<FieldError> UnknownField(const json& object, const std::string& path,
                                       const std::set<std::string>& allowed) {
  for (const auto& [key, value] : object.items()) {
    if (!allowed.contains(key)) {
      return FieldError::Forbidden(path.empty() ? key : absl::StrCat(path, ".", key), "unknown field");
    }
  }
  return std::nullopt;
}

absl::Status Invalid(const FieldError& error) { return absl::InvalidArgumentError(error.ToString()); }

const json* ObjectAt(const json& parent, const std::string& key) {
  auto it = parent.find(key);
  return it == parent.end() ? nullptr : &*it;
}

// A value as an error shows it: a string quoted (a missing one as ""),
// anything else as JSON.
std::string Shown(const json* value) {
  if (value == nullptr) return GoQuote("");
  return value->is_string() ? GoQuote(value->get<std::string>()) : value->dump();
}

// Unsupported value, with dra-example-driver's words for it first
// ("unknown time-slice interval: Fast"), which its users' checks look for.
FieldError Unknown(const std::string& path, const json& value, const std::string& what,
                   const std::vector<std::string>& supported) {
  FieldError error = FieldError::NotSupported(path, Shown(&value), supported);
  error.detail = absl::StrCat("unknown ", what, ": ", value.is_string() ? value.get<std::string>() : value.dump(), "; ",
                              error.detail);
  return error;
}

}  // namespace

absl::StatusOr<GpuConfig> DecodeGpuConfig(const json& parameters) {
  if (!parameters.is_object()) return Invalid(FieldError::Invalid("", parameters.dump(), "must be an object"));
  if (auto stray = UnknownField(parameters, "", {"apiVersion", "kind", "sharing"})) return Invalid(*stray);
  // Compared as JSON values: json::value("apiVersion", "") throws when it is
  // not a string.
  const json* api_version = ObjectAt(parameters, "apiVersion");
  if (api_version == nullptr || *api_version != kGpuConfigApiVersion) {
    return Invalid(FieldError::NotSupported("apiVersion", Shown(api_version), {kGpuConfigApiVersion}));
  }
  const json* kind = ObjectAt(parameters, "kind");
  if (kind == nullptr || *kind != kGpuConfigKind) {
    return Invalid(FieldError::NotSupported("kind", Shown(kind), {kGpuConfigKind}));
  }
  GpuConfig config;
  const json* sharing = ObjectAt(parameters, "sharing");
  if (sharing == nullptr) return config;
  if (!sharing->is_object()) return Invalid(FieldError::Invalid("sharing", sharing->dump(), "must be an object"));
  if (auto stray = UnknownField(*sharing, "sharing", {"strategy", "timeSlicingConfig", "spacePartitioningConfig"})) {
    return Invalid(*stray);
  }
  const json* strategy = ObjectAt(*sharing, "strategy");
  if (strategy == nullptr || !strategy->is_string()) {
    return Invalid(FieldError::Required("sharing.strategy", "must be TimeSlicing or SpacePartitioning"));
  }
  const json* time_slicing = ObjectAt(*sharing, "timeSlicingConfig");
  const json* partitioning = ObjectAt(*sharing, "spacePartitioningConfig");
  if (*strategy == "TimeSlicing") {
    if (partitioning != nullptr) {
      return Invalid(
          FieldError::Forbidden("sharing.spacePartitioningConfig", "may only be set with SpacePartitioning"));
    }
    config.strategy = GpuConfig::Strategy::kTimeSlicing;
    if (time_slicing == nullptr) return config;
    if (!time_slicing->is_object()) {
      return Invalid(FieldError::Invalid("sharing.timeSlicingConfig", time_slicing->dump(), "must be an object"));
    }
    if (auto stray = UnknownField(*time_slicing, "sharing.timeSlicingConfig", {"interval"})) return Invalid(*stray);
    const json* interval = ObjectAt(*time_slicing, "interval");
    if (interval == nullptr) return config;
    static const std::vector<std::string> kIntervals = {"Default", "Long", "Medium", "Short"};
    if (!interval->is_string() ||
        std::find(kIntervals.begin(), kIntervals.end(), interval->get<std::string>()) == kIntervals.end()) {
      return Invalid(Unknown("sharing.timeSlicingConfig.interval", *interval, "time-slice interval", kIntervals));
    }
    config.interval = interval->get<std::string>();
    return config;
  }
  if (*strategy == "SpacePartitioning") {
    if (time_slicing != nullptr) {
      return Invalid(FieldError::Forbidden("sharing.timeSlicingConfig", "may only be set with TimeSlicing"));
    }
    config.strategy = GpuConfig::Strategy::kSpacePartitioning;
    if (partitioning == nullptr) return config;
    if (!partitioning->is_object()) {
      return Invalid(FieldError::Invalid("sharing.spacePartitioningConfig", partitioning->dump(), "must be an object"));
    }
    if (auto stray = UnknownField(*partitioning, "sharing.spacePartitioningConfig", {"partitionCount"})) {
      return Invalid(*stray);
    }
    const json* count = ObjectAt(*partitioning, "partitionCount");
    if (count == nullptr) return config;
    if (!count->is_number_integer() || count->get<int64_t>() < 1 || count->get<int64_t>() > 16) {
      return Invalid(FieldError::Invalid("sharing.spacePartitioningConfig.partitionCount", count->dump(),
                                         "must be an integer between 1 and 16"));
    }
    config.partition_count = count->get<int>();
    return config;
  }
  return Invalid(Unknown("sharing.strategy", *strategy, "GPU sharing strategy", {"SpacePartitioning", "TimeSlicing"}));
}

absl::StatusOr<std::map<size_t, GpuConfig>> ConfigsForResults(const dra::k8s::ResourceClaim& claim,
                                                              const std::string& driver) {
  return ConfigsForResults<GpuConfig>(claim, driver, DecodeGpuConfig);
}

}  // namespace gpu
