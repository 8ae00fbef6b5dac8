#include "k8s/auth.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace dra::k8s::internal {
namespace {

using nlohmann::json;

// An exec plugin that takes longer than this is killed.
constexpr absl::Duration kExecTimeout = absl::Seconds(60);
// More output than this is not a credential.
constexpr size_t kMaxExecOutput = 1 << 20;

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string message = absl::StrCat("reading ", path, ": ", ErrnoText(err));
    return err == ENOENT ? absl::NotFoundError(message) : absl::FailedPreconditionError(message);
  }
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat("reading ", path, ": ", ErrnoText(err)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// ---------------------------------------------------------------------------
// TokenFileSource

absl::StatusOr<std::string> TokenFileSource::Token() {
  dra::MutexLock lock(&mu_);
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) {
    int err = errno;
    if (id_.has_value()) return token_;  // keep the last good token during a rotation
    return absl::FailedPreconditionError(absl::StrCat("token file ", path_, ": ", ErrnoText(err)));
  }
  FileId id{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
            static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  if (id_.has_value() && *id_ == id) return token_;
  absl::StatusOr<std::string> content = ReadWholeFile(path_);
  ++reads_;
  if (!content.ok()) {
    if (id_.has_value()) return token_;
    return absl::FailedPreconditionError(absl::StrCat("token file: ", content.status().message()));
  }
  std::string token(absl::StripAsciiWhitespace(*content));
  if (token.empty()) {
    if (id_.has_value()) return token_;  // a writer truncated it and has not written yet
    return absl::FailedPreconditionError(absl::StrCat("token file ", path_, " is empty"));
  }
  token_ = std::move(token);
  id_ = id;
  return token_;
}

void TokenFileSource::Invalidate() {
  dra::MutexLock lock(&mu_);
  id_.reset();
}

int TokenFileSource::reads() const {
  dra::MutexLock lock(&mu_);
  return reads_;
}

// ---------------------------------------------------------------------------
// Exec plugin

absl::StatusOr<ExecCredential> ParseExecCredential(const std::string& output, const std::string& api_version) {
  json doc = json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::UnauthenticatedError("exec plugin: output is not a JSON ExecCredential object");
  }
  auto string_field = [](const json& object, const char* key) -> std::string {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string kind = string_field(doc, "kind");
  if (kind != "ExecCredential") {
    return absl::UnauthenticatedError(absl::StrCat("exec plugin: output has kind \"", kind, "\", want ExecCredential"));
  }
  std::string got_version = string_field(doc, "apiVersion");
  if (got_version != api_version) {
    return absl::UnauthenticatedError(
        absl::StrCat("exec plugin: output has apiVersion \"", got_version, "\", want \"", api_version, "\""));
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return absl::UnauthenticatedError("exec plugin: ExecCredential has no status");
  }
  ExecCredential cred;
  cred.token = string_field(*status, "token");
  cred.client_certificate_data = string_field(*status, "clientCertificateData");
  cred.client_key_data = string_field(*status, "clientKeyData");
  if (cred.client_certificate_data.empty() != cred.client_key_data.empty()) {
    return absl::UnauthenticatedError(
        "exec plugin: ExecCredential status has only one of clientCertificateData and clientKeyData");
  }
  if (cred.token.empty() && cred.client_certificate_data.empty()) {
    return absl::UnauthenticatedError(
        "exec plugin: ExecCredential status has neither token nor clientCertificateData/clientKeyData");
  }
  std::string expiration = string_field(*status, "expirationTimestamp");
  if (!expiration.empty()) {
    absl::Time t;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, expiration, &t, &err)) {
      return absl::UnauthenticatedError(
          absl::StrCat("exec plugin: status.expirationTimestamp \"", expiration, "\" is not RFC 3339: ", err));
    }
    cred.expiration = t;
  }
  return cred;
}

ExecCredentialProvider::ExecCredentialProvider(ExecConfig exec, const ClientConfig& cluster) : exec_(std::move(exec)) {
  json spec = {{"interactive", false}};
  if (exec_.provide_cluster_info) {
    json c = {{"server", cluster.server}};
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    std::string ca = cluster.ca_data;
    if (ca.empty() && !cluster.ca_file.empty()) {
      if (auto data = ReadWholeFile(cluster.ca_file); data.ok()) ca = *std::move(data);
    }
    if (!ca.empty()) c["certificate-authority-data"] = absl::Base64Escape(ca);
    if (!cluster.proxy_url.empty()) c["proxy-url"] = cluster.proxy_url;
    spec["cluster"] = std::move(c);
  }
  json info = {{"apiVersion", exec_.api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}};
  exec_info_ = info.dump();
}

absl::StatusOr<ExecCredential> ExecCredentialProvider::Get() {
  dra::MutexLock lock(&mu_);
  if (cached_.has_value() && (!cached_->expiration.has_value() || absl::Now() < *cached_->expiration)) {
    return *cached_;
  }
  cached_.reset();
  absl::StatusOr<ExecCredential> cred = Run();
  ++runs_;
  if (!cred.ok()) return cred.status();
  cached_ = *cred;
  return cred;
}

void ExecCredentialProvider::Invalidate() {
  dra::MutexLock lock(&mu_);
  cached_.reset();
}

int ExecCredentialProvider::runs() const {
  dra::MutexLock lock(&mu_);
  return runs_;
}

namespace {

// The environment as NAME=value strings: ours, then `extra` in order (a name
// given again replaces the earlier value in place).
std::vector<std::string> ExecEnvironment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  auto put = [&](const std::string& name, const std::string& value) {
    if (env.find(name) == env.end()) order.push_back(name);
    env[name] = value;
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    put(entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const auto& [name, value] : extra) put(name, value);
  std::vector<std::string> strings;
  strings.reserve(order.size());
  for (const std::string& name : order) strings.push_back(name + "=" + env[name]);
  return strings;
}

std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

struct PluginOutput {
  std::string text;
  bool timed_out = false;
  bool too_much = false;  // more than kMaxExecOutput
};

// Reads `fd` until EOF, `deadline` or kMaxExecOutput bytes.
PluginOutput ReadPluginOutput(int fd, absl::Time deadline) {
  PluginOutput output;
  while (true) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      output.timed_out = true;
      return output;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int n = ::poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return output;
    }
    if (n == 0) continue;
    char buf[4096];
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return output;
    }
    if (got == 0) return output;
    output.text.append(buf, static_cast<size_t>(got));
    if (output.text.size() > kMaxExecOutput) {
      output.too_much = true;
      return output;
    }
  }
}

}  // namespace

absl::StatusOr<ExecCredential> ExecCredentialProvider::Run() {
  const std::string where = absl::StrCat("exec plugin ", exec_.command);
  if (exec_.interactive_mode == "Always") {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": interactiveMode Always needs a terminal, which this client never has"));
  }
  std::vector<std::pair<std::string, std::string>> extra;
  for (const ExecEnvVar& var : exec_.env) extra.emplace_back(var.name, var.value);
  extra.emplace_back("KUBERNETES_EXEC_INFO", exec_info_);
  std::vector<std::string> env_strings = ExecEnvironment(extra);
  std::vector<std::string> arg_strings = {exec_.command};
  arg_strings.insert(arg_strings.end(), exec_.args.begin(), exec_.args.end());

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat(where, ": pipe: ", ErrnoText(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, exec_.command.c_str(), &actions, nullptr, NullTerminated(arg_strings).data(),
                          NullTerminated(env_strings).data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    std::string message = absl::StrCat(where, ": cannot run: ", ErrnoText(rc));
    if (rc == ENOENT && !exec_.install_hint.empty()) absl::StrAppend(&message, "\n", exec_.install_hint);
    return absl::FailedPreconditionError(message);
  }

  const PluginOutput output = ReadPluginOutput(out[0], absl::Now() + kExecTimeout);
  ::close(out[0]);
  if (output.timed_out || output.too_much) ::kill(pid, SIGKILL);
  int wstatus = 0;
  pid_t waited;
  do {
    waited = ::waitpid(pid, &wstatus, 0);
  } while (waited < 0 && errno == EINTR);
  if (output.timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(where, ": no answer within ", absl::FormatDuration(kExecTimeout), "; killed"));
  }
  if (output.too_much) return absl::UnauthenticatedError(absl::StrCat(where, ": output larger than 1 MiB"));
  if (waited == pid) {
    if (absl::Status exit = ExitError(where, wstatus); !exit.ok()) return exit;
  }
  absl::StatusOr<ExecCredential> cred = ParseExecCredential(output.text, exec_.api_version);
  if (!cred.ok()) {
    return absl::Status(cred.status().code(), absl::StrCat(where, ": ", cred.status().message()));
  }
  return cred;
}

absl::Status ExecCredentialProvider::ExitError(const std::string& where, int wstatus) const {
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0) {
    std::string message = absl::StrCat(where, ": exited with status ", WEXITSTATUS(wstatus));
    if (WEXITSTATUS(wstatus) == 127 && !exec_.install_hint.empty()) absl::StrAppend(&message, "\n", exec_.install_hint);
    return absl::UnauthenticatedError(message);
  }
  if (WIFSIGNALED(wstatus)) {
    return absl::UnauthenticatedError(absl::StrCat(where, ": killed by signal ", WTERMSIG(wstatus)));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Authenticator

Authenticator::Authenticator(const ClientConfig& config) : bearer_token_(config.bearer_token) {
  if (!config.token_file.empty()) token_file_ = std::make_unique<TokenFileSource>(config.token_file);
  if (config.exec.has_value() && token_file_ == nullptr && bearer_token_.empty()) {
    exec_ = std::make_unique<ExecCredentialProvider>(*config.exec, config);
  }
}

absl::StatusOr<Credentials> Authenticator::Get() {
  Credentials creds;
  if (token_file_ != nullptr) {
    absl::StatusOr<std::string> token = token_file_->Token();
    if (!token.ok()) return token.status();
    creds.bearer_token = *std::move(token);
  } else if (!bearer_token_.empty()) {
    creds.bearer_token = bearer_token_;
  } else if (exec_ != nullptr) {
    absl::StatusOr<ExecCredential> cred = exec_->Get();
    if (!cred.ok()) return cred.status();
    creds.bearer_token = cred->token;
    creds.client_cert_pem = cred->client_certificate_data;
    creds.client_key_pem = cred->client_key_data;
  }
  // A line break would end the Authorization header and start another one
  // of the token's choosing; client-go refuses such tokens too.
  if (std::any_of(creds.bearer_token.begin(), creds.bearer_token.end(),
                  [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; })) {
    return absl::InvalidArgumentError(
        "bearer token: contains a control character (a line break?); refused, as it would be sent as an HTTP header");
  }
  return creds;
}

bool Authenticator::Refresh() {
  bool any = false;
  if (token_file_ != nullptr) {
    token_file_->Invalidate();
    any = true;
  }
  if (exec_ != nullptr) {
    exec_->Invalidate();
    any = true;
  }
  return any;
}

}  // namespace dra::k8s::internal
