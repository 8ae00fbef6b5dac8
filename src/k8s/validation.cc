// Mirrors k8s.io/kubernetes pkg/apis/resource/validation/validation.go
// (ValidateResourceSlice, validateDeviceStatus) and the declarative-only rules
// of k8s.io/api/resource/v1 (zz_generated.validations.go). Function names
// follow the Go functions they mirror; see validation.h for the scope.
#include "dra/k8s/validation.h"

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dra/k8s/names.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {
namespace {

using E = FieldError;

// ---- paths and values, printed as field.Path and field.Error print them ----

std::string Child(const std::string& path, std::string_view name) { return path + "." + std::string(name); }
std::string Index(const std::string& path, size_t index) { return path + "[" + std::to_string(index) + "]"; }
std::string Key(const std::string& path, std::string_view key) { return path + "[" + std::string(key) + "]"; }

std::string Q(std::string_view value) { return GoQuote(value); }
std::string Q(const Quantity& value) { return GoQuote(value.ToString()); }
std::string Bool(bool value) { return value ? "true" : "false"; }

// validateMap's truncateIfTooLong: long keys are shortened in the middle of
// the path (never in the message of a key error).
std::string TruncateIfTooLong(std::string_view key, size_t max_len) {
  if (max_len < 16) max_len = 16;
  if (key.size() <= max_len) return std::string(key);
  const size_t remaining = max_len - 3;
  return std::string(key.substr(0, (remaining + 1) / 2)) + "..." + std::string(key.substr(key.size() - remaining / 2));
}

// %#v of a nil []string, as Go prints an unset list.
constexpr const char* kNilStringSlice = "[]string(nil)";

std::string GoStringSlice(const std::vector<std::string>& values) {
  if (values.empty()) return kNilStringSlice;
  std::string out = "[]string{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + Q(values[i]);
  return out + "}";
}

std::string GoNodeSelectorRequirements(const std::vector<NodeSelectorRequirement>& requirements) {
  if (requirements.empty()) return "[]core.NodeSelectorRequirement(nil)";
  std::string out = "[]core.NodeSelectorRequirement{";
  for (size_t i = 0; i < requirements.size(); ++i) {
    const NodeSelectorRequirement& r = requirements[i];
    out += std::string(i ? ", " : "") + "core.NodeSelectorRequirement{Key:" + Q(r.key) +
           ", Operator:" + Q(r.operator_) + ", Values:" + GoStringSlice(r.values) + "}";
  }
  return out + "}";
}

// %#v of []core.NodeSelectorTerm.
std::string GoNodeSelectorTerms(const std::vector<NodeSelectorTerm>& terms) {
  if (terms.empty()) return "[]core.NodeSelectorTerm(nil)";
  std::string out = "[]core.NodeSelectorTerm{";
  for (size_t i = 0; i < terms.size(); ++i) {
    out += std::string(i ? ", " : "") +
           "core.NodeSelectorTerm{MatchExpressions:" + GoNodeSelectorRequirements(terms[i].match_expressions) +
           ", MatchFields:" + GoNodeSelectorRequirements(terms[i].match_fields) + "}";
  }
  return out + "}";
}

// Go prints the DeviceAttribute struct with %#v, pointer addresses included;
// the JSON form is printed instead.
std::string AttributeText(const DeviceAttribute& a) {
  nlohmann::json j = nlohmann::json::object();
  if (a.int_value) j["int"] = *a.int_value;
  if (a.bool_value) j["bool"] = *a.bool_value;
  if (a.string_value) j["string"] = *a.string_value;
  if (a.version_value) j["version"] = *a.version_value;
  if (!a.int_values.empty()) j["ints"] = a.int_values;
  if (!a.bool_values.empty()) j["bools"] = a.bool_values;
  if (!a.string_values.empty()) j["strings"] = a.string_values;
  if (!a.version_values.empty()) j["versions"] = a.version_values;
  return j.dump();
}

std::string ToLowerAscii(std::string_view value) {
  std::string out(value);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::vector<std::string_view> Split(std::string_view value, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = value.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(value.substr(start));
      return parts;
    }
    parts.push_back(value.substr(start, pos - start));
    start = pos + 1;
  }
}

// ---- names ----

// corevalidation.ValidateDNS1123Label / ValidateDNS1123Subdomain.
void ValidateDns1123Label(std::string_view value, const std::string& path, FieldErrors& errs) {
  for (std::string& msg : IsDns1123Label(value)) errs.push_back(E::Invalid(path, Q(value), std::move(msg)));
}

void ValidateDns1123Subdomain(std::string_view value, const std::string& path, FieldErrors& errs) {
  for (std::string& msg : IsDns1123Subdomain(value)) errs.push_back(E::Invalid(path, Q(value), std::move(msg)));
}

// corevalidation.ValidateCSIDriverName (validateDriverName).
void ValidateDriverName(std::string_view name, const std::string& path, FieldErrors& errs) {
  if (name.empty()) {
    errs.push_back(E::Required(path, ""));
    return;
  }
  if (name.size() > kDriverNameMaxLength) errs.push_back(E::TooLong(path, kDriverNameMaxLength));
  for (std::string& msg : IsDns1123Subdomain(ToLowerAscii(name))) {
    errs.push_back(E::Invalid(path, Q(name), std::move(msg)));
  }
}

// validatePoolName: DNS subdomains separated by '/', at most 253 bytes.
void ValidatePoolName(std::string_view name, const std::string& path, FieldErrors& errs) {
  if (name.empty()) {
    errs.push_back(E::Required(path, ""));
    return;
  }
  if (name.size() > kPoolNameMaxLength) errs.push_back(E::TooLong(path, kPoolNameMaxLength));
  for (std::string_view part : Split(name, '/')) ValidateDns1123Subdomain(part, path, errs);
}

// validateNodeName: corevalidation.ValidateNodeName = NameIsDNSSubdomain.
void ValidateNodeName(std::string_view name, const std::string& path, FieldErrors& errs) {
  ValidateDns1123Subdomain(name, path, errs);
}

// metav1validation.ValidateLabelName.
void ValidateLabelName(std::string_view name, const std::string& path, FieldErrors& errs) {
  for (std::string& msg : IsQualifiedName(name)) errs.push_back(E::Invalid(path, Q(name), std::move(msg)));
}

void ValidateLabelValue(std::string_view value, const std::string& path, FieldErrors& errs) {
  for (std::string& msg : IsLabelValue(value)) errs.push_back(E::Invalid(path, Q(value), std::move(msg)));
}

// validateCIdentifier: at most DeviceMaxIDLength bytes.
void ValidateCIdentifier(std::string_view id, const std::string& path, FieldErrors& errs) {
  if (id.size() > kDeviceMaxIdLength) errs.push_back(E::TooLong(path, kDeviceMaxIdLength));
  for (std::string& msg : IsCIdentifier(id)) errs.push_back(E::Invalid(path, Q(id), std::move(msg)));
}

// validateQualifiedName: "<C identifier>" or "<driver name>/<C identifier>".
void ValidateQualifiedName(std::string_view name, const std::string& path, FieldErrors& errs) {
  const std::vector<std::string_view> parts = Split(name, '/');
  switch (parts.size()) {
    case 1:
      ValidateCIdentifier(parts[0], path, errs);
      break;
    case 2:
      if (parts[0].empty()) {
        errs.push_back(E::Invalid(path, Q(""), "the domain must not be empty"));
      } else {
        ValidateDriverName(parts[0], path, errs);
      }
      if (parts[1].empty()) {
        errs.push_back(E::Invalid(path, Q(""), "the name must not be empty"));
      } else {
        ValidateCIdentifier(parts[1], path, errs);
      }
      break;
    default:
      errs.push_back(E::Invalid(path, Q(name), "must not contain more than one slash"));
  }
}

// validate.ResourceFullyQualifiedName (declarative, format
// k8s-resource-fully-qualified-name).
void ValidateResourceFullyQualifiedNameFormat(std::string_view name, const std::string& path, FieldErrors& errs) {
  const std::vector<std::string_view> parts = Split(name, '/');
  if (parts.size() == 1) {
    ValidateCIdentifier(parts[0], path, errs);
  } else if (parts.size() == 2) {
    if (parts[0].empty()) {
      errs.push_back(E::Invalid(path, Q(""), "prefix must not be empty"));
    } else {
      if (parts[0].size() > 63) errs.push_back(E::TooLong(path, 63));
      for (std::string& msg : IsDns1123Subdomain(parts[0])) {
        // content.IsDNS1123Subdomain counts the length in bytes.
        if (msg.rfind("must be no more than", 0) == 0) msg = "must be no more than 253 bytes";
        errs.push_back(E::Invalid(path, Q(parts[0]), "prefix: " + msg));
      }
    }
    if (parts[1].empty()) {
      errs.push_back(E::Invalid(path, Q(""), "name must not be empty"));
    } else {
      ValidateCIdentifier(parts[1], path, errs);
    }
  }
  if (name.find('/') == std::string_view::npos) {
    errs.push_back(
        E::Invalid(path, Q(name), "a fully qualified name must be a domain and a name separated by a slash"));
  }
}

// ---- node selectors (corevalidation.ValidateNodeSelector) ----

void ValidateNodeSelectorRequirement(const NodeSelectorRequirement& rq, const std::string& path, FieldErrors& errs) {
  const std::string& op = rq.operator_;
  if (op == "In" || op == "NotIn") {
    if (rq.values.empty()) {
      errs.push_back(E::Required(Child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'"));
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!rq.values.empty()) {
      errs.push_back(
          E::Forbidden(Child(path, "values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
    }
  } else if (op == "Gt" || op == "Lt") {
    if (rq.values.size() != 1) {
      errs.push_back(
          E::Required(Child(path, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"));
    }
  } else {
    errs.push_back(E::Invalid(Child(path, "operator"), Q(op), "not a valid selector operator"));
  }
  ValidateLabelName(rq.key, Child(path, "key"), errs);
  for (size_t i = 0; i < rq.values.size(); ++i) ValidateLabelValue(rq.values[i], Index(Child(path, "values"), i), errs);
}

void ValidateNodeFieldSelectorRequirement(const NodeSelectorRequirement& rq, const std::string& path,
                                          FieldErrors& errs) {
  if (rq.operator_ == "In" || rq.operator_ == "NotIn") {
    if (rq.values.size() != 1) {
      errs.push_back(E::Required(Child(path, "values"),
                                 "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"));
    }
  } else {
    errs.push_back(E::Invalid(Child(path, "operator"), Q(rq.operator_), "not a valid selector operator"));
  }
  if (rq.key != "metadata.name") {
    errs.push_back(E::Invalid(Child(path, "key"), Q(rq.key), "not a valid field selector key"));
  } else {
    for (size_t i = 0; i < rq.values.size(); ++i) ValidateNodeName(rq.values[i], Index(Child(path, "values"), i), errs);
  }
}

void ValidateNodeSelector(const NodeSelector& selector, const std::string& path, FieldErrors& errs) {
  const std::string terms_path = Child(path, "nodeSelectorTerms");
  if (selector.node_selector_terms.empty()) {
    errs.push_back(E::Required(terms_path, "must have at least one node selector term"));
    return;
  }
  for (size_t i = 0; i < selector.node_selector_terms.size(); ++i) {
    const NodeSelectorTerm& term = selector.node_selector_terms[i];
    const std::string term_path = Index(terms_path, i);
    for (size_t j = 0; j < term.match_expressions.size(); ++j) {
      ValidateNodeSelectorRequirement(term.match_expressions[j], Index(Child(term_path, "matchExpressions"), j), errs);
    }
    for (size_t j = 0; j < term.match_fields.size(); ++j) {
      ValidateNodeFieldSelectorRequirement(term.match_fields[j], Index(Child(term_path, "matchFields"), j), errs);
    }
  }
}

// ---- device attributes ----

// At most 18 digits, as from Kubernetes 1.38 (semver numbers become int64 in
// CEL; 1.37 took more, and its allocator could not compare them).
bool IsNumericIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return s == "0" || s.front() != '0';
}

bool IsAlnumHyphen(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-')) return false;
  }
  return true;
}

// The semverRe of validation.go (semver.org 2.0.0, numbers of at most 18 digits).
bool IsSemver(std::string_view value) {
  std::string_view build;
  if (const size_t plus = value.find('+'); plus != std::string_view::npos) {
    build = value.substr(plus + 1);
    value = value.substr(0, plus);
    for (std::string_view id : Split(build, '.')) {
      if (!IsAlnumHyphen(id)) return false;
    }
  }
  if (const size_t dash = value.find('-'); dash != std::string_view::npos) {
    for (std::string_view id : Split(value.substr(dash + 1), '.')) {
      if (!IsAlnumHyphen(id)) return false;
      bool all_digits = true;
      for (char c : id) all_digits = all_digits && c >= '0' && c <= '9';
      if (all_digits && !IsNumericIdentifier(id)) return false;
    }
    value = value.substr(0, dash);
  }
  const std::vector<std::string_view> core = Split(value, '.');
  if (core.size() != 3) return false;
  for (std::string_view id : core) {
    if (!IsNumericIdentifier(id)) return false;
  }
  return true;
}

void ValidateAttributeStringValue(const std::string& value, const std::string& path, FieldErrors& errs) {
  if (value.size() > kDeviceAttributeMaxValueLength) errs.push_back(E::TooLong(path, kDeviceAttributeMaxValueLength));
}

void ValidateAttributeVersionValue(const std::string& value, const std::string& path, FieldErrors& errs) {
  if (!IsSemver(value)) {
    errs.push_back(E::Invalid(
        path, Q(value), "must be a string compatible with semver.org spec 2.0.0, with at most 18 digits in numbers"));
  }
  if (value.size() > kDeviceAttributeMaxValueLength) errs.push_back(E::TooLong(path, kDeviceAttributeMaxValueLength));
}

bool HasListValues(const DeviceAttribute& a) {
  return !a.bool_values.empty() || !a.int_values.empty() || !a.string_values.empty() || !a.version_values.empty();
}

void ValidateDeviceAttribute(const DeviceAttribute& a, const std::string& path, FieldErrors& errs) {
  int num_fields = 0;
  if (a.bool_value) ++num_fields;
  if (a.int_value) ++num_fields;
  if (a.string_value) {
    ++num_fields;
    ValidateAttributeStringValue(*a.string_value, Child(path, "string"), errs);
  }
  if (a.version_value) {
    ++num_fields;
    ValidateAttributeVersionValue(*a.version_value, Child(path, "version"), errs);
  }
  if (!a.bool_values.empty()) ++num_fields;
  if (!a.int_values.empty()) ++num_fields;
  if (!a.string_values.empty()) {
    ++num_fields;
    for (size_t i = 0; i < a.string_values.size(); ++i) {
      ValidateAttributeStringValue(a.string_values[i], Index(Child(path, "strings"), i), errs);
    }
  }
  if (!a.version_values.empty()) {
    ++num_fields;
    for (size_t i = 0; i < a.version_values.size(); ++i) {
      ValidateAttributeVersionValue(a.version_values[i], Index(Child(path, "versions"), i), errs);
    }
  }
  if (num_fields == 0) {
    errs.push_back(E::Invalid(path, Q(""), "exactly one value must be specified"));
  } else if (num_fields > 1) {
    errs.push_back(E::Invalid(path, AttributeText(a), "exactly one value must be specified"));
  }
}

// numEntriesDeviceAttribute: list items count one each, scalars one.
size_t NumAttributeValues(const Device& device) {
  size_t n = 0;
  for (const auto& [name, a] : device.attributes) {
    const size_t lists = a.bool_values.size() + a.int_values.size() + a.string_values.size() + a.version_values.size();
    n += lists == 0 ? 1 : lists;
  }
  return n;
}

// ---- capacity and request policies ----

const Quantity& MaxInt64Quantity() {
  static const Quantity q = Quantity::FromInt(std::numeric_limits<int64_t>::max());
  return q;
}

void ValidateRequestPolicyValidValues(const Quantity& default_value, const Quantity& capacity,
                                      const std::vector<Quantity>& valid_values, const std::string& path,
                                      FieldErrors& errs) {
  for (size_t i = 0; i + 1 < valid_values.size(); ++i) {
    if (valid_values[i] > valid_values[i + 1]) {
      errs.push_back(
          E::Invalid(Index(path, i + 1), Q(valid_values[i + 1]), "values must be sorted in ascending order"));
    }
  }
  bool found_default = false;
  if (valid_values.size() > kCapacityRequestPolicyDiscreteMaxOptions) {
    errs.push_back(E::TooMany(path, valid_values.size(), kCapacityRequestPolicyDiscreteMaxOptions));
  } else {
    for (size_t i = 0; i < valid_values.size(); ++i) {
      if (valid_values[i] > capacity) {
        errs.push_back(E::Invalid(Index(path, i), Q(valid_values[i]),
                                  "option is larger than capacity value: " + capacity.ToString()));
      }
      if (valid_values[i] == default_value) found_default = true;
    }
    // quantityKeyInt: without DRAFractionalCapacityRange, options are compared
    // by their integer Value(), rounded up.
    std::set<std::string> seen;
    for (size_t i = 0; i < valid_values.size(); ++i) {
      std::string key = std::to_string(valid_values[i].Value());
      if (!seen.insert(key).second) errs.push_back(E::Duplicate(Index(path, i), Q(key)));
    }
  }
  if (!found_default) {
    errs.push_back(E::Invalid(path, Q(default_value), "default value is not valid according to the requestPolicy"));
  }
}

void ValidateRequestPolicyRangeStep(const Quantity& value, const Quantity& min, const Quantity& step,
                                    const std::string& path, FieldErrors& errs) {
  const int64_t step_value = step.Value();
  if (step_value == 0) return;  // excluded by the caller
  if ((value.Value() - min.Value()) % step_value != 0) {
    errs.push_back(
        E::Invalid(path, Q(value),
                   "value is not a multiple of a given step (" + step.ToString() + ") from (" + min.ToString() + ")"));
  }
}

void ValidateRequestPolicyRange(const Quantity& default_value, const Quantity& capacity,
                                const CapacityRequestPolicyRange& range, const std::string& path, FieldErrors& errs) {
  const Quantity& min = range.min;
  if (min > capacity) {
    errs.push_back(E::Invalid(Child(path, "min"), Q(min), "min is larger than capacity value: " + capacity.ToString()));
  }
  if (default_value < min) {
    errs.push_back(E::Invalid(Child(path, "default"), Q(default_value), "default is less than min: " + min.ToString()));
  }
  if (range.max) {
    const Quantity& max = *range.max;
    if (min > max) errs.push_back(E::Invalid(Child(path, "max"), Q(min), "min is larger than max: " + max.ToString()));
    if (max > capacity) {
      errs.push_back(
          E::Invalid(Child(path, "max"), Q(max), "max is larger than capacity value: " + capacity.ToString()));
    }
    if (default_value > max) {
      errs.push_back(
          E::Invalid(Child(path, "default"), Q(default_value), "default is more than max: " + max.ToString()));
    }
  }
  if (!range.step) return;
  const Quantity& step = *range.step;
  if (step.Sign() <= 0) {
    errs.push_back(E::Invalid(Child(path, "step"), Q(step), "must be greater than zero"));
    return;
  }
  const Quantity added = min + step;
  if (added > capacity) {
    errs.push_back(
        E::Invalid(Child(path, "step"), Q(step),
                   "one step " + added.ToString() + " is larger than capacity value: " + capacity.ToString()));
  }
  // validateInt64Range: the integer arithmetic below needs [0, MaxInt64].
  bool unsafe = false;
  const std::pair<const char*, const Quantity*> bounds[] = {
      {"default", &default_value}, {"min", &min}, {"max", range.max ? &*range.max : nullptr}, {"step", &step}};
  for (const auto& [name, q] : bounds) {
    if (q == nullptr) continue;
    if (q->Sign() < 0) {
      errs.push_back(E::Invalid(Child(path, name), Q(*q), "must be greater than or equal to 0"));
      unsafe = true;
    } else if (*q > MaxInt64Quantity()) {
      errs.push_back(E::Invalid(Child(path, name), Q(*q), "must not be larger than 9223372036854775807"));
      unsafe = true;
    }
  }
  if (unsafe) return;
  ValidateRequestPolicyRangeStep(default_value, min, step, Child(path, "step"), errs);
  if (range.max) ValidateRequestPolicyRangeStep(*range.max, min, step, Child(path, "step"), errs);
}

void ValidateRequestPolicy(const Quantity& capacity, const CapacityRequestPolicy& policy, const std::string& path,
                           FieldErrors& errs) {
  if (!policy.valid_values.empty() && policy.valid_range) {
    errs.push_back(E::Forbidden(path,
                                "exactly one policy can be specified, cannot specify \"validValues\" and "
                                "\"validRange\" at the same time"));
  } else if (!policy.valid_values.empty()) {
    if (!policy.default_value) {
      errs.push_back(E::Required(Child(path, "default"), "required when validValues is defined"));
    } else {
      ValidateRequestPolicyValidValues(*policy.default_value, capacity, policy.valid_values, Child(path, "validValues"),
                                       errs);
    }
  } else if (policy.valid_range) {
    if (!policy.default_value) {
      errs.push_back(E::Required(Child(path, "default"), "required when validRange is defined"));
    } else {
      ValidateRequestPolicyRange(*policy.default_value, capacity, *policy.valid_range, Child(path, "validRange"), errs);
    }
  }
}

// ---- counters ----

void ValidateCounterMap(const std::map<std::string, Counter>& counters, size_t max, const std::string& path,
                        FieldErrors& errs) {
  if (counters.size() > max) {
    errs.push_back(E::TooMany(path, counters.size(), max));
    return;
  }
  for (const auto& [name, counter] : counters) ValidateDns1123Label(name, path, errs);
}

void ValidateCounterSet(const CounterSet& set, const std::string& path, FieldErrors& errs) {
  if (set.name.empty()) {
    errs.push_back(E::Required(Child(path, "name"), ""));
  } else {
    ValidateDns1123Label(set.name, Child(path, "name"), errs);
  }
  if (set.counters.empty()) {
    errs.push_back(E::Required(Child(path, "counters"), ""));
  } else {
    ValidateCounterMap(set.counters, kResourceSliceMaxCountersPerCounterSet, Child(path, "counters"), errs);
  }
}

void ValidateDeviceCounterConsumption(const DeviceCounterConsumption& c, const std::string& path, FieldErrors& errs,
                                      FieldErrors& declarative) {
  if (c.counter_set.empty()) {
    errs.push_back(E::Required(Child(path, "counterSet"), ""));
  } else {
    ValidateDns1123Label(c.counter_set, Child(path, "counterSet"), errs);
  }
  if (c.counters.empty()) {
    errs.push_back(E::Required(Child(path, "counters"), ""));
  } else {
    ValidateCounterMap(c.counters, kResourceSliceMaxCountersPerDeviceCounterConsumption, Child(path, "counters"), errs);
  }
  // Declarative only (+k8s:maxItems=2, +k8s:listType=set).
  const std::string groups_path = Child(path, "compatibilityGroups");
  if (c.compatibility_groups.size() > kDeviceCounterConsumptionMaxCompatibilityGroups) {
    declarative.push_back(
        E::TooMany(groups_path, c.compatibility_groups.size(), kDeviceCounterConsumptionMaxCompatibilityGroups));
    return;
  }
  for (size_t i = 0; i < c.compatibility_groups.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (c.compatibility_groups[j] == c.compatibility_groups[i]) {
        declarative.push_back(E::Duplicate(Index(groups_path, i), Q(c.compatibility_groups[i])));
        break;
      }
    }
  }
}

// ---- taints and binding conditions ----

const std::vector<std::string>& DeviceTaintEffects() {
  static const std::vector<std::string> effects = {"NoExecute", "NoSchedule", "None"};  // sorted, as sets.List
  return effects;
}

void ValidateDeviceTaint(const DeviceTaint& taint, const std::string& path, FieldErrors& errs) {
  ValidateLabelName(taint.key, Child(path, "key"), errs);
  if (!taint.value.empty()) ValidateLabelValue(taint.value, Child(path, "value"), errs);
  if (taint.effect.empty()) {
    errs.push_back(E::Required(Child(path, "effect"), ""));
  } else {
    const auto& effects = DeviceTaintEffects();
    bool known = false;
    for (const std::string& e : effects) known = known || e == taint.effect;
    if (!known) errs.push_back(E::NotSupported(Child(path, "effect"), Q(taint.effect), effects));
  }
}

void ValidateDeviceBindingParameters(const std::vector<std::string>& conditions,
                                     const std::vector<std::string>& failure_conditions, const std::string& path,
                                     FieldErrors& errs) {
  const std::string conditions_path = Child(path, "bindingConditions");
  const std::string failure_path = Child(path, "bindingFailureConditions");
  if (conditions.size() > kBindingConditionsMaxSize) {
    errs.push_back(E::TooMany(conditions_path, conditions.size(), kBindingConditionsMaxSize));
  } else {
    for (size_t i = 0; i < conditions.size(); ++i) ValidateLabelName(conditions[i], Index(conditions_path, i), errs);
  }
  if (failure_conditions.size() > kBindingFailureConditionsMaxSize) {
    errs.push_back(E::TooMany(failure_path, failure_conditions.size(), kBindingFailureConditionsMaxSize));
  } else {
    for (size_t i = 0; i < failure_conditions.size(); ++i) {
      ValidateLabelName(failure_conditions[i], Index(failure_path, i), errs);
    }
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < conditions.size(); ++i) {
    if (!seen.insert(conditions[i]).second) errs.push_back(E::Duplicate(Index(conditions_path, i), Q(conditions[i])));
  }
  const std::set<std::string> all_conditions(conditions.begin(), conditions.end());
  std::set<std::string> seen_failure;
  for (size_t i = 0; i < failure_conditions.size(); ++i) {
    const std::string& c = failure_conditions[i];
    if (!seen_failure.insert(c).second) errs.push_back(E::Duplicate(Index(failure_path, i), Q(c)));
    if (all_conditions.count(c) != 0) {
      errs.push_back(
          E::Invalid(Index(failure_path, i), Q(c), "bindingFailureConditions must not overlap with bindingConditions"));
    }
  }
  if (conditions.empty() && !failure_conditions.empty()) {
    errs.push_back(E::Invalid(conditions_path, GoStringSlice(conditions),
                              "bindingConditions are required to use bindingFailureConditions"));
  }
  if (failure_conditions.empty() && !conditions.empty()) {
    errs.push_back(E::Invalid(failure_path, GoStringSlice(failure_conditions),
                              "bindingFailureConditions are required to use bindingConditions"));
  }
}

// ---- node allocatable resources (KEP-5517) ----

// corehelper.IsNodeAllocatableResourceName.
bool IsNodeAllocatableResourceName(std::string_view name) {
  return name == "cpu" || name == "memory" || name == "ephemeral-storage" || name.rfind("hugepages-", 0) == 0;
}

void ValidateNodeAllocatableMapping(const NodeAllocatableMapping& m,
                                    const std::map<std::string, DeviceCapacity>& capacity, const std::string& path,
                                    FieldErrors& errs, FieldErrors& declarative) {
  if (m.capacity_key) {
    if (m.capacity_key->empty()) {
      errs.push_back(E::Invalid(Child(path, "capacityKey"), Q(""), "capacityKey must not be an empty string"));
    } else if (capacity.count(*m.capacity_key) == 0) {
      errs.push_back(E::NotFound(Child(path, "capacityKey"), Q(*m.capacity_key)));
    }
    if (!m.capacity_multiplier) {
      errs.push_back(
          E::Required(Child(path, "capacityMultiplier"), "capacityMultiplier is required when capacityKey is set"));
    } else if (m.capacity_multiplier->Sign() <= 0) {
      errs.push_back(E::Invalid(Child(path, "capacityMultiplier"), Q(*m.capacity_multiplier), "must be positive"));
    }
  }
  if (m.device_multiplier && m.device_multiplier->Sign() <= 0) {
    errs.push_back(E::Invalid(Child(path, "deviceMultiplier"), Q(*m.device_multiplier), "must be positive"));
  }
  if (m.capacity_multiplier && !m.capacity_key) {
    errs.push_back(E::Required(Child(path, "capacityKey"), "capacityKey is required when capacityMultiplier is set"));
  }
  // Declarative only: +k8s:unionMember on capacityKey and deviceMultiplier.
  if (m.capacity_key && m.device_multiplier) {
    declarative.push_back(E::Invalid(path, Q("{capacityKey, deviceMultiplier}"),
                                     "must specify exactly one of: `capacityKey`, `deviceMultiplier`"));
  } else if (!m.capacity_key && !m.device_multiplier) {
    declarative.push_back(E::Invalid(path, Q(""), "must specify one of: `capacityKey`, `deviceMultiplier`"));
  }
}

void ValidateNodeAllocatableOverhead(const NodeAllocatableOverhead& o, const std::string& path, FieldErrors& errs) {
  if (!o.per_pod && !o.per_container) {
    errs.push_back(E::Invalid(path, Q(""), "at least one of perPod or perContainer must be set"));
    return;
  }
  if (o.per_pod && o.per_pod->Sign() < 0) {
    errs.push_back(E::Invalid(Child(path, "perPod"), Q(*o.per_pod), "must be non-negative"));
  }
  if (o.per_container && o.per_container->Sign() < 0) {
    errs.push_back(E::Invalid(Child(path, "perContainer"), Q(*o.per_container), "must be non-negative"));
  }
}

void ValidateNodeAllocatableResources(const Device& device, const std::string& path, FieldErrors& errs,
                                      FieldErrors& declarative) {
  for (const auto& [name, resource] : device.node_allocatable_resources) {
    const std::string key_path = Key(path, name);
    if (!IsNodeAllocatableResourceName(name)) {
      errs.push_back(E::Invalid(key_path, Q(name), "must be a node allocatable resource name"));
    }
    if (!resource.mapping && !resource.overhead) {
      errs.push_back(E::Required(key_path, "at least one of mapping or overhead must be set"));
    }
    if (resource.mapping) {
      ValidateNodeAllocatableMapping(*resource.mapping, device.capacity, Child(key_path, "mapping"), errs, declarative);
    }
    if (resource.overhead) ValidateNodeAllocatableOverhead(*resource.overhead, Child(key_path, "overhead"), errs);
  }
}

// ---- devices ----

void ValidateDevice(const Device& device, const std::string& path, bool per_device_node_selection, FieldErrors& errs,
                    FieldErrors& declarative) {
  ValidateDns1123Label(device.name, Child(path, "name"), errs);

  const size_t attributes_and_capacities = device.attributes.size() + device.capacity.size();
  if (attributes_and_capacities > kResourceSliceMaxAttributesAndCapacitiesPerDevice) {
    errs.push_back(E::Invalid(path, std::to_string(attributes_and_capacities),
                              "the total number of attributes and capacities must not exceed " +
                                  std::to_string(kResourceSliceMaxAttributesAndCapacitiesPerDevice)));
  }
  const size_t values = NumAttributeValues(device);
  if (values > kResourceSliceMaxAttributeValuesPerDevice) {
    errs.push_back(E::Invalid(path, std::to_string(values),
                              "the total number of attribute values must not exceed " +
                                  std::to_string(kResourceSliceMaxAttributeValuesPerDevice)));
  }

  constexpr size_t kMaxKeyLength = kDeviceMaxDomainLength + 1 + kDeviceMaxIdLength;
  const std::string attributes_path = Child(path, "attributes");
  for (const auto& [name, attribute] : device.attributes) {
    ValidateQualifiedName(name, attributes_path, errs);
    ValidateDeviceAttribute(attribute, Key(attributes_path, TruncateIfTooLong(name, kMaxKeyLength)), errs);
  }
  const bool allow_multiple = device.allow_multiple_allocations.value_or(false);
  const std::string capacity_path = Child(path, "capacity");
  for (const auto& [name, capacity] : device.capacity) {
    ValidateQualifiedName(name, capacity_path, errs);
    if (!capacity.request_policy) continue;
    const std::string policy_path = Child(Key(capacity_path, TruncateIfTooLong(name, kMaxKeyLength)), "requestPolicy");
    if (allow_multiple) {
      ValidateRequestPolicy(capacity.value, *capacity.request_policy, policy_path, errs);
    } else {
      errs.push_back(E::Forbidden(policy_path, "allowMultipleAllocations must be true"));
    }
  }

  const std::string taints_path = Child(path, "taints");
  if (device.taints.size() > kDeviceTaintsMaxLength) {
    errs.push_back(E::TooMany(taints_path, device.taints.size(), kDeviceTaintsMaxLength));
  } else {
    for (size_t i = 0; i < device.taints.size(); ++i) {
      ValidateDeviceTaint(device.taints[i], Index(taints_path, i), errs);
    }
  }

  const std::string consumes_path = Child(path, "consumesCounters");
  if (device.consumes_counters.size() > kResourceSliceMaxDeviceCounterConsumptionsPerDevice) {
    errs.push_back(E::TooMany(consumes_path, device.consumes_counters.size(),
                              kResourceSliceMaxDeviceCounterConsumptionsPerDevice));
  } else {
    for (size_t i = 0; i < device.consumes_counters.size(); ++i) {
      ValidateDeviceCounterConsumption(device.consumes_counters[i], Index(consumes_path, i), errs, declarative);
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < device.consumes_counters.size(); ++i) {
      const std::string& set = device.consumes_counters[i].counter_set;
      if (!seen.insert(set).second) errs.push_back(E::Duplicate(Index(consumes_path, i), Q(set)));
    }
  }

  if (per_device_node_selection) {
    std::vector<std::string> set_fields;
    if (device.node_name) {
      if (!device.node_name->empty()) {
        set_fields.push_back("`nodeName`");
        ValidateNodeName(*device.node_name, Child(path, "nodeName"), errs);
      } else {
        errs.push_back(E::Invalid(Child(path, "nodeName"), Q(""), "must not be empty"));
      }
    }
    if (device.node_selector) {
      set_fields.push_back("`nodeSelector`");
      ValidateNodeSelector(*device.node_selector, Child(path, "nodeSelector"), errs);
      // As the slice's own (Kubernetes 1.38 checks it here too): the
      // allocator can only merge single-term selectors.
      if (device.node_selector->node_selector_terms.size() != 1) {
        errs.push_back(E::Invalid(Child(path, "nodeSelector.nodeSelectorTerms"),
                                  GoNodeSelectorTerms(device.node_selector->node_selector_terms),
                                  "must have exactly one node selector term"));
      }
    }
    if (device.all_nodes) {
      if (*device.all_nodes) {
        set_fields.push_back("`allNodes`");
      } else {
        errs.push_back(E::Invalid(Child(path, "allNodes"), Bool(false), "must be either unset or set to true"));
      }
    }
    constexpr const char* kRule =
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set "
        "to true in the ResourceSlice spec";
    if (set_fields.empty()) {
      errs.push_back(E::Required(path, kRule));
    } else if (set_fields.size() > 1) {
      std::string fields;
      for (const std::string& f : set_fields) fields += (fields.empty() ? "" : ", ") + f;
      errs.push_back(E::Invalid(path, Q("{" + fields + "}"), kRule));
    }
  } else if (device.node_name || device.node_selector || device.all_nodes) {
    errs.push_back(E::Invalid(path, "null",
                              "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` "
                              "is set to true in the ResourceSlice spec"));
  }

  ValidateDeviceBindingParameters(device.binding_conditions, device.binding_failure_conditions, path, errs);
  ValidateNodeAllocatableResources(device, Child(path, "nodeAllocatableResources"), errs, declarative);
}

// ---- the slice ----

void ValidateObjectMeta(const ObjectMeta& meta, FieldErrors& errs) {
  const std::string path = "metadata";
  if (!meta.generate_name.empty()) {
    // NameIsDNSSubdomain(prefix=true) masks a trailing dash (maskTrailingDash
    // drops two characters and appends "a").
    std::string masked = meta.generate_name;
    if (masked.size() > 1 && masked.back() == '-') masked = masked.substr(0, masked.size() - 2) + "a";
    for (std::string& msg : IsDns1123Subdomain(masked)) {
      errs.push_back(E::Invalid(Child(path, "generateName"), Q(meta.generate_name), std::move(msg)));
    }
  }
  if (meta.name.empty()) {
    // The server generates the name from generateName before validating.
    if (meta.generate_name.empty()) {
      errs.push_back(E::Required(Child(path, "name"), "name or generateName is required"));
    }
  } else {
    ValidateDns1123Subdomain(meta.name, Child(path, "name"), errs);
  }
  if (!meta.namespace_.empty()) errs.push_back(E::Forbidden(Child(path, "namespace"), "not allowed on this type"));
  if (meta.generation < 0) {
    errs.push_back(
        E::Invalid(Child(path, "generation"), std::to_string(meta.generation), "must be greater than or equal to 0"));
  }
  const std::string labels_path = Child(path, "labels");
  for (const auto& [key, value] : meta.labels) {
    ValidateLabelName(key, labels_path, errs);
    ValidateLabelValue(value, labels_path, errs);
  }
  const std::string annotations_path = Child(path, "annotations");
  size_t annotations_size = 0;
  for (const auto& [key, value] : meta.annotations) {
    for (std::string& msg : IsQualifiedName(ToLowerAscii(key))) {
      errs.push_back(E::Invalid(annotations_path, Q(key), std::move(msg)));
    }
    annotations_size += key.size() + value.size();
  }
  constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;
  if (annotations_size > kTotalAnnotationSizeLimit) {
    errs.push_back(E::TooLong(annotations_path, kTotalAnnotationSizeLimit));
  }
}

bool UsesAdvancedFeatures(const ResourceSliceSpec& spec) {
  for (const Device& device : spec.devices) {
    if (!device.taints.empty() || !device.consumes_counters.empty()) return true;
    for (const auto& [name, attribute] : device.attributes) {
      if (HasListValues(attribute)) return true;
    }
  }
  return false;
}

void ValidatePartitionTypeAttribute(const ResourceSliceSpec& spec, FieldErrors& errs) {
  const std::string& name = *spec.partition_type_attribute;
  bool consumes_counters = false;
  for (const Device& device : spec.devices) consumes_counters = consumes_counters || !device.consumes_counters.empty();
  if (!consumes_counters) {
    errs.push_back(E::Invalid("spec.partitionTypeAttribute", Q(name),
                              "may only be set on a slice which declares devices that consume counters"));
    return;
  }
  FieldErrors format_errors;
  ValidateQualifiedName(name, "spec.partitionTypeAttribute", format_errors);
  if (!format_errors.empty() || name.find('/') == std::string::npos) return;  // reported declaratively
  const std::string driver_prefix = spec.driver + "/";
  const std::string bare_name = name.rfind(driver_prefix, 0) == 0 ? name.substr(driver_prefix.size()) : name;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const Device& device = spec.devices[i];
    if (device.consumes_counters.empty()) continue;
    const std::string attribute_path = Key(Child(Index("spec.devices", i), "attributes"), name);
    auto it = device.attributes.find(name);
    if (it == device.attributes.end()) it = device.attributes.find(bare_name);
    if (it == device.attributes.end()) {
      errs.push_back(E::Required(attribute_path,
                                 "device consumes counters and `partitionTypeAttribute` names this attribute, so it "
                                 "must be set"));
    } else if (!it->second.string_value) {
      errs.push_back(E::Invalid(attribute_path, AttributeText(it->second),
                                "must be a string value because `partitionTypeAttribute` names this attribute"));
    }
  }
}

std::string GoSkipNodeOperations(const std::vector<std::string>& ops) {
  std::string out = "[]resource.SkipNodeOperation{";
  for (size_t i = 0; i < ops.size(); ++i) out += (i ? ", " : "") + Q(ops[i]);
  return out + "}";
}

// Exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection.
void ValidateSliceNodeSelection(const ResourceSliceSpec& spec, FieldErrors& errs) {
  const std::string path = "spec";
  std::vector<std::string> set_fields;
  if (spec.node_name) {
    if (!spec.node_name->empty()) {
      set_fields.push_back("`nodeName`");
      ValidateNodeName(*spec.node_name, "spec.nodeName", errs);
    } else {
      errs.push_back(E::Invalid("spec.nodeName", Q(""), "must be either unset or set to a non-empty string"));
    }
  }
  if (spec.node_selector) {
    set_fields.push_back("`nodeSelector`");
    ValidateNodeSelector(*spec.node_selector, "spec.nodeSelector", errs);
    if (spec.node_selector->node_selector_terms.size() != 1) {
      errs.push_back(E::Invalid("spec.nodeSelector.nodeSelectorTerms",
                                GoNodeSelectorTerms(spec.node_selector->node_selector_terms),
                                "must have exactly one node selector term"));
    }
  }
  if (spec.all_nodes) {
    if (*spec.all_nodes) {
      set_fields.push_back("`allNodes`");
    } else {
      errs.push_back(E::Invalid("spec.allNodes", Bool(false), "must be either unset or set to true"));
    }
  }
  if (spec.per_device_node_selection) {
    if (*spec.per_device_node_selection) {
      set_fields.push_back("`perDeviceNodeSelection`");
    } else {
      errs.push_back(E::Invalid("spec.perDeviceNodeSelection", Bool(false), "must be either unset or set to true"));
    }
  }
  constexpr const char* kNodeSelectionRule =
      "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
  if (set_fields.empty()) {
    errs.push_back(E::Required(path, kNodeSelectionRule));
  } else if (set_fields.size() > 1) {
    std::string fields;
    for (const std::string& f : set_fields) fields += (fields.empty() ? "" : ", ") + f;
    errs.push_back(
        E::Invalid(path, Q("{" + fields + "}"), std::string(kNodeSelectionRule) + ", but multiple fields are set"));
  }
}

// spec.devices and spec.sharedCounters: each valid, names unique, not too many.
void ValidateSliceDevicesAndCounters(const ResourceSliceSpec& spec, FieldErrors& errs, FieldErrors& declarative) {
  const size_t max_devices =
      UsesAdvancedFeatures(spec) ? kResourceSliceMaxDevicesWithAdvancedFeatures : kResourceSliceMaxDevices;
  if (spec.devices.size() > max_devices) {
    errs.push_back(E::TooMany("spec.devices", spec.devices.size(), max_devices));
  } else {
    const bool per_device = spec.per_device_node_selection.value_or(false);
    for (size_t i = 0; i < spec.devices.size(); ++i) {
      ValidateDevice(spec.devices[i], Index("spec.devices", i), per_device, errs, declarative);
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < spec.devices.size(); ++i) {
      if (!seen.insert(spec.devices[i].name).second) {
        errs.push_back(E::Duplicate(Index("spec.devices", i), Q(spec.devices[i].name)));
      }
    }
  }

  if (spec.shared_counters.size() > kResourceSliceMaxCounterSets) {
    errs.push_back(E::TooMany("spec.sharedCounters", spec.shared_counters.size(), kResourceSliceMaxCounterSets));
  } else {
    for (size_t i = 0; i < spec.shared_counters.size(); ++i) {
      ValidateCounterSet(spec.shared_counters[i], Index("spec.sharedCounters", i), errs);
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < spec.shared_counters.size(); ++i) {
      if (!seen.insert(spec.shared_counters[i].name).second) {
        errs.push_back(E::Duplicate(Index("spec.sharedCounters", i), Q(spec.shared_counters[i].name)));
      }
    }
  }
}

// spec.skipNodeOperations: the handwritten rule, then the declarative ones
// (+k8s:listType=set, +k8s:enum).
void ValidateSkipNodeOperations(const std::vector<std::string>& ops, FieldErrors& errs, FieldErrors& declarative) {
  auto has = [&ops](std::string_view op) {
    for (const std::string& o : ops) {
      if (o == op) return true;
    }
    return false;
  };
  if (has("NodePrepareResources") && !has("NodeUnprepareResources") && !has("*")) {
    errs.push_back(E::Invalid("spec.skipNodeOperations", GoSkipNodeOperations(ops),
                              "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"));
  }
  static const std::vector<std::string> kSkipNodeOperations = {"*", "NodePrepareResources", "NodeUnprepareResources"};
  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (ops[j] == ops[i]) {
        declarative.push_back(E::Duplicate(Index("spec.skipNodeOperations", i), Q(ops[i])));
        break;
      }
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    bool known = false;
    for (const std::string& op : kSkipNodeOperations) known = known || op == ops[i];
    if (!known) {
      declarative.push_back(E::NotSupported(Index("spec.skipNodeOperations", i), Q(ops[i]), kSkipNodeOperations));
    }
  }
}

void ValidateResourceSliceSpec(const ResourceSliceSpec& spec, FieldErrors& errs, FieldErrors& declarative) {
  const std::string path = "spec";
  ValidateDriverName(spec.driver, Child(path, "driver"), errs);
  ValidatePoolName(spec.pool.name, Child(path, "pool.name"), errs);
  if (spec.pool.resource_slice_count <= 0) {
    errs.push_back(E::Invalid("spec.pool.resourceSliceCount", std::to_string(spec.pool.resource_slice_count),
                              "must be greater than zero"));
  }
  if (spec.pool.generation < 0) {
    errs.push_back(E::Invalid("spec.pool.generation", std::to_string(spec.pool.generation),
                              "must be greater than or equal to zero"));
  }
  ValidateSliceNodeSelection(spec, errs);
  if (!spec.shared_counters.empty() && !spec.devices.empty()) {
    errs.push_back(E::Invalid(path, Q(""), "only one of `sharedCounters` or `devices` is allowed"));
  }
  ValidateSliceDevicesAndCounters(spec, errs, declarative);
  if (spec.partition_type_attribute) {
    ValidatePartitionTypeAttribute(spec, errs);
    // Declarative only (+k8s:format).
    ValidateResourceFullyQualifiedNameFormat(*spec.partition_type_attribute, "spec.partitionTypeAttribute",
                                             declarative);
  }
  ValidateSkipNodeOperations(spec.skip_node_operations, errs, declarative);
}

// ---- AllocatedDeviceStatus ----

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// github.com/google/uuid Validate.
std::optional<std::string> UuidError(std::string_view s) {
  switch (s.size()) {
    case 36:
      break;
    case 36 + 9: {
      if (ToLowerAscii(s.substr(0, 9)) != "urn:uuid:") return "invalid urn prefix: " + Q(s.substr(0, 9));
      s = s.substr(9);
      break;
    }
    case 36 + 2:
      if (s.front() != '{' || s.back() != '}') return std::string("invalid bracketed UUID format");
      s = s.substr(1, 36);
      break;
    case 32:
      for (char c : s) {
        if (!IsHex(c)) return std::string("invalid UUID format");
      }
      return std::nullopt;
    default:
      return "invalid UUID length: " + std::to_string(s.size());
  }
  if (s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') return std::string("invalid UUID format");
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) continue;
    if (!IsHex(s[i])) return std::string("invalid UUID format");
  }
  return std::nullopt;
}

// validateUID.
void ValidateUid(std::string_view uid, const std::string& path, FieldErrors& errs) {
  if (std::optional<std::string> error = UuidError(uid)) {
    errs.push_back(E::Invalid(path, Q(uid), "error validating uid: " + *error));
  } else if (uid.size() != 36 || ToLowerAscii(uid) != uid) {
    errs.push_back(E::Invalid(path, Q(uid),
                              "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with "
                              "lowercase hexadecimal characters"));
  }
}

// [A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?
bool IsConditionReason(std::string_view reason) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto alnum_ = [&alpha](char c) { return alpha(c) || (c >= '0' && c <= '9') || c == '_'; };
  if (reason.empty() || !alpha(reason.front())) return false;
  if (reason.size() > 1 && !alnum_(reason.back())) return false;
  for (char c : reason) {
    if (!alnum_(c) && c != ',' && c != ':') return false;
  }
  return true;
}

// metav1validation.ValidateCondition.
void ValidateCondition(const Condition& c, const std::string& path, FieldErrors& errs) {
  ValidateLabelName(c.type, Child(path, "type"), errs);
  if (c.status != "True" && c.status != "False" && c.status != "Unknown") {
    errs.push_back(E::NotSupported(Child(path, "status"), Q(c.status), {"False", "True", "Unknown"}));
  }
  if (c.observed_generation && *c.observed_generation < 0) {
    errs.push_back(E::Invalid(Child(path, "observedGeneration"), std::to_string(*c.observed_generation),
                              "must be greater than or equal to zero"));
  }
  if (c.last_transition_time.empty()) errs.push_back(E::Required(Child(path, "lastTransitionTime"), "must be set"));
  if (c.reason.empty()) {
    errs.push_back(E::Required(Child(path, "reason"), "must be set"));
  } else {
    if (!IsConditionReason(c.reason)) {
      errs.push_back(E::Invalid(
          Child(path, "reason"), Q(c.reason),
          "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
          "characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or "
          "'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
          "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"));
    }
    if (c.reason.size() > 1024) errs.push_back(E::TooLong(Child(path, "reason"), 1024));
  }
  if (c.message.size() > 32 * 1024) errs.push_back(E::TooLong(Child(path, "message"), 32 * 1024));
}

// Go's net.IP, as 16 bytes (IPv4 as ::ffff:a.b.c.d).
using Ip = std::array<uint8_t, 16>;

bool ParseDecimal(std::string_view s, size_t& pos, uint32_t& out) {
  const size_t start = pos;
  out = 0;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    out = out * 10 + static_cast<uint32_t>(s[pos] - '0');
    if (out > 0xFFFFFF) return false;  // dtoi's "big"
    ++pos;
  }
  return pos > start;
}

// netutils.ParseIPSloppy for IPv4: leading zeros are allowed.
bool ParseIpv4Sloppy(std::string_view s, Ip& ip) {
  ip = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0};
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (pos >= s.size() || s[pos] != '.') return false;
      ++pos;
    }
    uint32_t n = 0;
    if (!ParseDecimal(s, pos, n) || n > 0xFF) return false;
    ip[12 + i] = static_cast<uint8_t>(n);
  }
  return pos == s.size();
}

bool ParseIpSloppy(std::string_view s, Ip& ip, bool& is_v4_syntax) {
  for (char c : s) {
    if (c == '.') {
      is_v4_syntax = true;
      return ParseIpv4Sloppy(s, ip);
    }
    if (c == ':') {
      is_v4_syntax = false;
      return inet_pton(AF_INET6, std::string(s).c_str(), ip.data()) == 1;
    }
  }
  return false;
}

bool IsV4(const Ip& ip) {
  for (int i = 0; i < 10; ++i) {
    if (ip[i] != 0) return false;
  }
  return ip[10] == 0xff && ip[11] == 0xff;
}

// net.IP.String().
std::string IpString(const Ip& ip) {
  if (IsV4(ip)) {
    return std::to_string(ip[12]) + "." + std::to_string(ip[13]) + "." + std::to_string(ip[14]) + "." +
           std::to_string(ip[15]);
  }
  // Longest run of zero groups, as Go's IP.String() finds it.
  int e0 = -1, e1 = -1;
  for (int i = 0; i < 16; i += 2) {
    int j = i;
    while (j < 16 && ip[j] == 0 && ip[j + 1] == 0) j += 2;
    if (j > i && j - i > e1 - e0) {
      e0 = i;
      e1 = j;
      i = j;
    }
  }
  if (e1 - e0 <= 2) e0 = e1 = -1;  // "::" never shortens a single group
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; i += 2) {
    if (i == e0) {
      out += "::";
      i = e1;
      if (i >= 16) break;
    } else if (i > 0) {
      out += ':';
    }
    const unsigned group = (static_cast<unsigned>(ip[i]) << 8) | ip[i + 1];
    bool leading = true;
    for (int shift = 12; shift >= 0; shift -= 4) {
      const unsigned digit = (group >> shift) & 0xf;
      if (leading && digit == 0 && shift > 0) continue;
      leading = false;
      out += kHex[digit];
    }
  }
  return out;
}

// validation.IsValidInterfaceAddress: "ifaddr"-style CIDR in canonical form.
void ValidateInterfaceAddress(const std::string& value, const std::string& path, FieldErrors& errs) {
  const size_t slash = value.find('/');
  Ip ip{};
  bool v4_syntax = false;
  uint32_t prefix = 0;
  size_t pos = 0;
  const std::string_view text = value;
  const std::string_view mask = slash == std::string::npos ? std::string_view() : text.substr(slash + 1);
  const bool ok = slash != std::string::npos && ParseIpSloppy(text.substr(0, slash), ip, v4_syntax) &&
                  ParseDecimal(mask, pos, prefix) && pos == mask.size() && prefix <= (v4_syntax ? 32u : 128u);
  if (!ok) {
    errs.push_back(E::Invalid(path, Q(value), "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"));
    return;
  }
  if (!v4_syntax && IsV4(ip) && prefix > 32) prefix -= 96;  // "::ffff:192.168.0.1/120" -> "192.168.0.1/24"
  const std::string canonical = IpString(ip) + "/" + std::to_string(prefix);
  if (value != canonical) {
    errs.push_back(E::Invalid(path, Q(value), "must be in canonical form (" + Q(canonical) + ")"));
  }
}

void ValidateNetworkDeviceData(const NetworkDeviceData& data, const std::string& path, FieldErrors& errs) {
  if (data.interface_name.size() > kNetworkDeviceDataInterfaceNameMaxLength) {
    errs.push_back(E::TooLong(Child(path, "interfaceName"), kNetworkDeviceDataInterfaceNameMaxLength));
  }
  if (data.hardware_address.size() > kNetworkDeviceDataHardwareAddressMaxLength) {
    errs.push_back(E::TooLong(Child(path, "hardwareAddress"), kNetworkDeviceDataHardwareAddressMaxLength));
  }
  const std::string ips_path = Child(path, "ips");
  if (data.ips.size() > kNetworkDeviceDataMaxIps) {
    errs.push_back(E::TooMany(ips_path, data.ips.size(), kNetworkDeviceDataMaxIps));
    return;
  }
  for (size_t i = 0; i < data.ips.size(); ++i) ValidateInterfaceAddress(data.ips[i], Index(ips_path, i), errs);
  std::set<std::string> seen;
  for (size_t i = 0; i < data.ips.size(); ++i) {
    if (!seen.insert(data.ips[i]).second) errs.push_back(E::Duplicate(Index(ips_path, i), Q(data.ips[i])));
  }
}

}  // namespace

FieldErrors ValidateResourceSlice(const ResourceSlice& slice) {
  FieldErrors errs;
  FieldErrors declarative;  // reported after the hand-written rules, as the server merges them
  ValidateObjectMeta(slice.metadata, errs);
  ValidateResourceSliceSpec(slice.spec, errs, declarative);
  errs.insert(errs.end(), std::make_move_iterator(declarative.begin()), std::make_move_iterator(declarative.end()));
  return errs;
}

FieldErrors ValidateAllocatedDeviceStatus(const AllocatedDeviceStatus& status, const std::string& path_prefix) {
  FieldErrors errs;
  const std::string& path = path_prefix;
  ValidateDriverName(status.driver, Child(path, "driver"), errs);
  ValidatePoolName(status.pool, Child(path, "pool"), errs);
  ValidateDns1123Label(status.device, Child(path, "device"), errs);
  if (status.share_id) ValidateUid(*status.share_id, Child(path, "shareID"), errs);

  const std::string conditions_path = Child(path, "conditions");
  if (status.conditions.size() > kAllocatedDeviceStatusMaxConditions) {
    errs.push_back(E::TooMany(conditions_path, status.conditions.size(), kAllocatedDeviceStatusMaxConditions));
  }
  std::set<std::string> types;
  for (size_t i = 0; i < status.conditions.size(); ++i) {
    const Condition& c = status.conditions[i];
    if (!types.insert(c.type).second) errs.push_back(E::Duplicate(Child(Index(conditions_path, i), "type"), Q(c.type)));
    ValidateCondition(c, Index(conditions_path, i), errs);
  }

  if (status.data && !status.data->is_null()) {
    const std::string data_path = Child(path, "data");
    // The size of the JSON text this library sends (compact, as its codec writes it).
    const size_t size = status.data->dump().size();
    if (size > kAllocatedDeviceStatusDataMaxLength) {
      errs.push_back(E::TooLong(data_path, kAllocatedDeviceStatusDataMaxLength));
    } else if (!status.data->is_object()) {
      errs.push_back(E::Invalid(data_path, Q("<value omitted>"), "must be a valid JSON object"));
    }
  }
  if (status.network_data) ValidateNetworkDeviceData(*status.network_data, Child(path, "networkData"), errs);
  return errs;
}

FieldErrors ValidateDriverName(std::string_view name, const std::string& field) {
  FieldErrors errs;
  if (name.empty()) {
    errs.push_back(E::Required(field, ""));
    return errs;
  }
  if (name.size() > kDriverNameMaxLength) errs.push_back(E::TooLong(field, kDriverNameMaxLength));
  for (std::string& msg : IsDns1123Subdomain(name)) errs.push_back(E::Invalid(field, Q(name), std::move(msg)));
  return errs;
}

}  // namespace dra::k8s
