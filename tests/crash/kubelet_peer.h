// The kubelet peer (tests/e2e/kubeletpeer: the kubelet's own plugin manager
// and DRA client) in its serve step, as a child process: the harness sends
// it one kubelet call at a time and reads the answer, while the driver it
// calls is started, killed and restarted beside it. The peer registers each
// driver instance as the kubelet does, from the registration socket.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace dra::testing {

class KubeletPeer {
 public:
  // Starts `binary` watching `registry_dir` for driver `driver`; its stderr
  // and the lines that answer no command go to `log_file`.
  static absl::StatusOr<std::unique_ptr<KubeletPeer>> Start(const std::string& binary, const std::string& registry_dir,
                                                            const std::string& driver, const std::string& log_file);
  // Ends the serve step (closes the peer's stdin) and waits for the peer.
  ~KubeletPeer();
  KubeletPeer(const KubeletPeer&) = delete;
  KubeletPeer& operator=(const KubeletPeer&) = delete;

  // Sends `command` ({"op":..}, see kubeletpeer/serve.go) with a new id,
  // which it returns.
  absl::StatusOr<int64_t> Send(nlohmann::json command);
  // The answer to command `id`: the peer's JSON line for it. Lines before it
  // (registrations, answers nobody waits for) go to the log.
  absl::StatusOr<nlohmann::json> Receive(int64_t id, absl::Duration timeout);
  absl::StatusOr<nlohmann::json> Call(nlohmann::json command, absl::Duration timeout);

 private:
  KubeletPeer() = default;
  void Log(const std::string& line) const;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string log_file_;
  std::string pending_;  // read, not yet a whole line
  int64_t next_id_ = 1;
};

}  // namespace dra::testing
