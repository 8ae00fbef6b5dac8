#include "nri_connection.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ttrpc.pb.h"

namespace nri {

namespace {

constexpr size_t kMuxHeader = 8;     // conn ID, length
constexpr size_t kTtrpcHeader = 10;  // length, stream ID, type, flags
constexpr size_t kMaxMessage = 4 << 20;
// The Go multiplexer hands a reader one whole chunk, and ttrpc reads through
// a 4096-byte buffer: a chunk longer than that fails the runtime's read.
constexpr size_t kMaxChunk = 4096;
constexpr uint8_t kRequest = 1;
constexpr uint8_t kResponse = 2;

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t GetU32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

absl::Status ErrnoStatus(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// Reads exactly `n` bytes; an error or EOF (named) otherwise.
absl::Status ReadFull(int fd, char* buf, size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, buf, n);
    if (got == 0) return absl::UnavailableError("the runtime closed the connection");
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read");
    }
    buf += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Connection>> Connection::Dial(const std::string& socket_path, Handler handler) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("NRI socket path ", socket_path, " is too long"));
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    absl::Status status = ErrnoStatus(absl::StrCat("connect to ", socket_path));
    ::close(fd);
    return status;
  }
  return std::make_unique<Connection>(fd, kPluginServiceConn, kRuntimeServiceConn, std::move(handler));
}

Connection::Connection(int fd, uint32_t serve_conn, uint32_t call_conn, Handler handler)
    : fd_(fd), serve_conn_(serve_conn), call_conn_(call_conn), handler_(std::move(handler)), reader_([this] {
        ReadLoop();
      }) {}

Connection::~Connection() {
  Close();
  reader_.join();
  ::close(fd_);
}

void Connection::Close() { ::shutdown(fd_, SHUT_RDWR); }

void Connection::ReadLoop() {
  std::map<uint32_t, std::string> streams;  // unparsed bytes per multiplexed connection
  char header[kMuxHeader];
  for (;;) {
    if (absl::Status read = ReadFull(fd_, header, kMuxHeader); !read.ok()) return Closed(read);
    const uint32_t conn = GetU32(header);
    const uint32_t length = GetU32(header + 4);
    if (length > kMaxMessage + kTtrpcHeader) {
      return Closed(absl::DataLossError(absl::StrCat("a chunk of ", length, " bytes: more than NRI sends")));
    }
    std::string chunk(length, '\0');
    if (absl::Status read = ReadFull(fd_, chunk.data(), length); !read.ok()) return Closed(read);
    if (conn != serve_conn_ && conn != call_conn_) continue;  // as NRI does with unknown connections
    std::string& bytes = streams[conn];
    bytes += chunk;
    while (bytes.size() >= kTtrpcHeader) {
      const uint32_t size = GetU32(bytes.data());
      if (size > kMaxMessage) {
        return Closed(absl::DataLossError(absl::StrCat("a ttrpc message of ", size, " bytes: over 4 MiB")));
      }
      if (bytes.size() < kTtrpcHeader + size) break;
      const uint32_t stream = GetU32(bytes.data() + 4);
      const auto type = static_cast<uint8_t>(bytes[8]);
      OnMessage(conn, stream, type, bytes.substr(kTtrpcHeader, size));
      bytes.erase(0, kTtrpcHeader + size);
    }
  }
}

void Connection::OnMessage(uint32_t conn, uint32_t stream, uint8_t type, const std::string& data) {
  if (conn == serve_conn_ && type == kRequest) {
    ttrpc::Request request;
    ttrpc::Response response;
    absl::StatusOr<std::string> reply = request.ParseFromString(data)
                                            ? handler_(request.service(), request.method(), request.payload())
                                            : absl::InvalidArgumentError("undecodable ttrpc request");
    if (reply.ok()) {
      response.set_payload(*std::move(reply));
    } else {
      response.mutable_status()->set_code(static_cast<int32_t>(reply.status().code()));
      response.mutable_status()->set_message(std::string(reply.status().message()));
    }
    // A failed send closes the connection; the reader sees it next.
    (void)Send(conn, stream, kResponse, response.SerializeAsString());
    return;
  }
  if (conn != call_conn_ || type != kResponse) return;
  ttrpc::Response response;
  absl::StatusOr<std::string> reply = absl::DataLossError("undecodable ttrpc response");
  if (response.ParseFromString(data)) {
    reply = response.status().code() != 0
                ? absl::StatusOr<std::string>(absl::Status(static_cast<absl::StatusCode>(response.status().code()),
                                                           response.status().message()))
                : absl::StatusOr<std::string>(response.payload());
  }
  std::scoped_lock lock(mu_);
  auto it = pending_.find(stream);
  if (it == pending_.end()) return;  // its caller gave up
  it->second->reply = std::move(reply);
  it->second->done = true;
  cv_.notify_all();
}

absl::Status Connection::Send(uint32_t conn, uint32_t stream, uint8_t type, const std::string& data) {
  if (data.size() > kMaxMessage) {
    return absl::ResourceExhaustedError(absl::StrCat("a ttrpc message of ", data.size(), " bytes: over 4 MiB"));
  }
  std::string message;
  PutU32(message, static_cast<uint32_t>(data.size()));
  PutU32(message, stream);
  message.push_back(static_cast<char>(type));
  message.push_back(0);  // flags
  message += data;
  std::string wire;
  for (size_t at = 0; at < message.size(); at += kMaxChunk) {
    const size_t n = std::min(kMaxChunk, message.size() - at);
    PutU32(wire, conn);
    PutU32(wire, static_cast<uint32_t>(n));
    wire.append(message, at, n);
  }
  std::scoped_lock lock(write_mu_);
  for (size_t at = 0; at < wire.size();) {
    const ssize_t sent = ::send(fd_, wire.data() + at, wire.size() - at, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoStatus("send");
      Close();
      return status;
    }
    at += static_cast<size_t>(sent);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Connection::Call(const std::string& service, const std::string& method,
                                             const std::string& payload, absl::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  Pending pending;
  uint32_t stream = 0;
  {
    std::scoped_lock lock(mu_);
    if (closed_) return absl::UnavailableError(absl::StrCat("NRI connection closed: ", why_closed_.message()));
    stream = next_stream_;
    next_stream_ += 2;
    pending_[stream] = &pending;
  }
  ttrpc::Request request;
  request.set_service(service);
  request.set_method(method);
  request.set_payload(payload);
  request.set_timeout_nano(absl::ToInt64Nanoseconds(timeout));
  absl::Status sent = Send(call_conn_, stream, kRequest, request.SerializeAsString());
  std::unique_lock lock(mu_);
  if (sent.ok()) cv_.wait_until(lock, deadline, [&] { return pending.done || closed_; });
  pending_.erase(stream);
  if (!sent.ok()) return sent;
  if (pending.done) return std::move(pending.reply);
  if (closed_) return absl::UnavailableError(absl::StrCat("NRI connection closed: ", why_closed_.message()));
  return absl::DeadlineExceededError(
      absl::StrCat(service, "/", method, ": no answer in ", absl::FormatDuration(timeout)));
}

absl::Status Connection::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return closed_; });
  return why_closed_;
}

void Connection::Closed(absl::Status why) {
  std::scoped_lock lock(mu_);
  closed_ = true;
  why_closed_ = std::move(why);
  cv_.notify_all();
}

}  // namespace nri
