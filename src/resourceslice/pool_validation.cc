#include "resourceslice/pool_validation.h"

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "dra/k8s/field_error.h"
#include "dra/k8s/validation.h"

namespace dra::resourceslice {
namespace {

// As the Go resourceslice controller from 1.38 (kubernetes#142218): the
// driver name is added to an unqualified name implicitly, so
// "<driver>/model" is "model" spelled in a way a CEL selector or a
// matchAttribute may not expect.
void DriverDomainNameErrors(const k8s::ResourceSliceSpec& spec, k8s::FieldErrors& errors) {
  auto check = [&](const std::string& path, const std::string& name) {
    const size_t slash = name.find('/');
    if (slash == std::string::npos || std::string_view(name).substr(0, slash) != spec.driver) return;
    errors.push_back(k8s::FieldError::Invalid(absl::StrCat(path, "[", name, "]"), k8s::GoQuote(name),
                                              absl::StrCat("use unqualified ", k8s::GoQuote(name.substr(slash + 1)),
                                                           ", the driver name is added implicitly")));
  };
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const std::string path = absl::StrCat("spec.devices[", i, "]");
    for (const auto& [name, attribute] : spec.devices[i].attributes) check(path + ".attributes", name);
    for (const auto& [name, capacity] : spec.devices[i].capacity) check(path + ".capacity", name);
  }
}

}  // namespace

absl::Status ValidatePool(std::string_view pool_name, const Pool& pool, DriverDomainNames driver_domain_names,
                          const std::function<k8s::ResourceSlice(size_t index)>& make_slice, std::string& warning) {
  const std::string quoted = k8s::GoQuote(pool_name);
  const std::vector<Slice>& slices = pool.slices;
  warning.clear();
  for (size_t i = 0; i < slices.size(); ++i) {
    const k8s::ResourceSlice slice = make_slice(i);
    k8s::FieldErrors errors = k8s::ValidateResourceSlice(slice);
    k8s::FieldErrors domain_names;
    if (driver_domain_names != DriverDomainNames::kAllow) DriverDomainNameErrors(slice.spec, domain_names);
    if (driver_domain_names == DriverDomainNames::kRefuse) {
      errors.insert(errors.end(), domain_names.begin(), domain_names.end());
    } else if (!domain_names.empty()) {
      absl::StrAppend(&warning, warning.empty() ? "" : "; ",
                      k8s::ToStatus(domain_names, absl::StrCat("pool ", quoted, ", slice ", i)).message());
    }
    if (!errors.empty()) return k8s::ToStatus(errors, absl::StrCat("pool ", quoted, ", slice ", i));
  }

  k8s::FieldErrors errors;
  std::map<std::string, const k8s::CounterSet*> counter_sets;
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto& sets = slices[i].shared_counters;
    for (size_t j = 0; j < sets.size(); ++j) {
      if (!counter_sets.emplace(sets[j].name, &sets[j]).second) {
        errors.push_back(k8s::FieldError::Invalid(absl::StrCat("slices[", i, "].spec.sharedCounters[", j, "].name"),
                                                  k8s::GoQuote(sets[j].name),
                                                  "counter set names must be unique in a pool"));
      }
    }
  }
  std::set<std::string> device_names;
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto& devices = slices[i].devices;
    for (size_t j = 0; j < devices.size(); ++j) {
      const std::string path = absl::StrCat("slices[", i, "].spec.devices[", j, "]");
      if (!device_names.insert(devices[j].name).second) {
        errors.push_back(k8s::FieldError::Invalid(path + ".name", k8s::GoQuote(devices[j].name),
                                                  "device names must be unique in a pool"));
      }
      const auto& consumption = devices[j].consumes_counters;
      for (size_t k = 0; k < consumption.size(); ++k) {
        const std::string consumption_path = absl::StrCat(path, ".consumesCounters[", k, "]");
        auto set = counter_sets.find(consumption[k].counter_set);
        if (set == counter_sets.end()) {
          errors.push_back(k8s::FieldError::Invalid(consumption_path + ".counterSet",
                                                    k8s::GoQuote(consumption[k].counter_set),
                                                    "must name a counter set in the pool's sharedCounters"));
          continue;
        }
        for (const auto& [counter, value] : consumption[k].counters) {
          if (!set->second->counters.contains(counter)) {
            errors.push_back(k8s::FieldError::Invalid(
                absl::StrCat(consumption_path, ".counters[", counter, "]"), k8s::GoQuote(counter),
                absl::StrCat("must be a counter of counter set ", k8s::GoQuote(set->first))));
          }
        }
      }
    }
  }
  return k8s::ToStatus(errors, absl::StrCat("pool ", quoted));
}

}  // namespace dra::resourceslice
