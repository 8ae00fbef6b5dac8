// Client::RunWatch on a thread of its own, for tests that act while a watch
// runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "base/mutex.h"
#include "dra/k8s/client.h"

namespace dra::testing {

// Starts the watch at once; destroying it stops the watch and joins its
// thread.
class WatchThread {
 public:
  WatchThread(std::shared_ptr<k8s::Client> client, const k8s::ResourceRef& ref, std::string ns,
              k8s::WatchOptions options, std::function<void(const k8s::WatchEvent&)> on_event)
      : thread_([this, client = std::move(client), ref, ns = std::move(ns), options = std::move(options),
                 on_event = std::move(on_event)] {
          absl::Status status = client->RunWatch(ref, ns, options, on_event, stop_);
          MutexLock lock(&mu_);
          status_ = std::move(status);
          done_ = true;
          cv_.SignalAll();
        }) {}
  ~WatchThread() {
    Stop();
    thread_.join();
  }
  WatchThread(const WatchThread&) = delete;
  WatchThread& operator=(const WatchThread&) = delete;

  // Thread-safe; may be called from the event callback.
  void Stop() { stop_.Stop(); }
  bool Stopped() const { return stop_.Stopped(); }
  // Blocks until the watch has ended; returns what RunWatch returned.
  absl::Status Wait() {
    MutexLock lock(&mu_);
    while (!done_) cv_.Wait(&mu_);
    return status_;
  }
  bool Done() {
    MutexLock lock(&mu_);
    return done_;
  }

 private:
  const k8s::WatchStop stop_;
  Mutex mu_;
  CondVar cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: it uses the members above
};

}  // namespace dra::testing
