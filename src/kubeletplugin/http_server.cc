#include "kubeletplugin/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/thread_name.h"

namespace dra::kubeletplugin::internal {
namespace {

constexpr size_t kMaxRequestBytes = 8192;

const char* Reason(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

void WriteAll(int fd, const std::string& data) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return;
    done += n;
  }
}

absl::Status SplitEndpoint(const std::string& endpoint, std::string& host, std::string& port) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("HTTP endpoint \"", endpoint, "\": want host:port or :port"));
  }
  host = endpoint.substr(0, colon);
  port = endpoint.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& endpoint, Handler handler) {
  std::string host, port;
  if (absl::Status status = SplitEndpoint(endpoint, host, port); !status.ok()) return status;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &addresses); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("HTTP endpoint \"", endpoint, "\": ", gai_strerror(rc)));
  }
  int fd = socket(addresses->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  const bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
                  bind(fd, addresses->ai_addr, addresses->ai_addrlen) == 0 && listen(fd, 16) == 0;
  freeaddrinfo(addresses);
  if (!ok) {
    const std::string error = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("listen on HTTP endpoint \"", endpoint, "\": ", error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    close(fd);
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  return std::unique_ptr<HttpServer>(new HttpServer(fd, wake, bound_port, std::move(handler)));
}

HttpServer::HttpServer(int listen_fd, int wake_fd, int port, Handler handler)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), handler_(std::move(handler)) {
  thread_ = std::thread([this] { Serve(); });
  base::NameThread(thread_, "dra-http");
}

HttpServer::~HttpServer() {
  const uint64_t one = 1;
  const ssize_t written = write(wake_fd_, &one, sizeof(one));  // fails only on counter overflow
  (void)written;
  thread_.join();
  close(listen_fd_);
  close(wake_fd_);
}

void HttpServer::Serve() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      HandleConnection(fd);
      close(fd);
    }
  }
}

void HttpServer::HandleConnection(int fd) {
  // A slow or silent client must not hold the only thread for long.
  const timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, n);
  }
  const size_t method_end = request.find(' ');
  const size_t path_end = request.find(' ', method_end + 1);
  if (method_end == std::string::npos || path_end == std::string::npos) return;
  const std::string method = request.substr(0, method_end);
  std::string path = request.substr(method_end + 1, path_end - method_end - 1);
  path = path.substr(0, path.find('?'));

  HttpResponse response;
  if (method != "GET" && method != "HEAD") {
    response = HttpResponse{405, "text/plain; charset=utf-8", "method not allowed\n"};
  } else {
    response = handler_(path);
  }
  std::string head =
      absl::StrCat("HTTP/1.1 ", response.code, " ", Reason(response.code), "\r\nContent-Type: ", response.content_type,
                   "\r\nContent-Length: ", response.body.size(), "\r\nConnection: close\r\n\r\n");
  WriteAll(fd, method == "HEAD" ? head : head + response.body);
}

}  // namespace dra::kubeletplugin::internal
