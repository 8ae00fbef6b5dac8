#include "dra/kubeletplugin/driver.h"

namespace dra::kubeletplugin {

Device Device::ForAllocation(const k8s::DeviceRequestAllocationResult& allocated) {
  Device device;
  device.requests = {allocated.request};
  device.pool_name = allocated.pool;
  device.device_name = allocated.device;
  device.share_id = allocated.share_id;
  return device;
}

std::string_view ErrorSeverityName(ErrorSeverity severity) {
  return severity == ErrorSeverity::kFatal ? "fatal" : "recoverable";
}

}  // namespace dra::kubeletplugin
