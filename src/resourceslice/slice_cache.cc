#include "resourceslice/slice_cache.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "dra/k8s/resource_slice_json.h"

namespace dra::resourceslice {

using nlohmann::json;

std::string StringAt(const json& object, const json::json_pointer& pointer) {
  if (!object.contains(pointer)) return "";
  const json& value = object.at(pointer);
  return value.is_string() ? value.get<std::string>() : "";
}

int64_t ResourceVersionOf(const json& object) {
  int64_t rv = 0;
  auto meta = object.find("metadata");
  if (meta == object.end()) return 0;
  auto it = meta->find("resourceVersion");
  if (it == meta->end() || !it->is_string()) return 0;
  return absl::SimpleAtoi(it->get<std::string>(), &rv) ? rv : 0;
}

std::shared_ptr<const CachedSlice> MakeCached(json object) {
  auto cached = std::make_shared<CachedSlice>();
  absl::StatusOr<k8s::ResourceSlice> typed = k8s::ResourceSliceFromJson(object);
  if (typed.ok()) cached->typed = *std::move(typed);
  cached->resource_version = ResourceVersionOf(object);
  cached->pool = StringAt(object, json::json_pointer("/spec/pool/name"));
  cached->node_local = !StringAt(object, json::json_pointer("/spec/nodeName")).empty();
  if (cached->typed) object.erase("spec");
  cached->object = std::move(object);
  return cached;
}

std::vector<std::string> SliceCache::Apply(const std::string& name, const k8s::InformerEvent& event) {
  const int64_t version = ResourceVersionOf(event.object);
  observed_version_ = std::max(observed_version_, version);
  const auto it = slices_.find(name);
  const bool cached = it != slices_.end();
  if (event.type == k8s::InformerEvent::Type::kDeleted) {
    // Watched and not cached, or cached at a later version: this publisher
    // deleted it already, or wrote it again since.
    if (!cached || (!event.from_list && it->second->resource_version > version)) return {};
    std::vector<std::string> pools = {it->second->pool};
    slices_.erase(it);
    return pools;
  }
  // Already cached at this version or later: this publisher wrote it.
  if (cached && it->second->resource_version >= version) return {};
  std::shared_ptr<const CachedSlice> slice = MakeCached(event.object);
  std::vector<std::string> pools;
  if (cached && it->second->pool != slice->pool) pools.push_back(it->second->pool);
  pools.push_back(slice->pool);
  slices_[name] = std::move(slice);
  return pools;
}

bool SliceCache::StoreUnlessOutdated(const std::string& name, std::shared_ptr<const CachedSlice> slice) {
  auto it = slices_.find(name);
  if (it == slices_.end() ? slice->resource_version <= observed_version_
                          : it->second->resource_version > slice->resource_version) {
    return false;
  }
  slices_[name] = std::move(slice);
  return true;
}

}  // namespace dra::resourceslice
