#include "dra/k8s/names.h"

#include "absl/strings/str_cat.h"

namespace dra::k8s {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool MatchesLabelPattern(std::string_view value) {
  if (value.empty() || !IsLowerAlnum(value.front()) || !IsLowerAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

std::string MaxLengthError(size_t max) { return absl::StrCat("must be no more than ", max, " characters"); }

}  // namespace

std::vector<std::string> IsDns1123Label(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 63) errors.push_back(MaxLengthError(63));
  if (!MatchesLabelPattern(value)) {
    errors.push_back(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
        "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
  }
  return errors;
}

std::vector<std::string> IsDns1123Subdomain(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 253) errors.push_back(MaxLengthError(253));
  bool valid = !value.empty();
  size_t start = 0;
  while (valid) {
    const size_t dot = value.find('.', start);
    valid = MatchesLabelPattern(value.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (!valid) {
    errors.push_back(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  }
  return errors;
}

}  // namespace dra::k8s
