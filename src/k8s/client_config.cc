#include "dra/k8s/client_config.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "k8s/auth.h"
#include "yaml-cpp/yaml.h"

namespace dra::k8s {
namespace {

constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// yaml-cpp throws on type queries of a missing key's node: check first.
bool IsSeq(const YAML::Node& node) { return node.IsDefined() && node.IsSequence(); }
bool IsMapNode(const YAML::Node& node) { return node.IsDefined() && node.IsMap(); }
bool IsScalarNode(const YAML::Node& node) { return node.IsDefined() && node.IsScalar(); }
bool IsSet(const YAML::Node& node) { return node.IsDefined() && !node.IsNull(); }

bool Readable(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Decoding one kubeconfig file: every error names the file and the key.
class KubeconfigReader {
 public:
  explicit KubeconfigReader(std::string path) : path_(std::move(path)), dir_(Dirname(path_)) {}

  absl::Status Error(const std::string& key, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path_, ": ", key, ": ", what));
  }
  absl::Status FileError(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path_, ": ", what));
  }

  // A scalar string at node[name]; empty if absent or null.
  absl::StatusOr<std::string> String(const YAML::Node& node, const std::string& name, const std::string& key) const {
    YAML::Node value = node[name];
    if (!IsSet(value)) return std::string();
    if (!value.IsScalar()) return Error(absl::StrCat(key, ".", name), "expected a string");
    return value.Scalar();
  }

  absl::StatusOr<bool> Bool(const YAML::Node& node, const std::string& name, const std::string& key) const {
    YAML::Node value = node[name];
    if (!IsSet(value)) return false;
    bool out = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, out)) {
      return Error(absl::StrCat(key, ".", name), "expected true or false");
    }
    return out;
  }

  // Base64 *-data field, decoded.
  absl::StatusOr<std::string> Data(const YAML::Node& node, const std::string& name, const std::string& key) const {
    absl::StatusOr<std::string> text = String(node, name, key);
    if (!text.ok() || text->empty()) return text;
    std::string decoded;
    std::string compact;
    for (char c : *text) {
      if (!absl::ascii_isspace(static_cast<unsigned char>(c))) compact.push_back(c);
    }
    if (!absl::Base64Unescape(compact, &decoded)) return Error(absl::StrCat(key, ".", name), "not valid base64");
    return decoded;
  }

  // A file path field, resolved against the kubeconfig's directory and
  // checked to be readable.
  absl::StatusOr<std::string> File(const YAML::Node& node, const std::string& name, const std::string& key) const {
    absl::StatusOr<std::string> path = String(node, name, key);
    if (!path.ok() || path->empty()) return path;
    std::string resolved = Resolve(*path);
    if (!Readable(resolved)) {
      return Error(absl::StrCat(key, ".", name), absl::StrCat("cannot read ", resolved, ": ", std::strerror(errno)));
    }
    return resolved;
  }

  std::string Resolve(const std::string& path) const {
    if (path.empty() || path[0] == '/') return path;
    return absl::StrCat(dir_, "/", path);
  }

  // The entry of list `list` (clusters, contexts, users) called `name`, and
  // its `inner` map (cluster, context, user).
  absl::StatusOr<YAML::Node> Find(const YAML::Node& root, const std::string& list, const std::string& inner,
                                  const std::string& name, const std::string& referrer) const {
    const YAML::Node entries = root[list];
    if (IsSet(entries) && !entries.IsSequence()) return Error(list, "expected a list");
    if (IsSeq(entries)) {
      for (size_t i = 0; i < entries.size(); ++i) {
        const YAML::Node entry = entries[i];
        if (!IsMapNode(entry)) return Error(absl::StrCat(list, "[", i, "]"), "expected a map");
        const YAML::Node entry_name = entry["name"];
        if (!IsScalarNode(entry_name) || entry_name.Scalar() != name) continue;
        const YAML::Node body = entry[inner];
        if (IsSet(body) && !body.IsMap()) {
          return Error(absl::StrCat(list, "[", name, "].", inner), "expected a map");
        }
        return IsMapNode(body) ? body : YAML::Node(YAML::NodeType::Map);
      }
    }
    return FileError(absl::StrCat(referrer, ": ", inner, " \"", name, "\" not found in ", list));
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string dir_;
};

#define DRA_ASSIGN_OR_RETURN(lhs, expr)                            \
  do {                                                             \
    auto dra_result_ = (expr);                                     \
    if (!dra_result_.ok()) return std::move(dra_result_).status(); \
    lhs = *std::move(dra_result_);                                 \
  } while (0)

absl::Status ReadCluster(const KubeconfigReader& r, const YAML::Node& cluster, const std::string& key,
                         ClientConfig& config) {
  DRA_ASSIGN_OR_RETURN(config.server, r.String(cluster, "server", key));
  if (config.server.empty()) return r.Error(absl::StrCat(key, ".server"), "required");
  DRA_ASSIGN_OR_RETURN(config.ca_file, r.File(cluster, "certificate-authority", key));
  DRA_ASSIGN_OR_RETURN(config.ca_data, r.Data(cluster, "certificate-authority-data", key));
  DRA_ASSIGN_OR_RETURN(config.insecure_skip_tls_verify, r.Bool(cluster, "insecure-skip-tls-verify", key));
  DRA_ASSIGN_OR_RETURN(config.tls_server_name, r.String(cluster, "tls-server-name", key));
  DRA_ASSIGN_OR_RETURN(config.proxy_url, r.String(cluster, "proxy-url", key));
  if (config.insecure_skip_tls_verify && (!config.ca_file.empty() || !config.ca_data.empty())) {
    return r.Error(absl::StrCat(key, ".insecure-skip-tls-verify"),
                   "specifying a root certificates file with the insecure flag is not allowed");
  }
  return absl::OkStatus();
}

absl::Status ReadExec(const KubeconfigReader& r, const YAML::Node& exec, const std::string& key, ExecConfig& out) {
  if (!IsMapNode(exec)) return r.Error(key, "expected a map");
  DRA_ASSIGN_OR_RETURN(out.command, r.String(exec, "command", key));
  if (out.command.empty()) return r.Error(absl::StrCat(key, ".command"), "required");
  // As client-go: a relative command with a '/' is relative to the
  // kubeconfig; a bare name is looked up in $PATH.
  if (out.command.find('/') != std::string::npos) out.command = r.Resolve(out.command);
  DRA_ASSIGN_OR_RETURN(out.api_version, r.String(exec, "apiVersion", key));
  if (out.api_version != "client.authentication.k8s.io/v1" &&
      out.api_version != "client.authentication.k8s.io/v1beta1") {
    return r.Error(
        absl::StrCat(key, ".apiVersion"),
        absl::StrCat("\"", out.api_version, "\" is not supported; use client.authentication.k8s.io/v1 or v1beta1"));
  }
  const YAML::Node args = exec["args"];
  if (IsSet(args)) {
    if (!args.IsSequence()) return r.Error(absl::StrCat(key, ".args"), "expected a list of strings");
    for (size_t i = 0; i < args.size(); ++i) {
      if (!IsScalarNode(args[i])) return r.Error(absl::StrCat(key, ".args[", i, "]"), "expected a string");
      out.args.push_back(args[i].Scalar());
    }
  }
  const YAML::Node env = exec["env"];
  if (IsSet(env)) {
    if (!env.IsSequence()) return r.Error(absl::StrCat(key, ".env"), "expected a list of {name, value}");
    for (size_t i = 0; i < env.size(); ++i) {
      std::string entry_key = absl::StrCat(key, ".env[", i, "]");
      if (!IsMapNode(env[i])) return r.Error(entry_key, "expected a map with name and value");
      ExecEnvVar var;
      DRA_ASSIGN_OR_RETURN(var.name, r.String(env[i], "name", entry_key));
      DRA_ASSIGN_OR_RETURN(var.value, r.String(env[i], "value", entry_key));
      if (var.name.empty()) return r.Error(absl::StrCat(entry_key, ".name"), "required");
      out.env.push_back(std::move(var));
    }
  }
  DRA_ASSIGN_OR_RETURN(out.install_hint, r.String(exec, "installHint", key));
  DRA_ASSIGN_OR_RETURN(out.provide_cluster_info, r.Bool(exec, "provideClusterInfo", key));
  DRA_ASSIGN_OR_RETURN(out.interactive_mode, r.String(exec, "interactiveMode", key));
  if (!out.interactive_mode.empty() && out.interactive_mode != "Never" && out.interactive_mode != "IfAvailable" &&
      out.interactive_mode != "Always") {
    return r.Error(absl::StrCat(key, ".interactiveMode"),
                   absl::StrCat("\"", out.interactive_mode, "\" is not one of Never, IfAvailable, Always"));
  }
  if (out.interactive_mode == "Always") {
    return r.Error(absl::StrCat(key, ".interactiveMode"), "Always needs a terminal, which this client never has");
  }
  return absl::OkStatus();
}

absl::Status ReadUser(const KubeconfigReader& r, const YAML::Node& user, const std::string& key, ClientConfig& config) {
  for (const char* unsupported : {"username", "password"}) {
    if (IsSet(user[unsupported])) {
      return r.Error(absl::StrCat(key, ".", unsupported), "basic authentication is not supported");
    }
  }
  if (IsSet(user["auth-provider"])) {
    return r.Error(absl::StrCat(key, ".auth-provider"), "auth providers are not supported; use an exec plugin");
  }
  for (const char* unsupported : {"as", "as-uid", "as-groups", "as-user-extra"}) {
    if (IsSet(user[unsupported])) {
      return r.Error(absl::StrCat(key, ".", unsupported), "impersonation is not supported");
    }
  }
  DRA_ASSIGN_OR_RETURN(config.bearer_token, r.String(user, "token", key));
  DRA_ASSIGN_OR_RETURN(config.token_file, r.File(user, "tokenFile", key));
  DRA_ASSIGN_OR_RETURN(config.client_cert_file, r.File(user, "client-certificate", key));
  DRA_ASSIGN_OR_RETURN(config.client_cert_data, r.Data(user, "client-certificate-data", key));
  DRA_ASSIGN_OR_RETURN(config.client_key_file, r.File(user, "client-key", key));
  DRA_ASSIGN_OR_RETURN(config.client_key_data, r.Data(user, "client-key-data", key));
  const bool has_cert = !config.client_cert_file.empty() || !config.client_cert_data.empty();
  const bool has_key = !config.client_key_file.empty() || !config.client_key_data.empty();
  if (has_cert && !has_key) return r.Error(key, "client-certificate is set but client-key is not");
  if (has_key && !has_cert) return r.Error(key, "client-key is set but client-certificate is not");
  const YAML::Node exec = user["exec"];
  if (IsSet(exec)) {
    ExecConfig exec_config;
    if (absl::Status status = ReadExec(r, exec, absl::StrCat(key, ".exec"), exec_config); !status.ok()) {
      return status;
    }
    config.exec = std::move(exec_config);
  }
  return absl::OkStatus();
}

absl::StatusOr<ClientConfig> LoadKubeconfigImpl(const std::string& path, const std::string& context_name) {
  absl::StatusOr<std::string> content = internal::ReadWholeFile(path);
  if (!content.ok()) {
    return absl::Status(content.status().code(), absl::StrCat("kubeconfig: ", content.status().message()));
  }
  KubeconfigReader r(path);
  YAML::Node root;
  try {
    root = YAML::Load(*content);
  } catch (const YAML::Exception& e) {
    return r.FileError(
        absl::StrCat("not valid YAML at line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
  }
  if (!IsMapNode(root)) return r.FileError("expected a map at the top level");

  std::string context = context_name;
  if (context.empty()) {
    DRA_ASSIGN_OR_RETURN(context, r.String(root, "current-context", "config"));
    if (context.empty()) return r.FileError("current-context is not set and no context was named");
  }
  const std::string referrer = context_name.empty() ? absl::StrCat("current-context \"", context, "\"")
                                                    : absl::StrCat("context \"", context, "\"");
  YAML::Node ctx;
  {
    const YAML::Node entries = root["contexts"];
    bool found = false;
    if (IsSeq(entries)) {
      for (size_t i = 0; i < entries.size() && !found; ++i) {
        const YAML::Node entry = entries[i];
        if (IsMapNode(entry) && IsScalarNode(entry["name"]) && entry["name"].Scalar() == context) {
          ctx = entry["context"];
          found = true;
        }
      }
    }
    if (!found) return r.FileError(absl::StrCat(referrer, " not found in contexts"));
    if (!IsMapNode(ctx)) return r.Error(absl::StrCat("contexts[", context, "].context"), "expected a map");
  }
  const std::string ctx_key = absl::StrCat("contexts[", context, "].context");

  ClientConfig config;
  std::string cluster_name;
  DRA_ASSIGN_OR_RETURN(cluster_name, r.String(ctx, "cluster", ctx_key));
  if (cluster_name.empty()) return r.Error(absl::StrCat(ctx_key, ".cluster"), "required");
  YAML::Node cluster;
  DRA_ASSIGN_OR_RETURN(cluster, r.Find(root, "clusters", "cluster", cluster_name, absl::StrCat(ctx_key, ".cluster")));
  if (absl::Status s = ReadCluster(r, cluster, absl::StrCat("clusters[", cluster_name, "].cluster"), config); !s.ok()) {
    return s;
  }

  std::string user_name;
  DRA_ASSIGN_OR_RETURN(user_name, r.String(ctx, "user", ctx_key));
  if (!user_name.empty()) {
    YAML::Node user;
    DRA_ASSIGN_OR_RETURN(user, r.Find(root, "users", "user", user_name, absl::StrCat(ctx_key, ".user")));
    if (absl::Status s = ReadUser(r, user, absl::StrCat("users[", user_name, "].user"), config); !s.ok()) return s;
  }

  DRA_ASSIGN_OR_RETURN(config.namespace_, r.String(ctx, "namespace", ctx_key));
  if (config.namespace_.empty()) config.namespace_ = "default";
  return config;
}

}  // namespace

std::string DefaultUserAgent(std::string_view driver_name) {
  std::string agent = "dra-cpp/" DRA_VERSION;
  if (!driver_name.empty()) absl::StrAppend(&agent, " ", absl::string_view(driver_name.data(), driver_name.size()));
  return agent;
}

absl::StatusOr<ClientConfig> InClusterConfig() { return InClusterConfig(kServiceAccountDir); }

absl::StatusOr<ClientConfig> InClusterConfig(const std::string& service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return absl::FailedPreconditionError(
        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "defined");
  }
  ClientConfig config;
  std::string host_text(host);
  if (host_text.find(':') != std::string::npos) host_text = absl::StrCat("[", host_text, "]");  // IPv6
  config.server = absl::StrCat("https://", host_text, ":", port);

  config.token_file = absl::StrCat(service_account_dir, "/token");
  internal::TokenFileSource token(config.token_file);
  if (absl::StatusOr<std::string> t = token.Token(); !t.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("unable to load in-cluster configuration: ", t.status().message()));
  }
  std::string ca = absl::StrCat(service_account_dir, "/ca.crt");
  if (Readable(ca)) config.ca_file = ca;
  absl::StatusOr<std::string> ns = internal::ReadWholeFile(absl::StrCat(service_account_dir, "/namespace"));
  config.namespace_ = ns.ok() ? std::string(absl::StripAsciiWhitespace(*ns)) : std::string();
  if (config.namespace_.empty()) config.namespace_ = "default";
  return config;
}

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  try {
    return LoadKubeconfigImpl(path, context);
  } catch (const YAML::Exception& e) {  // a shape the checks above missed
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": unexpected structure: ", e.msg));
  }
}

absl::StatusOr<ClientConfig> LoadDefaultConfig(const std::string& explicit_kubeconfig) {
  if (!explicit_kubeconfig.empty()) return LoadKubeconfig(explicit_kubeconfig);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    // client-go merges all files of the list; the first existing one is
    // enough for a node agent.
    for (absl::string_view entry : absl::StrSplit(env, ':', absl::SkipEmpty())) {
      std::string path(entry);
      if (::access(path.c_str(), F_OK) == 0) return LoadKubeconfig(path);
    }
    return absl::NotFoundError(absl::StrCat("KUBECONFIG=", env, " names no existing file"));
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    std::string path = absl::StrCat(home, "/.kube/config");
    if (::access(path.c_str(), F_OK) == 0) return LoadKubeconfig(path);
  }
  absl::StatusOr<ClientConfig> in_cluster = InClusterConfig();
  if (!in_cluster.ok()) {
    return absl::NotFoundError(
        absl::StrCat("no kubeconfig given, $KUBECONFIG unset, no ~/.kube/config, and ", in_cluster.status().message()));
  }
  return in_cluster;
}

}  // namespace dra::k8s
