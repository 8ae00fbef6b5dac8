// bench_slice_codec: what the client's protobuf codec costs per ResourceSlice,
// the work every simulated node of bench/scale/scale.sh (and every driver's
// publisher) does per write and per watch event: a PUT's body encoded, its
// response decoded, a watch event decoded, and the JSON read into the typed
// slice. Prints a table: microseconds and heap allocations per object.
//
//   bench_gpu_slices [--gpus 8] | bench_slice_codec [--rounds 20000]
//
// The slice is the first of the list on stdin with the metadata kube-apiserver
// returns (uid, resourceVersion, an owner reference, managedFields).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <iterator>
#include <new>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "dra/k8s/resource_slice_json.h"
#include "k8s/protobuf_codec.h"
#include "nlohmann/json.hpp"

namespace {

size_t allocations = 0;  // operator new calls; the benchmark is single-threaded

using nlohmann::json;

json AsStored(json slice) {
  json& metadata = slice["metadata"];
  metadata["name"] = "node-0001-gpu.example.com-x7k2p";
  metadata["generateName"] = "node-0001-gpu.example.com-";
  metadata["uid"] = "0b7e5c3a-6c1f-4f0e-9d7e-2f1c3b4a5d6e";
  metadata["resourceVersion"] = "123456";
  metadata["generation"] = 1;
  metadata["creationTimestamp"] = "2026-12-07T22:49:15Z";
  metadata["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                              {"kind", "Node"},
                                              {"name", "node-0001"},
                                              {"uid", "1a2b3c4d-0000-1111-2222-333344445555"},
                                              {"controller", true}}});
  metadata["managedFields"] =
      json::array({{{"manager", "bench_slice_publisher"},
                    {"operation", "Update"},
                    {"apiVersion", "resource.k8s.io/v1"},
                    {"time", "2026-12-07T22:49:15Z"},
                    {"fieldsType", "FieldsV1"},
                    {"fieldsV1",
                     {{"f:metadata", {{"f:generateName", json::object()}, {"f:ownerReferences", json::object()}}},
                      {"f:spec",
                       {{"f:devices", json::object()},
                        {"f:driver", json::object()},
                        {"f:nodeName", json::object()},
                        {"f:pool", {{"f:generation", json::object()}, {"f:name", json::object()}}}}}}}}});
  return slice;
}

// A watch frame's WatchEvent around `envelope` (the length prefix is the
// stream's, not the frame's): type = 1, object = 2 (RawExtension, raw = 1).
std::string WatchFrame(const std::string& envelope) {
  const auto field = [](int number, const std::string& bytes) {
    std::string out(1, static_cast<char>(number << 3 | 2));
    for (size_t n = bytes.size();; n >>= 7) {
      out += static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
      if (n < 0x80) break;
    }
    return out + bytes;
  };
  return field(1, "MODIFIED") + field(2, field(1, envelope));
}

}  // namespace

// Counting replacements of the global operators; GCC takes free() on what
// a (replaced) new returned for a mismatch once they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  ++allocations;
  if (void* p = std::malloc(n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

int main(int argc, char** argv) {
  int rounds = 20000;
  if (argc == 3 && std::string(argv[1]) == "--rounds") {
    if (!absl::SimpleAtoi(argv[2], &rounds) || rounds <= 0) rounds = 0;
  } else if (argc != 1) {
    rounds = 0;
  }
  if (rounds == 0) {
    std::fprintf(stderr, "usage: bench_gpu_slices | %s [--rounds N]\n", argv[0]);
    return 2;
  }
  const std::string input(std::istreambuf_iterator<char>(std::cin), {});
  const json list = json::parse(input, nullptr, false);
  if (list.is_discarded() || !list.contains("items") || list["items"].empty()) {
    std::fprintf(stderr, "bench_slice_codec: stdin is not a ResourceSliceList with items (bench_gpu_slices)\n");
    return 2;
  }
  const json object = AsStored(list["items"][0]);
  const absl::StatusOr<std::string> wire = dra::k8s::internal::EncodeProtobuf(object);
  if (!wire.ok()) {
    std::fprintf(stderr, "bench_slice_codec: %s\n", wire.status().ToString().c_str());
    return 1;
  }
  const std::string frame = WatchFrame(*wire);
  if (!dra::k8s::internal::DecodeProtobufWatchEvent(frame).ok()) {
    std::fprintf(stderr, "bench_slice_codec: the watch frame does not decode\n");
    return 1;
  }

  const struct {
    const char* what;
    std::function<bool()> run;
  } steps[] = {
      {"encode (JSON -> protobuf, a write's body)", [&] { return dra::k8s::internal::EncodeProtobuf(object).ok(); }},
      {"decode (protobuf -> JSON, a write's response)", [&] { return dra::k8s::internal::DecodeProtobuf(*wire).ok(); }},
      {"decode (protobuf -> JSON, a watch event)",
       [&] { return dra::k8s::internal::DecodeProtobufWatchEvent(frame).ok(); }},
      {"typed (JSON -> k8s::ResourceSlice)", [&] { return dra::k8s::ResourceSliceFromJson(object).ok(); }},
  };
  std::printf("ResourceSlice of %zu devices: %zu bytes of JSON, %zu of protobuf; %d rounds\n\n",
              object["spec"]["devices"].size(), object.dump().size(), wire->size(), rounds);
  std::printf("| step | us per object | allocations per object |\n|---|---:|---:|\n");
  for (const auto& step : steps) {
    const size_t allocations_before = allocations;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < rounds; ++i) {
      if (!step.run()) return 1;
    }
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    std::printf("| %s | %.1f | %zu |\n", step.what, took.count() / rounds,
                (allocations - allocations_before) / static_cast<size_t>(rounds));
  }
  return 0;
}
