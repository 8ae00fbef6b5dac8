/// @file
/// Kubernetes name formats, with the API server's error texts.
///
/// Each function returns the rules the value breaks, worded as
/// k8s.io/apimachinery words them (the `detail` of a field.Invalid error);
/// empty means valid. They check the format only: callers decide whether an
/// empty value is "Required" first.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dra::k8s {

/// RFC 1123 subdomain: at most 253 characters, lower-case alphanumerics, '-'
/// and '.', starting and ending with an alphanumeric. Returns the violated
/// rules as the API server words them; empty means valid.
std::vector<std::string> IsDns1123Subdomain(std::string_view value);

/// RFC 1123 label: at most 63 characters, lower-case alphanumerics and '-',
/// starting and ending with an alphanumeric. A valid subdomain that is not a
/// label is reported as "must not contain dots".
std::vector<std::string> IsDns1123Label(std::string_view value);

/// "Qualified name" (the format of label keys, annotation keys, taint keys and
/// condition types): an optional DNS subdomain prefix and '/', then a name of
/// at most 63 characters of alphanumerics, '-', '_' and '.', starting and
/// ending with an alphanumeric (apimachinery content.IsLabelKey).
std::vector<std::string> IsQualifiedName(std::string_view value);

/// Label value: empty, or at most 63 characters of alphanumerics, '-', '_' and
/// '.', starting and ending with an alphanumeric (content.IsLabelValue).
std::vector<std::string> IsLabelValue(std::string_view value);

/// C identifier: [A-Za-z_][A-Za-z0-9_]*. The length is not checked
/// (content.IsCIdentifier).
std::vector<std::string> IsCIdentifier(std::string_view value);

}  // namespace dra::k8s
