// A plain HTTP/1.1 GET on loopback, for the Helper's /metrics and /healthz.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>

namespace dra::testing {

// The status line and the body, or nothing when no whole response came (no
// server listening yet, say).
inline std::optional<std::pair<std::string, std::string>> TryHttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) response.append(buffer, n);
  }
  close(fd);
  const size_t head_end = response.find("\r\n\r\n");
  if (head_end == std::string::npos) return std::nullopt;
  return std::make_pair(response.substr(0, response.find("\r\n")), response.substr(head_end + 4));
}

// As TryHttpGet; a missing response fails the test.
inline std::pair<std::string, std::string> HttpGet(int port, const std::string& path) {
  std::optional<std::pair<std::string, std::string>> response = TryHttpGet(port, path);
  REQUIRE(response.has_value());
  return *std::move(response);
}

}  // namespace dra::testing
