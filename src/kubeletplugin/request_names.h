// Request names as the kubelet and the metadata files use them.
#pragma once

#include <string>

namespace dra::kubeletplugin::internal {

// "gpu/large" -> "gpu": the kubelet matches devices to requests by name, and
// metadata files are kept per request.
inline std::string BaseRequestName(const std::string& request) { return request.substr(0, request.find('/')); }

}  // namespace dra::kubeletplugin::internal
