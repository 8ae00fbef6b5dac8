#include "container_env.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dra/cdi/spec_dir.h"

namespace gpu {

std::string EnvName(std::string_view prefix, std::string_view name) {
  std::string variable(prefix);
  for (char c : name) variable += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
  return variable;
}

std::string ClaimVariable(std::string_view cdi_class, const std::string& device_name, const std::string& uid) {
  return absl::StrCat(EnvName(absl::StrCat(absl::AsciiStrToUpper(std::string(cdi_class)), "_DEVICE_"), device_name),
                      "_RESOURCE_CLAIM=", uid);
}

std::string AdminAccessVariable(const dra::k8s::ResourceClaim& claim) {
  bool admin = false;
  if (claim.status.allocation.has_value()) {
    const auto& results = claim.status.allocation->devices.results;
    admin = std::any_of(results.begin(), results.end(), [](const dra::k8s::DeviceRequestAllocationResult& r) {
      return r.admin_access.value_or(false);
    });
  }
  return absl::StrCat("DRA_ADMIN_ACCESS=", admin ? "true" : "false");
}

CommonCdiSpec MakeCommonCdiSpec(const std::string& driver_name, const std::string& cdi_class,
                                const std::string& node_name) {
  constexpr char kDevice[] = "common";
  const dra::cdi::Kind kind{driver_name, cdi_class};
  CommonCdiSpec common;
  common.spec.kind = kind.ToString();
  dra::cdi::Device& device = common.spec.devices.emplace_back();
  device.name = kDevice;
  device.container_edits.env = {"KUBERNETES_NODE_NAME=" + node_name, "DRA_RESOURCE_DRIVER_NAME=" + driver_name};
  common.id = absl::StrCat(kind.ToString(), "=", kDevice);
  return common;
}

}  // namespace gpu
