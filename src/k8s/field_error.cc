#include "dra/k8s/field_error.h"

#include <cstdint>
#include <set>
#include <utility>

namespace dra::k8s {
namespace {

const char* TypeWords(FieldError::Type type) {
  switch (type) {
    case FieldError::Type::kRequired:
      return "Required value";
    case FieldError::Type::kInvalid:
      return "Invalid value";
    case FieldError::Type::kTooMany:
      return "Too many";
    case FieldError::Type::kTooLong:
      return "Too long";
    case FieldError::Type::kDuplicate:
      return "Duplicate value";
    case FieldError::Type::kNotSupported:
      return "Unsupported value";
    case FieldError::Type::kForbidden:
      return "Forbidden";
    case FieldError::Type::kInternal:
      return "Internal error";
    case FieldError::Type::kNotFound:
      return "Not found";
  }
  return "Invalid value";
}

FieldError Make(std::string field, FieldError::Type type, std::string value_text, std::string detail) {
  FieldError error;
  error.field = std::move(field);
  error.type = type;
  error.value_text = std::move(value_text);
  error.detail = std::move(detail);
  return error;
}

void AppendHex(std::string& out, const char* prefix, uint32_t value, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xf];
}

// Decodes one UTF-8 sequence at `i`; returns its length, 0 if invalid.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t& rune) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  uint32_t min = 0;
  if (b0 < 0x80) {
    rune = b0;
    return 1;
  } else if ((b0 & 0xe0) == 0xc0) {
    len = 2, rune = b0 & 0x1f, min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    len = 3, rune = b0 & 0x0f, min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    len = 4, rune = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    rune = (rune << 6) | (b & 0x3f);
  }
  if (rune < min || rune > 0x10ffff || (rune >= 0xd800 && rune <= 0xdfff)) return 0;
  return len;
}

}  // namespace

std::string GoQuote(std::string_view value) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size();) {
    uint32_t rune = 0;
    const size_t len = DecodeUtf8(value, i, rune);
    if (len == 0) {
      AppendHex(out, "\\x", static_cast<unsigned char>(value[i]), 2);
      ++i;
      continue;
    }
    switch (rune) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (rune < 0x20 || rune == 0x7f) {
          AppendHex(out, "\\x", rune, 2);
        } else if (rune >= 0x80 && rune < 0xa0) {
          AppendHex(out, "\\u", rune, 4);  // C1 controls are not printable
        } else {
          out.append(value.substr(i, len));
        }
    }
    i += len;
  }
  out += '"';
  return out;
}

std::string FieldError::ToString() const {
  std::string body = TypeWords(type);
  switch (type) {
    case Type::kRequired:
    case Type::kForbidden:
    case Type::kTooLong:
    case Type::kInternal:
      break;
    default:
      if (!value_text.empty()) body += ": " + value_text;
  }
  if (!detail.empty()) body += ": " + detail;
  return field + ": " + body;
}

FieldError FieldError::Required(std::string field, std::string detail) {
  return Make(std::move(field), Type::kRequired, "", std::move(detail));
}

FieldError FieldError::Invalid(std::string field, std::string value_text, std::string detail) {
  return Make(std::move(field), Type::kInvalid, std::move(value_text), std::move(detail));
}

FieldError FieldError::TooMany(std::string field, size_t actual, size_t max) {
  return Make(std::move(field), Type::kTooMany, std::to_string(actual),
              "must have at most " + std::to_string(max) + " items");
}

FieldError FieldError::TooLong(std::string field, size_t max) {
  return Make(std::move(field), Type::kTooLong, "", "may not be more than " + std::to_string(max) + " bytes");
}

FieldError FieldError::Duplicate(std::string field, std::string value_text) {
  return Make(std::move(field), Type::kDuplicate, std::move(value_text), "");
}

FieldError FieldError::NotSupported(std::string field, std::string value_text,
                                    const std::vector<std::string>& supported) {
  std::string detail;
  for (const std::string& value : supported) {
    detail += detail.empty() ? "supported values: " : ", ";
    detail += GoQuote(value);
  }
  return Make(std::move(field), Type::kNotSupported, std::move(value_text), std::move(detail));
}

FieldError FieldError::Forbidden(std::string field, std::string detail) {
  return Make(std::move(field), Type::kForbidden, "", std::move(detail));
}

FieldError FieldError::NotFound(std::string field, std::string value_text) {
  return Make(std::move(field), Type::kNotFound, std::move(value_text), "");
}

FieldError FieldError::Internal(std::string field, std::string detail) {
  return Make(std::move(field), Type::kInternal, "", std::move(detail));
}

absl::Status ToStatus(const FieldErrors& errors, std::string_view object_description) {
  if (errors.empty()) return absl::OkStatus();
  std::set<std::string> seen;
  std::string joined;
  for (const FieldError& error : errors) {
    std::string message = error.ToString();
    if (!seen.insert(message).second) continue;
    if (!joined.empty()) joined += ", ";
    joined += message;
  }
  if (seen.size() > 1) joined = "[" + joined + "]";
  return absl::InvalidArgumentError(std::string(object_description) + " is invalid: " + joined);
}

}  // namespace dra::k8s
