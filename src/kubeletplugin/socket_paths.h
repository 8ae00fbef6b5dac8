// Where the Helper's two sockets live, including the rolling-update names and
// their shortened forms for the 108-byte AF_UNIX path limit. The scheme is
// the Go kubeletplugin helper's, so a kubelet sees the same names from both.
#pragma once

#include <string>

namespace dra::kubeletplugin::internal {

struct SocketPaths {
  std::string registrar;  // absolute path in the registrar dir
  std::string dra;        // absolute path in the plugin data dir
};

// sun_path holds 108 bytes including the terminating NUL.
inline constexpr size_t kUnixPathMax = 108;

// Names with an empty `rolling_update_uid`: `registrar_name` or
// "<driver>-reg.sock", and `dra_name` or "dra.sock". With a UID:
// "<driver>-<uid>-reg.sock", else "<driver>-<b64(sha256(uid))[:8 bytes]>-reg.sock",
// else "dra-<b64(sha256(driver NUL uid))[:16 bytes]>-reg.sock" (the first
// whose full path fits); "dra-<uid>.sock", else "dra-<b64(sha256(uid))[:8 bytes]>".
// b64 is unpadded base64url.
SocketPaths ComputeSocketPaths(const std::string& driver_name, const std::string& registrar_dir,
                               const std::string& plugin_data_dir, const std::string& rolling_update_uid,
                               const std::string& registrar_name, const std::string& dra_name);

// Unpadded base64url of the first `bytes` bytes of sha256(data).
std::string HashForSocketName(const std::string& data, size_t bytes);

}  // namespace dra::kubeletplugin::internal
