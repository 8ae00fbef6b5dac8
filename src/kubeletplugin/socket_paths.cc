#include "kubeletplugin/socket_paths.h"

#include <openssl/sha.h>

#include <array>
#include <string_view>

namespace dra::kubeletplugin::internal {
namespace {

std::string Base64UrlUnpadded(const unsigned char* data, size_t size) {
  static constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((size * 4 + 2) / 3);
  size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const uint32_t n = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  const size_t rest = size - i;
  if (rest > 0) {
    uint32_t n = data[i] << 16;
    if (rest == 2) n |= data[i + 1] << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    if (rest == 2) out += kAlphabet[(n >> 6) & 63];
  }
  return out;
}

bool Fits(const std::string& dir, const std::string& name) { return dir.size() + 1 + name.size() < kUnixPathMax; }

}  // namespace

std::string HashForSocketName(const std::string& data, size_t bytes) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest;
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  return Base64UrlUnpadded(digest.data(), std::min(bytes, digest.size()));
}

SocketPaths ComputeSocketPaths(const std::string& driver_name, const std::string& registrar_dir,
                               const std::string& plugin_data_dir, const std::string& rolling_update_uid,
                               const std::string& registrar_name, const std::string& dra_name) {
  std::string registrar = registrar_name;
  std::string dra = dra_name;
  const std::string& uid = rolling_update_uid;
  if (uid.empty()) {
    if (registrar.empty()) registrar = driver_name + "-reg.sock";
    if (dra.empty()) dra = "dra.sock";
  } else {
    if (registrar.empty()) {
      const std::string candidates[] = {
          driver_name + "-" + uid + "-reg.sock",
          driver_name + "-" + HashForSocketName(uid, 8) + "-reg.sock",
          "dra-" + HashForSocketName(driver_name + std::string(1, '\0') + uid, 16) + "-reg.sock",
      };
      registrar = candidates[2];
      for (const std::string& candidate : candidates) {
        if (Fits(registrar_dir, candidate)) {
          registrar = candidate;
          break;
        }
      }
    }
    if (dra.empty()) {
      dra = "dra-" + uid + ".sock";
      // The short form has no ".sock" so that it fits under the default
      // plugin dir even with the longest driver name.
      if (!Fits(plugin_data_dir, dra)) dra = "dra-" + HashForSocketName(uid, 8);
    }
  }
  return SocketPaths{registrar_dir + "/" + registrar, plugin_data_dir + "/" + dra};
}

}  // namespace dra::kubeletplugin::internal
