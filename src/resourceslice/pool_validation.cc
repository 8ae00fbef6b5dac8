#include "resourceslice/pool_validation.h"

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "dra/k8s/field_error.h"
#include "dra/k8s/validation.h"

namespace dra::resourceslice {

absl::Status ValidatePool(std::string_view pool_name, const Pool& pool,
                          const std::function<k8s::ResourceSlice(size_t index)>& make_slice) {
  const std::string quoted = k8s::GoQuote(pool_name);
  const std::vector<Slice>& slices = pool.slices;
  for (size_t i = 0; i < slices.size(); ++i) {
    k8s::FieldErrors errors = k8s::ValidateResourceSlice(make_slice(i));
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
