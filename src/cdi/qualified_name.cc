#include "dra/cdi/qualified_name.h"

#include "absl/strings/str_cat.h"

namespace dra::cdi {
namespace {

bool IsLetter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlphaNumeric(char c) { return IsLetter(c) || IsDigit(c); }

absl::Status Invalid(absl::string_view what, absl::string_view name, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("invalid ", what, " \"", name, "\": ", rule));
}

absl::Status ValidateVendorOrClass(absl::string_view what, absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("invalid ", what, ": empty"));
  if (!IsLetter(name.front())) return Invalid(what, name, "must start with a letter");
  for (const char c : name) {
    if (!IsAlphaNumeric(c) && c != '_' && c != '-' && c != '.') {
      return Invalid(
          what, name,
          absl::StrCat("invalid character '", std::string(1, c), "'; allowed are letters, digits, '_', '-' and '.'"));
    }
  }
  if (!IsAlphaNumeric(name.back())) return Invalid(what, name, "must end with a letter or digit");
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateVendorName(absl::string_view vendor) { return ValidateVendorOrClass("vendor", vendor); }

absl::Status ValidateClassName(absl::string_view class_name) { return ValidateVendorOrClass("class", class_name); }

absl::Status ValidateDeviceName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("invalid device name: empty");
  if (!IsAlphaNumeric(name.front())) return Invalid("device name", name, "must start with a letter or digit");
  for (const char c : name) {
    if (!IsAlphaNumeric(c) && c != '_' && c != '-' && c != '.' && c != ':') {
      return Invalid("device name", name,
                     absl::StrCat("invalid character '", std::string(1, c),
                                  "'; allowed are letters, digits, '_', '-', '.' and ':'"));
    }
  }
  if (!IsAlphaNumeric(name.back())) return Invalid("device name", name, "must end with a letter or digit");
  return absl::OkStatus();
}

std::string Kind::ToString() const { return absl::StrCat(vendor, "/", class_name); }

absl::StatusOr<Kind> ParseKind(absl::string_view kind) {
  const size_t slash = kind.find('/');
  if (slash == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("invalid kind \"", kind, "\": want vendor/class"));
  }
  Kind parsed;
  parsed.vendor = std::string(kind.substr(0, slash));
  parsed.class_name = std::string(kind.substr(slash + 1));
  if (absl::Status s = ValidateVendorName(parsed.vendor); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("kind \"", kind, "\": ", s.message()));
  }
  if (absl::Status s = ValidateClassName(parsed.class_name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("kind \"", kind, "\": ", s.message()));
  }
  return parsed;
}

std::string QualifiedName::ToString() const { return absl::StrCat(vendor, "/", class_name, "=", name); }

absl::StatusOr<QualifiedName> ParseQualifiedName(absl::string_view device) {
  const size_t equals = device.find('=');
  if (equals == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("unqualified device \"", device, "\": want vendor/class=name"));
  }
  absl::StatusOr<Kind> kind = ParseKind(device.substr(0, equals));
  if (!kind.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("device \"", device, "\": ", kind.status().message()));
  }
  const absl::string_view name = device.substr(equals + 1);
  if (absl::Status s = ValidateDeviceName(name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("device \"", device, "\": ", s.message()));
  }
  QualifiedName parsed;
  parsed.vendor = std::move(kind->vendor);
  parsed.class_name = std::move(kind->class_name);
  parsed.name = std::string(name);
  return parsed;
}

absl::StatusOr<std::string> MakeQualifiedName(absl::string_view kind, absl::string_view name) {
  absl::StatusOr<Kind> parsed = ParseKind(kind);
  if (!parsed.ok()) return parsed.status();
  if (absl::Status s = ValidateDeviceName(name); !s.ok()) return s;
  return absl::StrCat(kind, "=", name);
}

}  // namespace dra::cdi
