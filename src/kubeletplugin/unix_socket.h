// Unix-domain socket files for the gRPC servers: clear our own stale socket
// before listening, tighten its mode after, remove it on stop, probe it for
// /healthz.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace dra::kubeletplugin::internal {

// Removes a socket left at `path` by an earlier run. Anything else there is
// an error: the Helper never deletes a file that is not a socket.
absl::Status ClearStaleSocket(const std::string& path);

// Removes the socket at `path` if it is one; a missing file is fine.
void RemoveSocket(const std::string& path);

// Whether something listens on the socket at `path`: connects and closes at
// once. The error says why not ("connect /x/dra.sock: No such file ...").
absl::Status ProbeSocket(const std::string& path);

}  // namespace dra::kubeletplugin::internal
