#include "k8s/protobuf_codec.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "k8s/meta_v1.pb.h"
#include "k8s/resource_v1.pb.h"
#include "k8s/runtime.pb.h"

namespace dra::k8s::internal {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using nlohmann::json;

namespace meta = ::k8s::io::apimachinery::pkg::apis::meta::v1;
namespace resource = ::k8s::io::api::resource::v1;
namespace runtime = ::k8s::io::apimachinery::pkg::runtime;

constexpr std::string_view kMagic("k8s\0", 4);
constexpr char kQuantity[] = "k8s.io.apimachinery.pkg.api.resource.Quantity";
constexpr char kTime[] = "k8s.io.apimachinery.pkg.apis.meta.v1.Time";
constexpr char kFieldsV1[] = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1";
constexpr char kRfc3339Seconds[] = "%Y-%m-%dT%H:%M:%SZ";

// The message of each kind with a schema here.
const Message* Prototype(std::string_view api_version, std::string_view kind) {
  if (api_version == "resource.k8s.io/v1") {
    if (kind == "ResourceSlice") return &resource::ResourceSlice::default_instance();
    if (kind == "ResourceSliceList") return &resource::ResourceSliceList::default_instance();
  }
  if ((api_version == "v1" || api_version == "meta.k8s.io/v1") && kind == "Status") {
    return &meta::Status::default_instance();
  }
  if (api_version == "meta.k8s.io/v1" && kind == "PartialObjectMetadata") {
    return &meta::PartialObjectMetadata::default_instance();
  }
  return nullptr;
}

// Where a value sits in the object being encoded, for error messages: a
// chain of the callers' frames, spelled out only when there is an error.
struct Path {
  enum class Kind { kRoot, kField, kIndex, kMapKey };

  Path Field(absl::string_view name) const { return {this, Kind::kField, name, 0}; }
  Path Index(size_t i) const { return {this, Kind::kIndex, {}, i}; }
  Path MapKey(absl::string_view key) const { return {this, Kind::kMapKey, key, 0}; }

  // "spec.devices[0].attributes[\"model\"]"
  std::string String() const {
    std::string out = parent == nullptr ? std::string() : parent->String();
    switch (kind) {
      case Kind::kRoot:
        break;
      case Kind::kField:
        absl::StrAppend(&out, out.empty() ? "" : ".", name);
        break;
      case Kind::kIndex:
        absl::StrAppend(&out, "[", index, "]");
        break;
      case Kind::kMapKey:
        absl::StrAppend(&out, "[\"", name, "\"]");
        break;
    }
    return out;
  }

  const Path* parent = nullptr;
  Kind kind = Kind::kRoot;
  absl::string_view name;
  size_t index = 0;
};

// One arena holds a whole object being encoded or decoded (a slice of a few
// kB is some hundred messages and strings): a few blocks instead of an
// allocation for each.
google::protobuf::ArenaOptions ArenaOptionsForObjects() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = size_t{16} << 10;
  options.max_block_size = size_t{256} << 10;
  return options;
}

absl::Status Unencodable(const Path& path, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(path.String(), ": ", why, " (no protobuf encoding here)"));
}

absl::Status FromJson(const json& value, Message* message, const Path& path);

// One value of `field` (an element when the field is repeated) into `message`.
absl::Status SetValue(const json& value, Message* message, const FieldDescriptor* field, const Path& path) {
  const Reflection* r = message->GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: {
      if (!value.is_string()) return Unencodable(path, "not a string");
      if (repeated) {
        r->AddString(message, field, value.get<std::string>());
      } else {
        r->SetString(message, field, value.get<std::string>());
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      if (!value.is_boolean()) return Unencodable(path, "not a boolean");
      repeated ? r->AddBool(message, field, value.get<bool>()) : r->SetBool(message, field, value.get<bool>());
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_INT64: {
      if (!value.is_number_integer() ||
          (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})) {
        return Unencodable(path, "not a 64-bit integer");
      }
      const int64_t v = value.get<int64_t>();
      repeated ? r->AddInt64(message, field, v) : r->SetInt64(message, field, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT32: {
      if (!value.is_number_integer()) return Unencodable(path, "not an integer");
      const int64_t v =
          value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}
              ? std::numeric_limits<int64_t>::max()
              : value.get<int64_t>();
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        return Unencodable(path, "out of the 32-bit range");
      }
      repeated ? r->AddInt32(message, field, static_cast<int32_t>(v))
               : r->SetInt32(message, field, static_cast<int32_t>(v));
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      Message* child = repeated ? r->AddMessage(message, field) : r->MutableMessage(message, field);
      return FromJson(value, child, path);
    }
    default:
      return Unencodable(path, "a field type the codec does not handle");
  }
}

// The fields of `value` into `message`; at the top level (`path` the root)
// apiVersion and kind are the envelope's, not the message's.
absl::Status FromJson(const json& value, Message* message, const Path& path) {
  const Descriptor* d = message->GetDescriptor();
  const Reflection* r = message->GetReflection();
  const std::string& type = d->full_name();
  if (type == kQuantity) {
    if (value.is_string()) {
      r->SetString(message, d->FindFieldByNumber(1), value.get<std::string>());
    } else if (value.is_number()) {
      r->SetString(message, d->FindFieldByNumber(1), value.dump());
    } else {
      return Unencodable(path, "a quantity is a string or a number");
    }
    return absl::OkStatus();
  }
  if (type == kTime) {
    absl::Time t;
    std::string err;
    if (!value.is_string() || !absl::ParseTime(absl::RFC3339_full, value.get<std::string>(), &t, &err)) {
      return Unencodable(path, "not an RFC 3339 time");
    }
    const int64_t seconds = absl::ToUnixSeconds(t);
    r->SetInt64(message, d->FindFieldByNumber(1), seconds);
    const int64_t nanos = absl::ToInt64Nanoseconds(t - absl::FromUnixSeconds(seconds));
    if (nanos != 0) r->SetInt32(message, d->FindFieldByNumber(2), static_cast<int32_t>(nanos));
    return absl::OkStatus();
  }
  if (type == kFieldsV1) {
    if (!value.is_object()) return Unencodable(path, "not an object");
    r->SetString(message, d->FindFieldByNumber(1), value.dump());
    return absl::OkStatus();
  }
  if (!value.is_object()) return Unencodable(path, "not an object");
  const bool top = path.kind == Path::Kind::kRoot;
  for (const auto& [key, item] : value.items()) {
    if (item.is_null() || (top && (key == "apiVersion" || key == "kind"))) continue;
    const Path item_path = path.Field(key);
    const FieldDescriptor* field = d->FindFieldByName(key);
    if (field == nullptr) return Unencodable(item_path, "unknown field");
    if (field->is_map()) {
      if (!item.is_object()) return Unencodable(item_path, "not an object");
      const FieldDescriptor* key_field = field->message_type()->FindFieldByNumber(1);
      const FieldDescriptor* value_field = field->message_type()->FindFieldByNumber(2);
      for (const auto& [map_key, map_value] : item.items()) {
        Message* entry = r->AddMessage(message, field);
        entry->GetReflection()->SetString(entry, key_field, map_key);
        absl::Status status = SetValue(map_value, entry, value_field, item_path.MapKey(map_key));
        if (!status.ok()) return status;
      }
    } else if (field->is_repeated()) {
      if (!item.is_array()) return Unencodable(item_path, "not an array");
      for (size_t i = 0; i < item.size(); ++i) {
        absl::Status status = SetValue(item[i], message, field, item_path.Index(i));
        if (!status.ok()) return status;
      }
    } else {
      absl::Status status = SetValue(item, message, field, item_path);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

json ToJson(const Message& message);

json ValueToJson(const Message& message, const FieldDescriptor* field, int index) {
  const Reflection* r = message.GetReflection();
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field);
    case FieldDescriptor::CPPTYPE_BOOL:
      return repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field);
    case FieldDescriptor::CPPTYPE_INT64:
      return repeated ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field);
    case FieldDescriptor::CPPTYPE_INT32:
      return repeated ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ToJson(repeated ? r->GetRepeatedMessage(message, field, index) : r->GetMessage(message, field));
    default:
      return nullptr;  // no such field in proto/k8s
  }
}

json ToJson(const Message& message) {
  const Descriptor* d = message.GetDescriptor();
  const Reflection* r = message.GetReflection();
  const std::string& type = d->full_name();
  if (type == kQuantity) return r->GetString(message, d->FindFieldByNumber(1));
  if (type == kTime) {
    return absl::FormatTime(kRfc3339Seconds, absl::FromUnixSeconds(r->GetInt64(message, d->FindFieldByNumber(1))),
                            absl::UTCTimeZone());
  }
  if (type == kFieldsV1) {
    json doc = json::parse(r->GetString(message, d->FindFieldByNumber(1)), nullptr, /*allow_exceptions=*/false);
    return doc.is_discarded() ? json::object() : doc;
  }
  json out = json::object();
  for (int f = 0; f < d->field_count(); ++f) {
    const FieldDescriptor* field = d->field(f);
    if (field->is_repeated() ? r->FieldSize(message, field) == 0 : !r->HasField(message, field)) continue;
    if (field->is_map()) {
      json& map = out[field->name()] = json::object();
      const FieldDescriptor* key_field = field->message_type()->FindFieldByNumber(1);
      const FieldDescriptor* value_field = field->message_type()->FindFieldByNumber(2);
      for (int i = 0; i < r->FieldSize(message, field); ++i) {
        const Message& entry = r->GetRepeatedMessage(message, field, i);
        map[entry.GetReflection()->GetString(entry, key_field)] = ValueToJson(entry, value_field, -1);
      }
    } else if (field->is_repeated()) {
      json& array = out[field->name()] = json::array();
      for (int i = 0; i < r->FieldSize(message, field); ++i) array.push_back(ValueToJson(message, field, i));
    } else {
      out[field->name()] = ValueToJson(message, field, -1);
    }
  }
  return out;
}

// The envelope's messages are allocated on `arena`.
absl::StatusOr<json> DecodeEnvelope(std::string_view data, absl::string_view what, google::protobuf::Arena& arena) {
  if (!data.starts_with(kMagic)) {
    return absl::InternalError(absl::StrCat(what, " is not a Kubernetes protobuf object (no \"k8s\\0\" prefix)"));
  }
  data.remove_prefix(kMagic.size());
  auto& unknown = *google::protobuf::Arena::CreateMessage<runtime::Unknown>(&arena);
  if (!unknown.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return absl::InternalError(absl::StrCat(what, ": the protobuf envelope does not parse"));
  }
  if (!unknown.contentencoding().empty()) {
    return absl::InternalError(
        absl::StrCat(what, ": content encoding \"", unknown.contentencoding(), "\" is not supported"));
  }
  const std::string& api_version = unknown.typemeta().apiversion();
  const std::string& kind = unknown.typemeta().kind();
  const Message* prototype = Prototype(api_version, kind);
  if (prototype == nullptr) {
    return absl::InternalError(absl::StrCat(what, ": no protobuf schema here for ", api_version, " ", kind));
  }
  Message* object = prototype->New(&arena);
  if (!object->ParseFromString(unknown.raw())) {
    return absl::InternalError(absl::StrCat(what, ": the ", kind, " message does not parse"));
  }
  json out = ToJson(*object);
  out["apiVersion"] = api_version;
  out["kind"] = kind;
  return out;
}

}  // namespace

bool HasProtobufSchema(const ResourceRef& ref) {
  return ref.group == kResourceSlices.group && ref.version == kResourceSlices.version &&
         ref.resource == kResourceSlices.resource;
}

bool IsProtobufContentType(std::string_view content_type) {
  const std::string_view type = content_type.substr(0, content_type.find(';'));
  return absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(absl::string_view(type.data(), type.size())),
                                absl::string_view(kProtobufContentType.data(), kProtobufContentType.size()));
}

absl::StatusOr<std::string> EncodeProtobuf(const json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("not an object (no protobuf encoding)");
  auto api_version = object.find("apiVersion");
  auto kind = object.find("kind");
  if (api_version == object.end() || !api_version->is_string() || kind == object.end() || !kind->is_string()) {
    return absl::InvalidArgumentError("apiVersion and kind are needed for the protobuf encoding");
  }
  const Message* prototype = Prototype(api_version->get<std::string>(), kind->get<std::string>());
  if (prototype == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no protobuf schema here for ", api_version->get<std::string>(), " ", kind->get<std::string>()));
  }
  google::protobuf::Arena arena(ArenaOptionsForObjects());
  Message* message = prototype->New(&arena);
  if (absl::Status status = FromJson(object, message, Path()); !status.ok()) return status;
  auto* unknown = google::protobuf::Arena::CreateMessage<runtime::Unknown>(&arena);
  unknown->mutable_typemeta()->set_apiversion(api_version->get<std::string>());
  unknown->mutable_typemeta()->set_kind(kind->get<std::string>());
  if (!message->SerializeToString(unknown->mutable_raw())) {
    return absl::InternalError("the protobuf encoding failed");
  }
  std::string out(kMagic);
  unknown->AppendToString(&out);
  return out;
}

absl::StatusOr<json> DecodeProtobuf(std::string_view body) {
  google::protobuf::Arena arena(ArenaOptionsForObjects());
  return DecodeEnvelope(body, "response", arena);
}

absl::StatusOr<json> DecodeProtobufWatchEvent(std::string_view frame) {
  google::protobuf::Arena arena(ArenaOptionsForObjects());
  auto& event = *google::protobuf::Arena::CreateMessage<meta::WatchEvent>(&arena);
  if (!event.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    return absl::InternalError("watch stream: a protobuf event does not parse");
  }
  absl::StatusOr<json> object = DecodeEnvelope(event.object().raw(), "watch event", arena);
  if (!object.ok()) return object.status();
  return json{{"type", event.type()}, {"object", *std::move(object)}};
}

absl::Status FrameDecoder::Feed(std::string_view data, const std::function<absl::Status(std::string_view)>& on_frame) {
  pending_.append(data);
  size_t offset = 0;
  while (pending_.size() - offset >= 4) {
    const auto* p = reinterpret_cast<const unsigned char*>(pending_.data() + offset);
    const size_t length = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | size_t{p[3]};
    if (length > max_frame_) {
      return absl::InternalError(
          absl::StrCat("watch stream: a frame of ", length, " bytes is over the limit of ", max_frame_));
    }
    if (pending_.size() - offset - 4 < length) break;
    absl::Status status = on_frame(std::string_view(pending_).substr(offset + 4, length));
    offset += 4 + length;
    if (!status.ok()) {
      pending_.erase(0, offset);
      return status;
    }
  }
  pending_.erase(0, offset);
  return absl::OkStatus();
}

}  // namespace dra::k8s::internal
