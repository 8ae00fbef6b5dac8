#include "common/https_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace example {
namespace {

constexpr size_t kMaxHeaderBytes = 64 << 10;
// A client that stops sending or reading frees its worker after this long.
constexpr timeval kIoTimeout{10, 0};

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown TLS error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

const char* Reason(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 501:
      return "Not Implemented";
    default:
      return "Error";
  }
}

// Which file a path names now: a Secret volume replaces its files by
// swapping a symlink, which changes the inode behind the path.
using FileIdentity = std::tuple<dev_t, ino_t, int64_t, int64_t, off_t>;

std::optional<FileIdentity> Identify(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino, st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size};
}

struct SslCtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using SslCtxPtr = std::shared_ptr<SSL_CTX>;

absl::StatusOr<SslCtxPtr> LoadContext(const std::string& cert_file, const std::string& key_file) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()), SslCtxFree());
  if (ctx == nullptr) return absl::InternalError(absl::StrCat("TLS context: ", OpenSslError()));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("TLS certificate file \"", cert_file, "\": ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return absl::InvalidArgumentError(absl::StrCat("TLS private key file \"", key_file,
                                                     "\" does not match the certificate in \"", cert_file, "\""));
    }
    return absl::InvalidArgumentError(absl::StrCat("TLS private key file \"", key_file, "\": ", OpenSslError()));
  }
  return ctx;
}

struct ParsedHead {
  std::string method;
  std::string path;
  std::string content_type;
  std::optional<size_t> content_length;
  bool chunked = false;
};

std::optional<ParsedHead> ParseHead(absl::string_view head) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  std::vector<absl::string_view> request_line = absl::StrSplit(lines[0], ' ');
  if (request_line.size() != 3 || !absl::StartsWith(request_line[2], "HTTP/1.")) return std::nullopt;
  ParsedHead parsed;
  parsed.method = std::string(request_line[0]);
  parsed.path = std::string(request_line[1].substr(0, request_line[1].find('?')));
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) return std::nullopt;
    const std::string name = absl::AsciiStrToLower(lines[i].substr(0, colon));
    const absl::string_view value = absl::StripAsciiWhitespace(lines[i].substr(colon + 1));
    if (name == "content-type") {
      parsed.content_type = std::string(value);
    } else if (name == "content-length") {
      size_t length = 0;
      if (!absl::SimpleAtoi(value, &length)) return std::nullopt;
      parsed.content_length = length;
    } else if (name == "transfer-encoding") {
      parsed.chunked = true;
    }
  }
  return parsed;
}

}  // namespace

class HttpsServer::Impl {
 public:
  Impl(Options options, Handler handler, int listen_fd, int wake_fd, int port, SslCtxPtr ctx)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        port_(port),
        ctx_(std::move(ctx)),
        cert_identity_(Identify(options_.cert_file)),
        key_identity_(Identify(options_.key_file)) {
    for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { Work(); });
  }

  ~Impl() {
    stopping_ = true;
    const uint64_t one = 1;
    const ssize_t written = write(wake_fd_, &one, sizeof(one));  // fails only on counter overflow
    (void)written;
    {
      std::scoped_lock lock(mu_);
      for (int fd : connections_) shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& worker : workers_) worker.join();
    close(listen_fd_);
    close(wake_fd_);
  }

  int port() const { return port_; }

 private:
  void Work() {
    // A peer that closes early makes a TLS write raise SIGPIPE in this
    // thread: blocked, the write returns EPIPE instead.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    while (!stopping_) {
      if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents != 0) return;
      if ((fds[0].revents & POLLIN) == 0) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;  // another worker took it
      {
        std::scoped_lock lock(mu_);
        if (stopping_) {
          close(fd);
          return;
        }
        connections_.insert(fd);
      }
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &kIoTimeout, sizeof(kIoTimeout));
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kIoTimeout, sizeof(kIoTimeout));
      Serve(fd);
      {
        std::scoped_lock lock(mu_);
        connections_.erase(fd);
      }
      close(fd);
    }
  }

  // The context for a new connection: reloaded first when the files changed.
  // A renewal caught half-written fails to load; the old context serves
  // until the next connection tries again.
  SslCtxPtr CurrentContext() {
    const std::optional<FileIdentity> cert = Identify(options_.cert_file);
    const std::optional<FileIdentity> key = Identify(options_.key_file);
    std::scoped_lock lock(mu_);
    if (cert == cert_identity_ && key == key_identity_) return ctx_;
    absl::StatusOr<SslCtxPtr> loaded = LoadContext(options_.cert_file, options_.key_file);
    if (!loaded.ok()) {
      if (!reload_failed_)
        options_.logger.Error("Keeping the previous TLS certificate",
                              {{"err", std::string(loaded.status().message())}});
      reload_failed_ = true;
      return ctx_;
    }
    options_.logger.Info("Loaded the renewed TLS certificate", {{"certFile", options_.cert_file}});
    ctx_ = *std::move(loaded);
    cert_identity_ = cert;
    key_identity_ = key;
    reload_failed_ = false;
    return ctx_;
  }

  void Serve(int fd) {
    const SslCtxPtr ctx = CurrentContext();
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    if (ssl == nullptr || SSL_set_fd(ssl.get(), fd) != 1) return;
    ERR_clear_error();
    if (SSL_accept(ssl.get()) != 1) {
      options_.logger.InfoV(4, "TLS handshake failed", {{"err", OpenSslError()}});
      return;
    }
    const HttpsResponse response = Answer(ssl.get());
    const std::string message = absl::StrCat(
        "HTTP/1.1 ", response.code, " ", Reason(response.code), "\r\nContent-Type: ", response.content_type,
        "\r\nContent-Length: ", response.body.size(), "\r\nConnection: close\r\n\r\n", response.body);
    for (size_t done = 0; done < message.size();) {
      const int n = SSL_write(ssl.get(), message.data() + done, static_cast<int>(message.size() - done));
      if (n <= 0) return;
      done += n;
    }
    SSL_shutdown(ssl.get());
  }

  HttpsResponse Answer(SSL* ssl) {
    std::string received;
    char buffer[16384];
    size_t head_end;
    while ((head_end = received.find("\r\n\r\n")) == std::string::npos) {
      if (received.size() > kMaxHeaderBytes) return {400, "text/plain; charset=utf-8", "request head too large\n"};
      const int n = SSL_read(ssl, buffer, sizeof(buffer));
      if (n <= 0) return {400, "text/plain; charset=utf-8", "incomplete request\n"};
      received.append(buffer, n);
    }
    const std::optional<ParsedHead> head = ParseHead(absl::string_view(received).substr(0, head_end));
    if (!head.has_value()) return {400, "text/plain; charset=utf-8", "malformed request\n"};
    if (head->chunked) return {501, "text/plain; charset=utf-8", "chunked request bodies are not supported\n"};
    const size_t length = head->content_length.value_or(0);
    if (length > options_.max_body_bytes) {
      return {413, "text/plain; charset=utf-8",
              absl::StrCat("request body over ", options_.max_body_bytes, " bytes\n")};
    }
    HttpsRequest request{head->method, head->path, head->content_type, received.substr(head_end + 4)};
    while (request.body.size() < length) {
      const int n = SSL_read(ssl, buffer, sizeof(buffer));
      if (n <= 0) return {400, "text/plain; charset=utf-8", "incomplete request body\n"};
      request.body.append(buffer, n);
    }
    request.body.resize(length);
    return handler_(request);
  }

  Options options_;
  const Handler handler_;
  const int listen_fd_;
  const int wake_fd_;  // eventfd that ends the workers
  const int port_;
  std::atomic<bool> stopping_ = false;
  std::vector<std::thread> workers_;

  std::mutex mu_;
  std::set<int> connections_;                  // guarded by mu_
  SslCtxPtr ctx_;                              // guarded by mu_
  std::optional<FileIdentity> cert_identity_;  // guarded by mu_
  std::optional<FileIdentity> key_identity_;   // guarded by mu_
  bool reload_failed_ = false;                 // guarded by mu_
};

absl::StatusOr<std::unique_ptr<HttpsServer>> HttpsServer::Start(Options options, Handler handler) {
  absl::StatusOr<SslCtxPtr> ctx = LoadContext(options.cert_file, options.key_file);
  if (!ctx.ok()) return ctx.status();
  const std::string endpoint = absl::StrCat(options.host.empty() ? "*" : options.host, ":", options.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  const std::string port_text = std::to_string(options.port);
  if (int rc =
          getaddrinfo(options.host.empty() ? nullptr : options.host.c_str(), port_text.c_str(), &hints, &addresses);
      rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("HTTPS address ", endpoint, ": ", gai_strerror(rc)));
  }
  // Non-blocking: the workers that lose the race for a connection go back
  // to poll() instead of waiting in accept().
  const int fd = socket(addresses->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  const bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
                  bind(fd, addresses->ai_addr, addresses->ai_addrlen) == 0 && listen(fd, 64) == 0;
  freeaddrinfo(addresses);
  if (!ok) {
    const std::string error = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("listen on HTTPS address ", endpoint, ": ", error));
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  const int port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    close(fd);
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  return std::unique_ptr<HttpsServer>(
      new HttpsServer(std::make_unique<Impl>(std::move(options), std::move(handler), fd, wake, port, *std::move(ctx))));
}

HttpsServer::HttpsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpsServer::~HttpsServer() = default;
int HttpsServer::port() const { return impl_->port(); }

}  // namespace example
