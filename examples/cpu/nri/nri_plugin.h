// nri::Plugin: an NRI plugin that stays connected to the container runtime.
// It dials the runtime's NRI socket, registers under a name and index,
// subscribes to container creation, stop and removal, hands what the runtime
// reports to its Handler, and dials again (with backoff) whenever the
// runtime goes away, as it does when containerd restarts; each new
// connection starts with a Synchronize of every container.
//
// With a lock file, only the instance holding it connects: during a rolling
// update of the DaemonSet the new pod waits for the old one to exit, so two
// plugins never adjust the same container (the runtime would refuse the
// container as a conflict).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api.pb.h"
#include "dra/log.h"
#include "nri_connection.h"

namespace nri {

namespace api = ::nri::pkg::api::v1alpha1;

// What the plugin does with the runtime's reports. Called on the
// connection's reader thread, one at a time; it must answer quickly and
// never call Plugin::UpdateContainers from within (the runtime holds its NRI
// lock while it waits for the answer).
class Handler {
 public:
  virtual ~Handler() = default;
  // Every pod and container the runtime has, at each (re)connection; the
  // updates to apply to them.
  virtual std::vector<api::ContainerUpdate> Synchronize(const std::vector<api::PodSandbox>& pods,
                                                        const std::vector<api::Container>& containers) = 0;
  // A container about to be created: its adjustment, and updates of others.
  virtual api::CreateContainerResponse CreateContainer(const api::PodSandbox& pod, const api::Container& container) = 0;
  virtual void StopContainer(const api::PodSandbox& pod, const api::Container& container) = 0;
  virtual void RemoveContainer(const api::PodSandbox& pod, const api::Container& container) = 0;
};

struct PluginOptions {
  std::string socket_path = "/var/run/nri/nri.sock";
  std::string name;          // [a-zA-Z0-9_.+-]+
  std::string index = "00";  // two digits: the order among plugins
  std::string lock_path;     // "": no lock
  absl::Duration min_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
};

class Plugin {
 public:
  // Starts connecting at once, in its own thread.
  Plugin(PluginOptions options, Handler& handler, dra::Logger logger);
  // Disconnects and releases the lock.
  ~Plugin();

  // Asks the runtime to apply `updates` to running containers; an error
  // names what failed, Unavailable when not connected. Not from a Handler.
  absl::Status UpdateContainers(const std::vector<api::ContainerUpdate>& updates);
  bool connected() const;

 private:
  void Run();
  // Waits `d` or until stopping; false once stopping.
  bool Sleep(absl::Duration d);
  bool AcquireLock();
  // One connection, from dial to close; why it ended.
  absl::Status Session();
  absl::StatusOr<std::string> Serve(const std::string& service, const std::string& method, const std::string& payload,
                                    api::SynchronizeRequest& sync);

  const PluginOptions options_;
  Handler& handler_;
  const dra::Logger logger_;
  int lock_fd_ = -1;  // Run() only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;             // guarded by mu_
  std::shared_ptr<Connection> conn_;  // guarded by mu_; the current one, in any phase
  bool synchronized_ = false;         // guarded by mu_; conn_ has answered Synchronize
  std::thread thread_;                // last: starts after the rest exists
};

}  // namespace nri
