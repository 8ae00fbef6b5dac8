// Kubernetes name formats, with the API server's error texts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dra::k8s {

// RFC 1123 subdomain: at most 253 characters, lower-case alphanumerics, '-'
// and '.', starting and ending with an alphanumeric. Returns the violated
// rules as the API server words them; empty means valid.
std::vector<std::string> IsDns1123Subdomain(std::string_view value);

// RFC 1123 label: at most 63 characters, lower-case alphanumerics and '-',
// starting and ending with an alphanumeric.
std::vector<std::string> IsDns1123Label(std::string_view value);

}  // namespace dra::k8s
