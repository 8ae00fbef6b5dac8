// Credential sources behind dra::k8s::Client: a token file that is re-read
// when it changes, an exec credential plugin with its cache, and the
// Authenticator that combines them as ClientConfig describes. Internal; the
// unit tests use these directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "dra/k8s/client_config.h"

namespace dra::k8s::internal {

// A bearer token kept in a file. Token() stat()s the file on every call (a
// microsecond) and re-reads it when inode, size or mtime changed. Thread-safe.
class TokenFileSource {
 public:
  explicit TokenFileSource(std::string path) : path_(std::move(path)) {}

  // The current token, whitespace trimmed. Errors name the file, not the
  // content. If the file becomes unreadable after a successful read, the last
  // token is returned (a rotation in progress must not fail requests).
  absl::StatusOr<std::string> Token();
  // Forget the cached content so the next Token() reads the file.
  void Invalidate();
  // How many times the file has been read (for tests).
  int reads() const;

  const std::string& path() const { return path_; }

 private:
  struct FileId {
    uint64_t dev = 0;
    uint64_t ino = 0;
    int64_t size = -1;
    int64_t mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  };

  const std::string path_;
  mutable dra::Mutex mu_;
  std::optional<FileId> id_ ABSL_GUARDED_BY(mu_);
  std::string token_ ABSL_GUARDED_BY(mu_);
  int reads_ ABSL_GUARDED_BY(mu_) = 0;
};

// What an exec plugin returned.
struct ExecCredential {
  std::string token;
  std::string client_certificate_data;  // PEM
  std::string client_key_data;          // PEM
  std::optional<absl::Time> expiration;
};

// Parses the plugin's stdout. Errors never quote the output.
absl::StatusOr<ExecCredential> ParseExecCredential(const std::string& output, const std::string& api_version);

// Runs an exec plugin and caches its credential until expiration (forever
// when the plugin gives none) or Invalidate(). Thread-safe; concurrent callers
// wait for one run.
class ExecCredentialProvider {
 public:
  // `cluster` is what provide_cluster_info passes: the rest of the config.
  ExecCredentialProvider(ExecConfig exec, const ClientConfig& cluster);

  absl::StatusOr<ExecCredential> Get();
  void Invalidate();
  // How many times the plugin has run (for tests).
  int runs() const;

 private:
  absl::StatusOr<ExecCredential> Run();
  // Why the plugin's exit status `wstatus` is a failure; OK for exit 0.
  absl::Status ExitError(const std::string& where, int wstatus) const;

  const ExecConfig exec_;
  std::string exec_info_;  // KUBERNETES_EXEC_INFO
  mutable dra::Mutex mu_;
  std::optional<ExecCredential> cached_ ABSL_GUARDED_BY(mu_);
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
};

// The credentials one request uses.
struct Credentials {
  std::string bearer_token;     // empty: none
  std::string client_cert_pem;  // from an exec plugin; empty: config's
  std::string client_key_pem;
};

// Picks the credential sources from a ClientConfig: token_file, else
// bearer_token, else the exec plugin's token; the exec plugin's client
// certificate when it returns one.
class Authenticator {
 public:
  explicit Authenticator(const ClientConfig& config);

  absl::StatusOr<Credentials> Get();
  // After a 401: drops cached credentials. True if there is anything that
  // could change (a token file or an exec plugin), i.e. one retry is worth it.
  bool Refresh();

  TokenFileSource* token_file() { return token_file_.get(); }
  ExecCredentialProvider* exec() { return exec_.get(); }

 private:
  std::string bearer_token_;
  std::unique_ptr<TokenFileSource> token_file_;
  std::unique_ptr<ExecCredentialProvider> exec_;
};

// Reads a whole file. Errors name the file and errno's text.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace dra::k8s::internal
