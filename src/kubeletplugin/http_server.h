// A small HTTP/1.1 server for /metrics and /healthz: one thread, GET and
// HEAD only, one request per connection. Not for anything else.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace dra::kubeletplugin::internal {

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const std::string& path)>;

  // `endpoint` is "host:port", "[v6]:port" or ":port" (all interfaces);
  // port 0 picks a free one.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& endpoint, Handler handler);
  ~HttpServer();

  int port() const { return port_; }

 private:
  HttpServer(int listen_fd, int wake_fd, int port, Handler handler);
  void Serve();
  void HandleConnection(int fd);

  const int listen_fd_;
  const int wake_fd_;  // eventfd that ends Serve()
  const int port_;
  const Handler handler_;
  std::thread thread_;
};

}  // namespace dra::kubeletplugin::internal
