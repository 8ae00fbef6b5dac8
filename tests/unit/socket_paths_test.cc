#include <catch2/catch.hpp>

#include "kubeletplugin/socket_paths.h"

namespace dra::kubeletplugin::internal {
namespace {

TEST_CASE("default socket names", "[socket_paths]") {
  SocketPaths paths = ComputeSocketPaths("gpu.example.com", "/var/lib/kubelet/plugins_registry",
                                         "/var/lib/kubelet/plugins/gpu.example.com", "", "", "");
  CHECK(paths.registrar == "/var/lib/kubelet/plugins_registry/gpu.example.com-reg.sock");
  CHECK(paths.dra == "/var/lib/kubelet/plugins/gpu.example.com/dra.sock");
}

TEST_CASE("explicit socket names win without a rolling-update UID", "[socket_paths]") {
  SocketPaths paths = ComputeSocketPaths("gpu.example.com", "/r", "/p", "", "old-reg.sock", "plugin.sock");
  CHECK(paths.registrar == "/r/old-reg.sock");
  CHECK(paths.dra == "/p/plugin.sock");
}

TEST_CASE("rolling-update names carry the UID when they fit", "[socket_paths]") {
  SocketPaths paths =
      ComputeSocketPaths("gpu.example.com", "/var/lib/kubelet/plugins_registry",
                         "/var/lib/kubelet/plugins/gpu.example.com", "0b3c1a9e-5f7d-4c2b-9a8e-1d2c3b4a5f6e", "", "");
  CHECK(paths.registrar ==
        "/var/lib/kubelet/plugins_registry/gpu.example.com-0b3c1a9e-5f7d-4c2b-9a8e-1d2c3b4a5f6e-reg.sock");
  CHECK(paths.dra == "/var/lib/kubelet/plugins/gpu.example.com/dra-0b3c1a9e-5f7d-4c2b-9a8e-1d2c3b4a5f6e.sock");
}

TEST_CASE("hashes are unpadded base64url of sha256 prefixes", "[socket_paths]") {
  // sha256("abc") = ba7816bf8f01cfea414140de5dae2223...
  CHECK(HashForSocketName("abc", 8) == "ungWv48Bz-o");
  CHECK(HashForSocketName("abc", 16).size() == 22);
  // 8 bytes end inside the 11th character; the first 10 are shared.
  CHECK(HashForSocketName("abc", 16).substr(0, 10) == "ungWv48Bz-");
}

TEST_CASE("long paths fall back to hashed names, in the Go helper's order", "[socket_paths]") {
  const std::string uid = "0b3c1a9e-5f7d-4c2b-9a8e-1d2c3b4a5f6e";
  const std::string driver = "gpu.example.com";

  // Room for the short registrar form but not the full one.
  const std::string registry = "/" + std::string(55, 'r');
  SocketPaths medium = ComputeSocketPaths(driver, registry, "/p", uid, "", "");
  CHECK(medium.registrar == registry + "/" + driver + "-" + HashForSocketName(uid, 8) + "-reg.sock");
  CHECK(medium.registrar.size() < kUnixPathMax);

  // No room for either: the driver-independent form.
  const std::string deep = "/" + std::string(75, 'r');
  SocketPaths longest = ComputeSocketPaths(driver, deep, "/p", uid, "", "");
  CHECK(longest.registrar == deep + "/dra-" + HashForSocketName(driver + std::string(1, '\0') + uid, 16) + "-reg.sock");

  const std::string data = "/" + std::string(70, 'd');
  SocketPaths dra = ComputeSocketPaths(driver, "/r", data, uid, "", "");
  CHECK(dra.dra == data + "/dra-" + HashForSocketName(uid, 8));
  CHECK(dra.dra.size() < kUnixPathMax);
}

TEST_CASE("the path length check is strict: 107 bytes fit, 108 do not", "[socket_paths]") {
  const std::string uid = "u";
  const std::string name = "dra-u.sock";  // 10 bytes
  const std::string fits = "/" + std::string(107 - 1 - 1 - name.size(), 'd');
  CHECK(ComputeSocketPaths("d.example.com", "/r", fits, uid, "", "").dra == fits + "/" + name);
  const std::string too_long = fits + "d";
  CHECK(ComputeSocketPaths("d.example.com", "/r", too_long, uid, "", "").dra ==
        too_long + "/dra-" + HashForSocketName(uid, 8));
}

}  // namespace
}  // namespace dra::kubeletplugin::internal
