#include "k8s/json_fields.h"

#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dra::k8s::internal {
namespace {

// Error messages quote values; strings built in memory may hold invalid UTF-8,
// which dump() would otherwise throw on.
std::string Quote(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string Prefix(const Path& path) {
  std::string text = path.ToString();
  return text.empty() ? text : absl::StrCat(text, ": ");
}

}  // namespace

std::string Path::ToString() const {
  std::vector<const Path*> segments;
  for (const Path* p = this; p->kind_ != Kind::kRoot; p = p->parent_) segments.push_back(p);
  std::string out;
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    const Path& segment = **it;
    switch (segment.kind_) {
      case Kind::kField:
        absl::StrAppend(&out, out.empty() ? "" : ".", segment.name_);
        break;
      case Kind::kIndex:
        absl::StrAppend(&out, "[", segment.index_, "]");
        break;
      case Kind::kKey:
        absl::StrAppend(&out, "[", segment.name_, "]");
        break;
      case Kind::kRoot:
        break;
    }
  }
  return out;
}

absl::Status InvalidType(const Path& path, absl::string_view expected, const json& value) {
  return absl::InvalidArgumentError(
      absl::StrCat(Prefix(path), "Invalid type: expected ", expected, ", got ", value.type_name()));
}

absl::Status InvalidValue(const Path& path, const json& value, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat(Prefix(path), "Invalid value: ", Quote(value), ": ", detail));
}

absl::Status CheckNestingDepth(const json& value) {
  // Iterative, so that checking cannot overflow the stack it protects.
  std::vector<std::pair<const json*, size_t>> pending = {{&value, 1}};
  while (!pending.empty()) {
    auto [current, depth] = pending.back();
    pending.pop_back();
    if (!current->is_structured()) continue;
    if (depth > kMaxNestingDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid value: arrays and objects nest deeper than ", kMaxNestingDepth, " levels"));
    }
    for (const json& child : *current) pending.emplace_back(&child, depth + 1);
  }
  return absl::OkStatus();
}

absl::Status Codec<std::string>::Decode(const json& value, std::string& out, const Path& path) {
  if (!value.is_string()) return InvalidType(path, "string", value);
  out = value.get_ref<const std::string&>();
  return absl::OkStatus();
}

absl::Status Codec<bool>::Decode(const json& value, bool& out, const Path& path) {
  if (!value.is_boolean()) return InvalidType(path, "boolean", value);
  out = value.get<bool>();
  return absl::OkStatus();
}

absl::Status Codec<int64_t>::Decode(const json& value, int64_t& out, const Path& path) {
  if (value.is_number_unsigned()) {
    const uint64_t unsigned_value = value.get<uint64_t>();
    if (unsigned_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidValue(path, value, "must fit in a 64-bit signed integer");
    }
    out = static_cast<int64_t>(unsigned_value);
    return absl::OkStatus();
  }
  if (value.is_number_integer()) {
    out = value.get<int64_t>();
    return absl::OkStatus();
  }
  // The parser stores fractions and integers beyond 64 bits as floating point.
  if (value.is_number_float()) return InvalidValue(path, value, "must be a 64-bit signed integer");
  return InvalidType(path, "integer", value);
}

absl::Status Codec<Quantity>::Decode(const json& value, Quantity& out, const Path& path) {
  std::string text;
  if (value.is_string()) {
    text = std::string(absl::StripAsciiWhitespace(value.get_ref<const std::string&>()));
  } else if (value.is_number()) {
    text = value.dump();
  } else {
    return InvalidType(path, "string or number", value);
  }
  absl::StatusOr<Quantity> parsed = Quantity::Parse(text);
  if (!parsed.ok()) return InvalidValue(path, value, parsed.status().message());
  out = *std::move(parsed);
  return absl::OkStatus();
}

absl::Status Codec<json>::Decode(const json& value, json& out, const Path& path) {
  if (!value.is_object()) return InvalidType(path, "object", value);
  out = value;
  return absl::OkStatus();
}

absl::Status ConstantField::Check(const json& json_value, const Path& path) const {
  if (json_value.is_null()) return absl::OkStatus();
  if (!json_value.is_string()) return InvalidType(path, "string", json_value);
  if (json_value.get_ref<const std::string&>() != value) {
    return absl::InvalidArgumentError(
        absl::StrCat(Prefix(path), "Unsupported value: ", Quote(json_value), ": supported values: \"", value, "\""));
  }
  return absl::OkStatus();
}

}  // namespace dra::k8s::internal
