// The HTTP side of dra::k8s::Client: one libcurl multi handle driven by an
// I/O thread of its own, the easy handles it reuses, and the options of each
// request (URL, headers, TLS, credentials). Internal.
#pragma once

#include <curl/curl.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "k8s/auth.h"

namespace dra::k8s::internal {

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // from the API root, without the query
  std::string query;   // "" or "?..."
  std::string body;
  std::string content_type;
  // A watch stream. It is never asked to be compressed: the API server
  // closes one gzip member per flush, and libcurl decodes only the first.
  bool stream = false;
  // Accept the protobuf wire format (the resource has a schema in
  // protobuf_codec.h and the config allows it); JSON otherwise.
  bool protobuf = false;
  // Its protobuf body is the one that finds out whether the server takes
  // protobuf bodies (Client::Impl::body_format).
  bool body_probe = false;
  // Ask for PartialObjectMetadata instead of the objects.
  bool metadata_only = false;
  // The caller's deadline (a kubelet call's): the request is not throttled,
  // sent or retried past it, and each attempt's timeout ends by then.
  absl::Time deadline = absl::InfiniteFuture();

  std::string Context() const { return absl::StrCat(method, " ", path); }
};

struct HttpResponse {
  CURLcode curl_code = CURLE_OK;
  std::string curl_error;
  long http_code = 0;
  std::string body;
  size_t max_body = 0;
  bool body_too_large = false;  // the transfer stopped at max_body
  std::string retry_after;
  std::string content_type;
  bool request_sent = false;
  absl::Duration timeout;  // of this transfer
};

// Whether curl's error is a TLS alert: the server rejected our client
// certificate.
bool IsTlsAlert(const std::string& curl_error);

// One request's transfer on the multi handle: the requesting thread submits
// it and waits; the I/O thread runs it and completes it.
struct Transfer {
  CURL* easy = nullptr;
  bool stream = false;  // a watch: holds a connection of its own over HTTP/1.1
  dra::Mutex mu;
  dra::CondVar cv;
  bool done ABSL_GUARDED_BY(mu) = false;
  CURLcode result ABSL_GUARDED_BY(mu) = CURLE_OK;
  bool cancelling ABSL_GUARDED_BY(mu) = false;  // Cancel() asked, the I/O thread not through with it

  void Complete(CURLcode code) {
    dra::MutexLock lock(&mu);
    result = code;
    done = true;
    cv.Signal();  // under the lock: the waiter frees this right after
  }
  void CancelDone() {
    dra::MutexLock lock(&mu);
    cancelling = false;
    cv.Signal();
  }
};

// The header lists that Transport::Configure gives a handle; they must
// outlive its transfer.
struct CurlLists {
  CurlLists() = default;
  CurlLists(const CurlLists&) = delete;
  CurlLists& operator=(const CurlLists&) = delete;
  ~CurlLists();

  curl_slist* headers = nullptr;
  curl_slist* connect_to = nullptr;
};

// The connections to one API server. Every request and watch runs on one
// multi handle, driven by the I/O thread alone, so that they share
// connections: as HTTP/2 streams on one TLS connection when the server speaks
// h2 (as client-go's do), else over HTTP/1.1 connections. Thread-safe.
class Transport {
 public:
  // `config` must outlive the transport.
  explicit Transport(const ClientConfig& config) : config_(config) {}
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Checks the config's server URL and TLS settings (matching cert/key,
  // readable files, CA vs insecure).
  absl::Status Init();
  // Creates the multi handle and starts the I/O thread. After Init().
  absl::Status Start();

  // Sends `request` once and waits for the whole response.
  HttpResponse Perform(const HttpRequest& request, const Credentials& creds, absl::Duration timeout);
  // The error of a response that did not come (a curl error) or was too
  // large, naming the server.
  absl::Status TransportError(const HttpResponse& response, const std::string& context) const;

  // For streams, whose owner reads what arrives while the transfer runs:
  // Configure() sets every option but the error buffer and the write and
  // header targets; Submit() hands the fully configured transfer to the I/O
  // thread, which completes it.
  void Configure(CURL* handle, const HttpRequest& request, const Credentials& creds, absl::Duration timeout,
                 CurlLists& lists) const;
  void Submit(Transfer& transfer);
  // Ends a submitted transfer early: the I/O thread completes it with
  // CURLE_ABORTED_BY_CALLBACK unless it completed already. The transfer
  // must live until `cancelling` is false again, not only until `done`.
  void Cancel(Transfer& transfer);

  // Counts a request that got `http_code` (0: no response) for
  // RequestCounts(). Perform() counts its own.
  void CountRequest(std::string verb, long http_code);
  // See Client::RequestCounts().
  std::vector<RequestCount> RequestCounts() const;

 private:
  // Sets base_url_, connect_to_ and host_header_ from config_.server.
  absl::Status ParseServer();
  absl::Status CheckTlsConfig() const;
  // Adds submitted transfers, drives the multi handle and completes finished
  // transfers.
  void IoLoop();
  // Runs `easy` (fully configured) on the multi handle; returns its result.
  CURLcode RunTransfer(CURL* easy);
  CURL* Acquire();
  void Release(CURL* handle);
  void ConfigureConnection(CURL* handle, const HttpRequest& request, absl::Duration timeout, CurlLists& lists) const;
  void AddHeaders(CURL* handle, const HttpRequest& request, const Credentials& creds, CurlLists& lists) const;
  void ConfigureTls(CURL* handle, const Credentials& creds) const;

  static void LockShare(CURL*, curl_lock_data, curl_lock_access, void* transport) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Transport*>(transport)->tls_sessions_mu_.Lock();
  }
  static void UnlockShare(CURL*, curl_lock_data, void* transport) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    static_cast<Transport*>(transport)->tls_sessions_mu_.Unlock();
  }

  const ClientConfig& config_;
  std::string base_url_;     // scheme://host:port[/prefix], host replaced by tls_server_name
  std::string connect_to_;   // "tls_server_name:port:host:port" when tls_server_name is set
  std::string host_header_;  // "Host: host:port" when tls_server_name is set
  std::string user_agent_;

  mutable dra::Mutex counts_mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_ ABSL_GUARDED_BY(counts_mu_);  // by verb and code

  dra::Mutex pool_mu_;
  std::vector<CURL*> pool_ ABSL_GUARDED_BY(pool_mu_);

  // TLS sessions, shared by every handle of the client: where it has more
  // than one connection (HTTP/1.1, one per watch and busy request; HTTP/2
  // beyond the server's stream limit), resuming the session spares
  // kube-apiserver a full handshake (its certificate signature) for each.
  CURLSH* tls_sessions_ = nullptr;
  dra::Mutex tls_sessions_mu_;

  CURLM* multi_ = nullptr;
  std::thread io_thread_;
  dra::Mutex io_mu_;
  bool io_stop_ ABSL_GUARDED_BY(io_mu_) = false;
  std::vector<Transfer*> io_submitted_ ABSL_GUARDED_BY(io_mu_);  // not yet on `multi_`
  std::vector<Transfer*> io_cancelled_ ABSL_GUARDED_BY(io_mu_);
};

}  // namespace dra::k8s::internal
