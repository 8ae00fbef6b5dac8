// Kubernetes' protobuf wire format for the kinds dra::k8s::Client has a
// schema for (proto/k8s: ResourceSlice, its list, metav1.Status and
// PartialObjectMetadata), converted
// to and from the JSON objects the client works on. Internal.
//
// On the wire every object is "k8s\0" followed by a runtime.Unknown that
// names apiVersion and kind and carries the object's message; a watch stream
// is a sequence of frames, each a 4-byte big-endian length and a
// metav1.WatchEvent whose object is such an envelope.
//
// JSON <-> protobuf: a field's JSON name is its protobuf name; maps are JSON
// objects; resource.Quantity is its string, metav1.Time an RFC 3339 string
// (seconds, as Kubernetes' JSON has it), FieldsV1 the JSON object its bytes
// hold. Decoding writes every field the message carries: fields Go always
// encodes read as "" or 0 where the JSON form would leave them out.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/k8s/client.h"
#include "nlohmann/json.hpp"

namespace dra::k8s::internal {

inline constexpr std::string_view kProtobufContentType = "application/vnd.kubernetes.protobuf";

// Whether objects of `ref` (and their lists) have a protobuf schema here.
bool HasProtobufSchema(const ResourceRef& ref);

// Whether a Content-Type header value is the protobuf media type (with or
// without parameters such as ";stream=watch").
bool IsProtobufContentType(std::string_view content_type);

// The wire form of `object`, a JSON object with apiVersion and kind.
// InvalidArgument naming the field when the object has a field, or a value,
// the schema cannot carry: the caller sends JSON instead.
absl::StatusOr<std::string> EncodeProtobuf(const nlohmann::json& object);

// A response body (envelope) as JSON, apiVersion and kind included.
absl::StatusOr<nlohmann::json> DecodeProtobuf(std::string_view body);

// One watch frame's WatchEvent as JSON: {"type": ..., "object": {...}}.
absl::StatusOr<nlohmann::json> DecodeProtobufWatchEvent(std::string_view frame);

// Splits a protobuf watch stream into frames. Feed() may get any chunking. A
// frame longer than max_frame is an error.
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame = size_t{64} << 20) : max_frame_(max_frame) {}

  // Calls on_frame for every completed frame; stops at the first error it
  // returns.
  absl::Status Feed(std::string_view data, const std::function<absl::Status(std::string_view)>& on_frame);
  // Bytes of an unfinished frame, its length prefix included.
  size_t pending() const { return pending_.size(); }

 private:
  size_t max_frame_;
  std::string pending_;
};

}  // namespace dra::k8s::internal
