#include "dra/k8s/names.h"

#include <cstddef>

namespace dra::k8s {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

bool MatchesLabelPattern(std::string_view value) {
  if (value.empty() || !IsLowerAlnum(value.front()) || !IsLowerAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

bool MatchesSubdomainPattern(std::string_view value) {
  size_t start = 0;
  while (true) {
    const size_t dot = value.find('.', start);
    if (!MatchesLabelPattern(value.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool MatchesLabelKeyName(std::string_view value) {
  if (value.empty() || !IsAlnum(value.front()) || !IsAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// util/validation.MaxLenError, used by the DNS name checks.
std::string MaxLenCharacters(size_t max) { return "must be no more than " + std::to_string(max) + " characters"; }
// content.MaxLenError, used by the label key and value checks.
std::string MaxLenBytes(size_t max) { return "must be no more than " + std::to_string(max) + " bytes"; }

constexpr const char* kSubdomainRegexError =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

constexpr const char* kLabelKeyRegexError =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

// The prefix of a qualified name is checked by content.IsDNS1123Subdomain,
// whose length message counts bytes.
std::vector<std::string> ContentIsDns1123Subdomain(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 253) errors.push_back(MaxLenBytes(253));
  if (!MatchesSubdomainPattern(value)) errors.push_back(kSubdomainRegexError);
  return errors;
}

}  // namespace

std::vector<std::string> IsDns1123Label(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 63) errors.push_back(MaxLenCharacters(63));
  if (!MatchesLabelPattern(value)) {
    if (MatchesSubdomainPattern(value)) {
      errors.push_back("must not contain dots");
    } else {
      errors.push_back(
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
          "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
    }
  }
  return errors;
}

std::vector<std::string> IsDns1123Subdomain(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 253) errors.push_back(MaxLenCharacters(253));
  if (!MatchesSubdomainPattern(value)) errors.push_back(kSubdomainRegexError);
  return errors;
}

std::vector<std::string> IsQualifiedName(std::string_view value) {
  std::vector<std::string> errors;
  std::string_view name = value;
  const size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errors.push_back(std::string("a valid label key ") + kLabelKeyRegexError +
                       " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errors;
    }
    const std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errors.push_back("prefix part must be non-empty");
    } else {
      for (std::string& msg : ContentIsDns1123Subdomain(prefix)) errors.push_back("prefix part " + msg);
    }
  }
  if (name.empty()) {
    errors.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errors.push_back("name part " + MaxLenBytes(63));
  }
  if (!MatchesLabelKeyName(name)) errors.push_back(std::string("name part ") + kLabelKeyRegexError);
  return errors;
}

std::vector<std::string> IsLabelValue(std::string_view value) {
  std::vector<std::string> errors;
  if (value.size() > 63) errors.push_back(MaxLenBytes(63));
  if (!value.empty() && !MatchesLabelKeyName(value)) {
    errors.push_back(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
        "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  }
  return errors;
}

std::vector<std::string> IsCIdentifier(std::string_view value) {
  bool valid = !value.empty() && !(value.front() >= '0' && value.front() <= '9');
  for (char c : value) {
    if (!IsAlnum(c) && c != '_') valid = false;
  }
  if (valid) return {};
  return {
      "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
      "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
      "'[A-Za-z_][A-Za-z0-9_]*')"};
}

}  // namespace dra::k8s
