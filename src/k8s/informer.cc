#include "dra/k8s/informer.h"

#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "base/mutex.h"
#include "base/thread_name.h"

namespace dra::k8s {
namespace {

using nlohmann::json;

std::string StringAt(const json& object, const char* pointer) {
  const json::json_pointer at(pointer);
  if (!object.contains(at) || !object.at(at).is_string()) return "";
  return object.at(at).get<std::string>();
}

// Failures after which the watch resumes from its version; others need a
// new list to know where it stands.
bool Transient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) || absl::IsResourceExhausted(status);
}

// Whether `failed`, a list or watch-list with options.field_selector, is the
// server refusing a field of it that is no field label of the resource there
// (HTTP 400 "field label not supported") and the fallback's selector is due.
bool FallBackAfter(const absl::Status& failed, const InformerOptions& options, bool fell_back) {
  return !fell_back && options.field_selector_fallback.has_value() && absl::IsInvalidArgument(failed) &&
         absl::StrContains(failed.message(), "field label not supported");
}

// The bookmark after a watch-list's initial events.
bool EndsInitialEvents(const json& bookmark) {
  const json::json_pointer at = json::json_pointer("/metadata/annotations") / kInitialEventsEnd;
  return bookmark.contains(at) && bookmark.at(at) == "true";
}

std::string FieldSelectorOf(const InformerOptions& options, bool fell_back) {
  return fell_back ? options.field_selector_fallback->field_selector : options.field_selector;
}

}  // namespace

absl::StatusOr<ListResult> ListAsInformer(Client& client, const InformerOptions& options, bool& fell_back) {
  ListOptions list_options;
  list_options.label_selector = options.label_selector;
  list_options.field_selector = FieldSelectorOf(options, fell_back);
  absl::StatusOr<ListResult> list = client.ListAll(options.resource, options.namespace_, list_options);
  if (!list.ok() && FallBackAfter(list.status(), options, fell_back)) {
    fell_back = true;
    list_options.field_selector = FieldSelectorOf(options, fell_back);
    list = client.ListAll(options.resource, options.namespace_, list_options);
  }
  if (list.ok() && fell_back) std::erase_if(list->items, std::not_fn(options.field_selector_fallback->keep));
  return list;
}

std::string Informer::Key(const json& object) {
  const std::string ns = StringAt(object, "/metadata/namespace");
  const std::string name = StringAt(object, "/metadata/name");
  return ns.empty() ? name : absl::StrCat(ns, "/", name);
}

class Informer::Impl {
 public:
  Impl(std::shared_ptr<Client> client, InformerOptions options, InformerHandler& handler)
      : client_(std::move(client)), options_(std::move(options)), handler_(handler) {
    thread_ = std::thread([this] { Run(); });
    base::NameThread(thread_, "dra-informer");
  }

  ~Impl() { Stop(); }

  void Stop() {
    {
      dra::MutexLock lock(&mu_);
      stopping_ = true;
      cv_.SignalAll();
    }
    watch_stop_.Stop();
    if (thread_.joinable()) thread_.join();
  }

  bool Synced() const {
    dra::MutexLock lock(&mu_);
    return synced_;
  }

  std::optional<json> Get(const std::string& key) const {
    dra::MutexLock lock(&mu_);
    auto it = store_.find(key);
    if (it == store_.end()) return std::nullopt;
    return it->second;
  }

  std::vector<json> List() const {
    dra::MutexLock lock(&mu_);
    std::vector<json> objects;
    objects.reserve(store_.size());
    for (const auto& [key, object] : store_) objects.push_back(object);
    return objects;
  }

  InformerStats Stats() const {
    dra::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  bool Stopping() const {
    dra::MutexLock lock(&mu_);
    return stopping_;
  }

  // Waits `wait` unless Stop() comes first; returns whether it did.
  bool WaitForStop(absl::Duration wait) {
    const absl::Time until = absl::Now() + wait;
    dra::MutexLock lock(&mu_);
    while (!stopping_ && !cv_.WaitWithDeadline(&mu_, until)) {
    }
    return stopping_;
  }

  void Failed(const absl::Status& status, const std::string& context) {
    {
      dra::MutexLock lock(&mu_);
      ++stats_.errors;
    }
    handler_.OnError(status, context);
  }

  // The backoff after failure `attempt` (0-based).
  absl::Duration Backoff(int attempt) const {
    return base::Backoff(attempt, options_.backoff_initial, options_.backoff_max);
  }

  void Run() {
    int failures = 0;
    while (!Stopping()) {
      // How the watch-list stream that listed ended, if the list was one.
      std::optional<absl::Status> stream_ended;
      std::optional<std::string> version = UseWatchList() ? WatchListIntoStore(stream_ended) : ListIntoStore();
      if (!version.has_value()) {
        if (WaitForStop(Backoff(failures++))) return;
        continue;
      }
      failures = 0;
      const std::string listed_at = *version;
      // Watches until a list is needed again.
      while (!Stopping()) {
        const absl::Status ended =
            stream_ended.has_value() ? *std::exchange(stream_ended, std::nullopt) : Watch(*version);
        if (ended.ok()) {
          failures = 0;
          continue;
        }
        if (IsGone(ended)) {
          // Gone at once after a list: the server is not well; do not hammer
          // it. Otherwise the list waits its spread: every node's watch
          // expires at once when kube-apiserver restarts.
          const absl::Duration wait = *version == listed_at
                                          ? Backoff(failures++)
                                          : base::Backoff(0, options_.relist_spread, options_.relist_spread);
          if (wait > absl::ZeroDuration() && WaitForStop(wait)) return;
          break;
        }
        if (Stopping()) return;
        Failed(ended, absl::StrCat("watch ", What()));
        if (WaitForStop(Backoff(failures++))) return;
        if (!Transient(ended)) break;
      }
      dra::MutexLock lock(&mu_);
      synced_ = false;
    }
  }

  // A metadata-only watch cannot list whole objects: its lists are LISTs.
  bool UseWatchList() const {
    return options_.watch_list && !watch_list_refused_ && (!options_.watch_metadata_only || fallback_);
  }

  void NoteFallback() {
    dra::MutexLock lock(&mu_);
    stats_.field_selector_fallback = fallback_;
  }

  // Lists, and hands what differs from the store on; the list's version,
  // or nullopt after a failure (reported).
  std::optional<std::string> ListIntoStore() {
    absl::StatusOr<ListResult> list = ListAsInformer(*client_, options_, fallback_);
    NoteFallback();
    if (!list.ok()) {
      Failed(list.status(), absl::StrCat("list ", What()));
      return std::nullopt;
    }
    std::map<std::string, json> listed;
    for (json& item : list->items) {
      if (options_.transform) options_.transform(item);
      std::string key = Key(item);
      listed.emplace(std::move(key), std::move(item));
    }
    ApplyList(std::move(listed), /*streamed=*/false);
    return list->resource_version;
  }

  // Lists through a watch-list stream, which goes on as the watch: its
  // initial events are collected and applied as a list once the bookmark
  // that ends them comes. Returns the last version seen, with `ended` saying
  // how the stream ended, or nullopt when it failed before its initial
  // events ended (reported). A server with the WatchList feature off refuses
  // the stream, and a LIST follows at once, as every list from then on.
  std::optional<std::string> WatchListIntoStore(std::optional<absl::Status>& ended) {
    WatchOptions watch_options = WatchOptionsOf("");
    watch_options.send_initial_events = true;
    std::map<std::string, json> initial;
    bool listed = false;
    std::string version;
    {
      dra::MutexLock lock(&mu_);
      ++stats_.watches;
    }
    absl::Status status = client_->RunWatch(
        options_.resource, options_.namespace_, watch_options,
        [&](const WatchEvent& event) {
          std::string event_version = StringAt(event.object, "/metadata/resourceVersion");
          if (!listed) {
            if (event.type == "BOOKMARK") {
              if (!EndsInitialEvents(event.object)) return;
              listed = true;
              version = std::move(event_version);
              ApplyList(std::move(initial), /*streamed=*/true);
              return;
            }
            json object = event.object;
            if (!Selected(object)) return;
            if (options_.transform) options_.transform(object);
            std::string key = Key(object);
            if (event.type == "DELETED") {
              initial.erase(key);
            } else {
              initial.insert_or_assign(std::move(key), std::move(object));
            }
            return;
          }
          if (!event_version.empty()) version = std::move(event_version);
          if (event.type != "BOOKMARK") Apply(event);
        },
        watch_stop_);
    if (listed) {
      ended = status;
      return version;
    }
    if (Stopping()) return std::nullopt;
    if (FallBackAfter(status, options_, fallback_)) {
      fallback_ = true;
      NoteFallback();
      return WatchListIntoStore(ended);
    }
    if (absl::IsInvalidArgument(status)) {
      watch_list_refused_ = true;
      return ListIntoStore();
    }
    if (status.ok()) status = absl::UnavailableError("the stream ended before its initial events did");
    Failed(status, absl::StrCat("watch-list ", What()));
    return std::nullopt;
  }

  // Makes the store `listed`, handing the differences on as events, then
  // OnSynced().
  void ApplyList(std::map<std::string, json> listed, bool streamed) {
    std::map<std::string, json> before;
    {
      dra::MutexLock lock(&mu_);
      before = std::move(store_);
      store_ = listed;
      ++stats_.lists;
      if (streamed) ++stats_.watch_lists;
    }
    for (const auto& [key, object] : before) {
      if (!listed.contains(key)) handler_.OnEvent({InformerEvent::Type::kDeleted, object, &object, true});
    }
    for (const auto& [key, object] : listed) {
      auto old = before.find(key);
      if (old == before.end()) {
        handler_.OnEvent({InformerEvent::Type::kAdded, object, nullptr, true});
      } else if (StringAt(old->second, "/metadata/resourceVersion") != StringAt(object, "/metadata/resourceVersion")) {
        handler_.OnEvent({InformerEvent::Type::kModified, object, &old->second, true});
      }
    }
    {
      dra::MutexLock lock(&mu_);
      synced_ = true;
    }
    handler_.OnSynced();
  }

  WatchOptions WatchOptionsOf(const std::string& version) const {
    WatchOptions watch_options;
    watch_options.resource_version = version;
    watch_options.label_selector = options_.label_selector;
    watch_options.field_selector = FieldSelectorOf(options_, fallback_);
    watch_options.allow_bookmarks = true;
    watch_options.metadata_only = options_.watch_metadata_only && !fallback_;
    return watch_options;
  }

  // One watch from `version`, which follows the events; returns why it ended.
  absl::Status Watch(std::string& version) {
    const WatchOptions watch_options = WatchOptionsOf(version);
    {
      dra::MutexLock lock(&mu_);
      ++stats_.watches;
    }
    return client_->RunWatch(
        options_.resource, options_.namespace_, watch_options,
        [&](const WatchEvent& event) {
          std::string event_version = StringAt(event.object, "/metadata/resourceVersion");
          if (!event_version.empty()) version = std::move(event_version);
          if (event.type != "BOOKMARK") Apply(event);
        },
        watch_stop_);
  }

  // For error contexts: the collection and the selectors in use.
  std::string What() const {
    const std::string field_selector = FieldSelectorOf(options_, fallback_);
    return absl::StrCat(options_.resource.resource, field_selector.empty() ? "" : " " + field_selector,
                        options_.label_selector.empty() ? "" : " " + options_.label_selector);
  }
  // What the server's selector selects, refined by the fallback's.
  bool Selected(const json& object) const { return !fallback_ || options_.field_selector_fallback->keep(object); }

  void Apply(const WatchEvent& event) {
    json object = event.object;
    const bool selected = Selected(object);
    if (options_.transform) options_.transform(object);
    const std::string key = Key(object);
    std::optional<json> old;
    {
      dra::MutexLock lock(&mu_);
      auto it = store_.find(key);
      if (it != store_.end()) old = it->second;
      // Outside the refined selection: not there, or it just left it.
      if (!selected && !old.has_value()) return;
      if (event.type == "DELETED" || !selected) {
        if (it != store_.end()) store_.erase(it);
      } else {
        store_[key] = object;
      }
    }
    const json* previous = old.has_value() ? &*old : nullptr;
    if (event.type == "DELETED" || !selected) {
      handler_.OnEvent({InformerEvent::Type::kDeleted, object, previous, false});
    } else {
      handler_.OnEvent(
          {old.has_value() ? InformerEvent::Type::kModified : InformerEvent::Type::kAdded, object, previous, false});
    }
  }

  const std::shared_ptr<Client> client_;
  const InformerOptions options_;
  InformerHandler& handler_;
  const WatchStop watch_stop_;
  // The server refused options_.field_selector (informer thread only).
  bool fallback_ = false;
  // The server refused a watch-list: lists are LISTs (informer thread only).
  bool watch_list_refused_ = false;

  mutable dra::Mutex mu_;
  dra::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, json> store_ ABSL_GUARDED_BY(mu_);
  InformerStats stats_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;  // last: starts after everything above exists
};

absl::StatusOr<std::unique_ptr<Informer>> Informer::Start(std::shared_ptr<Client> client, InformerOptions options,
                                                          InformerHandler& handler) {
  if (client == nullptr) return absl::InvalidArgumentError("k8s::Informer: client: Required value");
  if (options.resource.resource.empty() || options.resource.version.empty()) {
    return absl::InvalidArgumentError("InformerOptions: resource: Required value");
  }
  if (!options.resource.namespaced && !options.namespace_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("InformerOptions: namespace_: Invalid value: \"", options.namespace_,
                                                   "\": ", options.resource.resource, " are cluster-scoped"));
  }
  if (options.relist_spread < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("InformerOptions: relist_spread: Invalid value: must not be negative");
  }
  if (options.backoff_initial <= absl::ZeroDuration() || options.backoff_max < options.backoff_initial) {
    return absl::InvalidArgumentError(
        "InformerOptions: backoff_initial: Invalid value: must be positive and at most backoff_max");
  }
  return std::unique_ptr<Informer>(
      new Informer(std::make_unique<Impl>(std::move(client), std::move(options), handler)));
}

Informer::Informer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Informer::~Informer() { Stop(); }
void Informer::Stop() { impl_->Stop(); }
bool Informer::Synced() const { return impl_->Synced(); }
std::optional<json> Informer::Get(const std::string& key) const { return impl_->Get(key); }
std::vector<json> Informer::List() const { return impl_->List(); }
InformerStats Informer::Stats() const { return impl_->Stats(); }

}  // namespace dra::k8s
