// Canonical comparison of a desired ResourceSlice spec with the one the API
// server stored, so that the publisher neither loops nor writes needlessly.
#pragma once

#include <string>
#include <vector>

#include "dra/k8s/resource_slice.h"

namespace dra::resourceslice {

// Whether `stored` publishes exactly `desired`: field by field, quantities by
// value (1024Mi is 1Gi), and a taint's timeAdded only when both set it (the
// server fills it in), within a second (it stores whole seconds).
bool SameSpec(const k8s::ResourceSliceSpec& desired, const k8s::ResourceSliceSpec& stored);
// The same, with the desired devices apart (desired.devices is ignored), so
// that they need not be copied into a spec to be compared.
bool SameSpec(const k8s::ResourceSliceSpec& desired, const std::vector<k8s::Device>& desired_devices,
              const k8s::ResourceSliceSpec& stored);

// Gives desired taints without timeAdded the time of the same taint (key,
// value, effect) of the same-named stored device, so that an update keeps it.
void KeepTaintTimes(std::vector<k8s::Device>& desired, const std::vector<k8s::Device>& stored);

// The fields of `sent` that `stored` lacks or holds differently, with list
// indices left out and map keys in brackets ("spec.devices[].taints",
// "spec.devices[].attributes[model].strings"), sorted, each once. Fields the
// server only added are not listed, nor is timeAdded.
std::vector<std::string> DroppedFields(const k8s::ResourceSliceSpec& sent, const k8s::ResourceSliceSpec& stored);

// The feature gates which, when off, make the API server drop these fields,
// in a fixed order.
std::vector<std::string> LikelyFeatureGates(const std::vector<std::string>& dropped_fields);

}  // namespace dra::resourceslice
