// nri::Connection: one NRI connection. NRI multiplexes two ttrpc connections
// over one Unix stream socket, each chunk prefixed by its connection ID and
// length: on connection 1 the runtime calls the plugin's Plugin service, on
// connection 2 the plugin calls the runtime's Runtime service. A Connection
// serves one of the two and calls the other, so the same class is the plugin
// (Dial) and, in tests, the runtime.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace nri {

inline constexpr uint32_t kPluginServiceConn = 1;
inline constexpr uint32_t kRuntimeServiceConn = 2;
inline constexpr char kPluginService[] = "nri.pkg.api.v1alpha1.Plugin";
inline constexpr char kRuntimeService[] = "nri.pkg.api.v1alpha1.Runtime";

class Connection {
 public:
  // Answers one call: the reply's serialized message, or the error status
  // sent back. Runs on the connection's reader thread, one call at a time,
  // so it must not Call() on the same connection.
  using Handler = std::function<absl::StatusOr<std::string>(const std::string& service, const std::string& method,
                                                            const std::string& payload)>;

  // The plugin's side: connects to the runtime's socket, serves the Plugin
  // service with `handler` and calls the Runtime service.
  static absl::StatusOr<std::unique_ptr<Connection>> Dial(const std::string& socket_path, Handler handler);
  // Over a connected socket `fd` (taken over): serves `serve_conn`, calls on
  // `call_conn`.
  Connection(int fd, uint32_t serve_conn, uint32_t call_conn, Handler handler);
  // Closes the socket and waits for the reader.
  ~Connection();

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Calls `service`.`method` on the other side and waits for its answer up
  // to `timeout`: the reply's payload, its error status, DeadlineExceeded, or
  // Unavailable once the connection is closed.
  absl::StatusOr<std::string> Call(const std::string& service, const std::string& method, const std::string& payload,
                                   absl::Duration timeout);
  // Blocks until the connection is closed (by the other side, an error or
  // Close()); why it closed.
  absl::Status Wait();
  // Closes the connection; pending and later calls fail Unavailable.
  void Close();

 private:
  struct Pending {
    bool done = false;
    absl::StatusOr<std::string> reply = absl::UnknownError("no answer");
  };

  void ReadLoop();
  // One whole ttrpc message received on `conn`.
  void OnMessage(uint32_t conn, uint32_t stream, uint8_t type, const std::string& data);
  absl::Status Send(uint32_t conn, uint32_t stream, uint8_t type, const std::string& data);
  void Closed(absl::Status why);

  const int fd_;
  const uint32_t serve_conn_;
  const uint32_t call_conn_;
  const Handler handler_;
  std::mutex write_mu_;  // one message's chunks are never interleaved with another's
  std::mutex mu_;
  std::condition_variable cv_;
  uint32_t next_stream_ = 1;              // guarded by mu_
  std::map<uint32_t, Pending*> pending_;  // guarded by mu_
  bool closed_ = false;                   // guarded by mu_
  absl::Status why_closed_;               // guarded by mu_
  std::thread reader_;                    // last: starts after the rest exists
};

}  // namespace nri
