// The one JSON mapping behind the dra::k8s object codecs.
//
// Each API struct lists its JSON fields once, in a JsonObject<T>
// specialization; Codec<T> walks that list to decode and encode. Keys that are
// not listed are kept in T::unknown_fields and written back by Encode.
//
// Decoding follows Go's encoding/json as Kubernetes uses it: keys are
// case-sensitive, null leaves a value unset, and a value of the wrong type
// fails with InvalidArgument naming the JSON path, e.g.
// "status.allocation.devices.results[2].pool: Invalid type: expected string,
// got number". Encoding mirrors Go's omitempty and is deterministic: objects
// are written with sorted keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dra/k8s/object_meta.h"
#include "dra/k8s/quantity.h"
#include "nlohmann/json.hpp"

namespace dra::k8s::internal {

using nlohmann::json;

// Deeper documents are rejected before decoding. Go allows 10000 levels, but
// copying and printing an nlohmann::json recurses once per level (about 0.7 KB
// of stack in a debug build), so opaque parameters nested that deep could
// overflow a thread's stack. Real objects stay far below this limit.
inline constexpr size_t kMaxNestingDepth = 1000;

// A location in the document being decoded. Paths live on the stack and are
// only printed when there is an error: "spec.devices.requests[0].name",
// "metadata.labels[app]".
class Path {
 public:
  Path() = default;  // the document root

  // A child keeps a pointer to its parent, so children of temporaries are
  // refused at compile time.
  Path Field(absl::string_view name) const& { return Path(this, Kind::kField, name, 0); }
  Path Index(size_t index) const& { return Path(this, Kind::kIndex, {}, index); }
  Path Key(absl::string_view key) const& { return Path(this, Kind::kKey, key, 0); }
  Path Field(absl::string_view) const&& = delete;
  Path Index(size_t) const&& = delete;
  Path Key(absl::string_view) const&& = delete;

  std::string ToString() const;

 private:
  enum class Kind { kRoot, kField, kIndex, kKey };
  Path(const Path* parent, Kind kind, absl::string_view name, size_t index)
      : parent_(parent), kind_(kind), name_(name), index_(index) {}

  const Path* parent_ = nullptr;
  Kind kind_ = Kind::kRoot;
  absl::string_view name_;
  size_t index_ = 0;
};

// "<path>: Invalid type: expected <expected>, got <JSON type of value>".
absl::Status InvalidType(const Path& path, absl::string_view expected, const json& value);
// "<path>: Invalid value: <value>: <detail>".
absl::Status InvalidValue(const Path& path, const json& value, absl::string_view detail);
// InvalidArgument if `value` nests arrays and objects deeper than kMaxNestingDepth.
absl::Status CheckNestingDepth(const json& value);

// Codec<T> decodes a non-null JSON value into a default-constructed T and
// encodes a T. Codecs of types that Go's omitempty can omit also have
// IsEmpty. The primary template handles structs with a JsonObject<T> table.
template <typename T>
struct Codec;

// Null leaves `out` as it is, as in Go.
template <typename T>
absl::Status DecodeValue(const json& value, T& out, const Path& path) {
  if (value.is_null()) return absl::OkStatus();
  return Codec<T>::Decode(value, out, path);
}

template <>
struct Codec<std::string> {
  static absl::Status Decode(const json& value, std::string& out, const Path& path);
  static json Encode(const std::string& value) { return value; }
  static bool IsEmpty(const std::string& value) { return value.empty(); }
};

template <>
struct Codec<bool> {
  static absl::Status Decode(const json& value, bool& out, const Path& path);
  static json Encode(bool value) { return value; }
};

template <>
struct Codec<int64_t> {
  static absl::Status Decode(const json& value, int64_t& out, const Path& path);
  static json Encode(int64_t value) { return value; }
  static bool IsEmpty(int64_t value) { return value == 0; }
};

// A string as apimachinery writes it, or a number.
template <>
struct Codec<Quantity> {
  static absl::Status Decode(const json& value, Quantity& out, const Path& path);
  static json Encode(const Quantity& value) { return value.ToString(); }
};

// Raw JSON (runtime.RawExtension, or a type not modelled yet): any object.
template <>
struct Codec<json> {
  static absl::Status Decode(const json& value, json& out, const Path& path);
  static json Encode(const json& value) { return value; }
  static bool IsEmpty(const json& value) { return value.is_null(); }
};

template <typename T>
struct Codec<std::optional<T>> {
  static absl::Status Decode(const json& value, std::optional<T>& out, const Path& path) {
    return Codec<T>::Decode(value, out.emplace(), path);
  }
  static json Encode(const std::optional<T>& value) { return value ? Codec<T>::Encode(*value) : json(); }
  static bool IsEmpty(const std::optional<T>& value) { return !value.has_value(); }
};

template <typename T>
struct Codec<std::vector<T>> {
  static absl::Status Decode(const json& value, std::vector<T>& out, const Path& path) {
    if (!value.is_array()) return InvalidType(path, "array", value);
    out.reserve(value.size());
    for (size_t i = 0; i < value.size(); ++i) {
      if (absl::Status status = DecodeValue(value[i], out.emplace_back(), path.Index(i)); !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  }
  static json Encode(const std::vector<T>& value) {
    json out = json::array();
    for (const T& element : value) out.push_back(Codec<T>::Encode(element));
    return out;
  }
  static bool IsEmpty(const std::vector<T>& value) { return value.empty(); }
};

template <typename T>
struct Codec<std::map<std::string, T>> {
  static absl::Status Decode(const json& value, std::map<std::string, T>& out, const Path& path) {
    if (!value.is_object()) return InvalidType(path, "object", value);
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (absl::Status status = DecodeValue(it.value(), out[it.key()], path.Key(it.key())); !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  }
  static json Encode(const std::map<std::string, T>& value) {
    json out = json::object();
    for (const auto& [key, element] : value) out[key] = Codec<T>::Encode(element);
    return out;
  }
  static bool IsEmpty(const std::map<std::string, T>& value) { return value.empty(); }
};

// Whether a field is written when its value is empty.
enum class Emit {
  kAlways,     // Go fields without omitempty, and struct-valued fields
  kOmitEmpty,  // Go's omitempty; also used where Go would write null
};

// A JSON field stored in member `member` of T.
template <Emit kEmit, typename T, typename M>
struct MemberField {
  absl::string_view name;
  M T::*member;

  absl::Status Decode(const json& value, T& out, const Path& path) const {
    return DecodeValue(value, out.*member, path);
  }
  void Encode(const T& in, json& out) const {
    const M& value = in.*member;
    if constexpr (kEmit == Emit::kOmitEmpty) {
      if (Codec<M>::IsEmpty(value)) return;
    }
    out[std::string(name)] = Codec<M>::Encode(value);
  }
};

template <typename T, typename M>
constexpr MemberField<Emit::kAlways, T, M> Always(absl::string_view name, M T::*member) {
  return {name, member};
}

template <typename T, typename M>
constexpr MemberField<Emit::kOmitEmpty, T, M> OmitEmpty(absl::string_view name, M T::*member) {
  return {name, member};
}

// A string field with one allowed value, such as "kind": written always,
// checked when present.
struct ConstantField {
  absl::string_view name;
  absl::string_view value;

  absl::Status Check(const json& json_value, const Path& path) const;

  template <typename T>
  absl::Status Decode(const json& json_value, T& /*out*/, const Path& path) const {
    return Check(json_value, path);
  }
  template <typename T>
  void Encode(const T& /*in*/, json& out) const {
    out[std::string(name)] = std::string(value);
  }
};

// Specialised for every API struct T with
//   static constexpr auto kFields = std::tuple{Always("name", &T::name), ...};
template <typename T>
struct JsonObject;

// Calls `fn` with T's field named `name`; false if T has none.
template <typename T, typename Fn>
bool VisitField(absl::string_view name, Fn&& fn) {
  return std::apply([&](const auto&... field) { return ((field.name == name && (fn(field), true)) || ...); },
                    JsonObject<T>::kFields);
}

// An API struct: the fields JsonObject<T> lists, other keys in unknown_fields.
template <typename T>
struct Codec {
  static absl::Status Decode(const json& value, T& out, const Path& path) {
    if (!value.is_object()) return InvalidType(path, "object", value);
    for (auto it = value.begin(); it != value.end(); ++it) {
      absl::Status status;
      const bool known = VisitField<T>(
          it.key(), [&](const auto& field) { status = field.Decode(it.value(), out, path.Field(field.name)); });
      if (!status.ok()) return status;
      if (!known) out.unknown_fields[it.key()] = it.value();
    }
    return absl::OkStatus();
  }
  static json Encode(const T& value) {
    json out = value.unknown_fields.is_object() ? value.unknown_fields : json::object();
    std::apply([&](const auto&... field) { (field.Encode(value, out), ...); }, JsonObject<T>::kFields);
    return out;
  }
};

// Entry points for a whole document of type T.
template <typename T>
absl::StatusOr<T> FromJson(const json& value) {
  if (absl::Status status = CheckNestingDepth(value); !status.ok()) return status;
  T out;
  // Codec, not DecodeValue: a null document is an error, not an empty object.
  if (absl::Status status = Codec<T>::Decode(value, out, Path()); !status.ok()) return status;
  return out;
}

template <typename T>
json ToJson(const T& value) {
  return Codec<T>::Encode(value);
}

// The metav1 types every object codec shares.

template <>
struct JsonObject<OwnerReference> {
  static constexpr auto kFields = std::tuple{
      Always("apiVersion", &OwnerReference::api_version),
      Always("kind", &OwnerReference::kind),
      Always("name", &OwnerReference::name),
      Always("uid", &OwnerReference::uid),
      OmitEmpty("controller", &OwnerReference::controller),
      OmitEmpty("blockOwnerDeletion", &OwnerReference::block_owner_deletion),
  };
};

template <>
struct JsonObject<ObjectMeta> {
  static constexpr auto kFields = std::tuple{
      OmitEmpty("name", &ObjectMeta::name),
      OmitEmpty("generateName", &ObjectMeta::generate_name),
      OmitEmpty("namespace", &ObjectMeta::namespace_),
      OmitEmpty("uid", &ObjectMeta::uid),
      OmitEmpty("resourceVersion", &ObjectMeta::resource_version),
      OmitEmpty("generation", &ObjectMeta::generation),
      OmitEmpty("creationTimestamp", &ObjectMeta::creation_timestamp),
      OmitEmpty("deletionTimestamp", &ObjectMeta::deletion_timestamp),
      OmitEmpty("labels", &ObjectMeta::labels),
      OmitEmpty("annotations", &ObjectMeta::annotations),
      OmitEmpty("finalizers", &ObjectMeta::finalizers),
      OmitEmpty("ownerReferences", &ObjectMeta::owner_references),
  };
};

template <>
struct JsonObject<Condition> {
  static constexpr auto kFields = std::tuple{
      Always("type", &Condition::type),
      Always("status", &Condition::status),
      OmitEmpty("observedGeneration", &Condition::observed_generation),
      OmitEmpty("lastTransitionTime", &Condition::last_transition_time),
      Always("reason", &Condition::reason),
      Always("message", &Condition::message),
  };
};

}  // namespace dra::k8s::internal
