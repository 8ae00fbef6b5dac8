// The slices one of the publisher's field selectors selects, as the
// publisher knows them: from its informer and from its own writes, each
// kept at the newest resourceVersion seen.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dra/k8s/informer.h"
#include "dra/k8s/resource_slice.h"
#include "nlohmann/json.hpp"

namespace dra::resourceslice {

// The string at `pointer` in `object`, or "" when there is none.
std::string StringAt(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer);
// metadata.resourceVersion as a number; 0 when missing or not one.
int64_t ResourceVersionOf(const nlohmann::json& object);

// One slice as the server last showed it.
struct CachedSlice {
  nlohmann::json object;                    // without "spec", which `typed` holds: an update replaces it anyway
  std::optional<k8s::ResourceSlice> typed;  // nullopt: the codec refused it
  int64_t resource_version = 0;
  std::string pool;
  bool node_local = false;  // spec.nodeName is set
};

std::shared_ptr<const CachedSlice> MakeCached(nlohmann::json object);

// Not thread-safe: the publisher guards each cache with its lock.
class SliceCache {
 public:
  using Slices = std::map<std::string, std::shared_ptr<const CachedSlice>>;  // by name

  // Applies the informer's event about slice `name`. Returns the pools whose
  // slices it changed (the old and the new pool of a slice that moved); none
  // when the cache knew it already (this publisher wrote it). A list shows
  // the server as it is, whole: a slice the list lacks is gone, whatever
  // this publisher wrote to it since.
  std::vector<std::string> Apply(const std::string& name, const k8s::InformerEvent& event);
  // Caches what this publisher wrote or read itself, unless the informer
  // brought something newer already: a later version, or the deletion.
  // Returns whether it did.
  bool StoreUnlessOutdated(const std::string& name, std::shared_ptr<const CachedSlice> slice);
  // Caches a slice as listed, whatever was cached.
  void Store(const std::string& name, std::shared_ptr<const CachedSlice> slice) { slices_[name] = std::move(slice); }
  void Erase(const std::string& name) { slices_.erase(name); }

  const Slices& slices() const { return slices_; }

 private:
  Slices slices_;
  // The newest resourceVersion the informer has shown: a slice this
  // publisher wrote at or before it, and not cached, was deleted since
  // (the watch told of the deletion before the write's response came).
  int64_t observed_version_ = 0;
};

}  // namespace dra::resourceslice
