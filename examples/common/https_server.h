// example::HttpsServer: HTTP/1.1 over TLS, as the API server calls an
// admission webhook: a request with a Content-Length body, one answer, the
// connection closed. The certificate and key are read again when their files
// change (a Secret volume's update after cert-manager renews it), so a renewed
// certificate needs no restart. Not a general web server: no chunked bodies,
// no keep-alive, no HTTP/2.
//
//   example::HttpsServer::Options options;
//   options.port = 443;
//   options.cert_file = "/cert/tls.crt";
//   options.key_file = "/cert/tls.key";
//   auto server = example::HttpsServer::Start(options, [](const example::HttpsRequest& request) {
//     return example::HttpsResponse{200, "text/plain", "ok"};
//   });
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "dra/log.h"

namespace example {

struct HttpsRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query
  std::string content_type;
  std::string body;
};

struct HttpsResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpsServer {
 public:
  using Handler = std::function<HttpsResponse(const HttpsRequest&)>;

  struct Options {
    std::string host;       // empty: every interface
    int port = 443;         // 0 picks a free one
    std::string cert_file;  // PEM: the server's certificate, then its chain
    std::string key_file;   // PEM
    int workers = 4;        // connections served at once
    size_t max_body_bytes = 8 << 20;
    dra::Logger logger;
  };

  // InvalidArgument naming the file when the certificate or key cannot be
  // used; Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpsServer>> Start(Options options, Handler handler);
  // Stops accepting, ends the connections in progress, joins the workers.
  ~HttpsServer();

  int port() const;

 private:
  class Impl;
  explicit HttpsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace example
