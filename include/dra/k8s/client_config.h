/// @file
/// dra::k8s::ClientConfig: where the API server is and how to talk to it, and
/// the loaders that fill it in as client-go does: in-cluster service account,
/// kubeconfig files, and the usual search order between them.
///
/// Secrets (tokens, private keys, exec plugin output) are never logged and
/// never appear in error messages; errors name the file and the key instead,
/// e.g. `kubeconfig /home/me/.kube/config: users[alice].user.client-key-data:
/// not valid base64`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dra::k8s {

/// One environment variable an exec plugin runs with.
struct ExecEnvVar {
  std::string name;   ///< the variable's name
  std::string value;  ///< its value
};

/// A client.authentication.k8s.io ExecConfig: a credential plugin the client
/// runs to get a token or a client certificate. The plugin's stdout must be an
/// ExecCredential; its stderr is passed through to this process's stderr and
/// stdin is /dev/null (plugins that need a terminal are not supported).
struct ExecConfig {
  /// Path or name looked up in $PATH. A relative path with a '/' in a
  /// kubeconfig is resolved against the kubeconfig's directory.
  std::string command;
  std::vector<std::string> args;  ///< arguments after the command
  /// Added to (and overriding) this process's environment.
  std::vector<ExecEnvVar> env;
  /// The ExecCredential version the plugin speaks; the plugin must answer
  /// with the same one. v1beta1 is accepted too.
  std::string api_version = "client.authentication.k8s.io/v1";
  /// Shown in the error when `command` cannot be found.
  std::string install_hint;
  /// Pass the cluster (server, CA, ...) to the plugin in KUBERNETES_EXEC_INFO.
  bool provide_cluster_info = false;
  /// "Never", "IfAvailable" or "Always"; empty means "IfAvailable". This
  /// client is never interactive, so "Always" is rejected.
  std::string interactive_mode;
};

/// The user agent used when ClientConfig::user_agent is empty:
/// "dra-cpp/<version>", or "dra-cpp/<version> <driver>" with a driver name.
std::string DefaultUserAgent(std::string_view driver_name = "");

/// Everything the REST client needs. A default-constructed config has no
/// server; fill it in by hand or use one of the loaders below.
struct ClientConfig {
  /// "https://host:port", optionally with a path prefix. Default: none.
  std::string server;

  // --- TLS ---
  /// PEM file with the CA certificates that sign the server's certificate.
  /// When neither this nor ca_data is set, the system's trust store is used.
  std::string ca_file;
  /// The same as PEM text (kubeconfig's certificate-authority-data, decoded).
  /// Takes precedence over ca_file.
  std::string ca_data;
  /// Do not verify the server's certificate. Default false. Not allowed
  /// together with ca_file/ca_data, as in client-go.
  bool insecure_skip_tls_verify = false;
  /// The name the server's certificate is checked against (and sent as SNI)
  /// instead of the host in `server`. Default: the host in `server`.
  std::string tls_server_name;

  // --- Authentication ---
  /// A fixed bearer token. Default: none.
  std::string bearer_token;
  /// A file holding the bearer token. Takes precedence over bearer_token. The
  /// file is stat()ed before every request and re-read when its inode, size or
  /// mtime changed (bound service account tokens rotate about hourly), and
  /// re-read after a 401.
  std::string token_file;
  /// Client certificate and key for TLS client authentication, as files or as
  /// PEM text (the *_data fields take precedence). Default: none.
  ///@{
  std::string client_cert_file;
  std::string client_cert_data;
  std::string client_key_file;
  std::string client_key_data;
  ///@}
  /// A credential plugin. It runs only when neither token_file nor
  /// bearer_token is set (an explicit token wins, as in client-go); a client
  /// certificate it returns replaces the one above. The credential is cached
  /// until its expirationTimestamp, and the plugin runs again after a 401.
  std::optional<ExecConfig> exec;

  // --- Transport ---
  /// "http://proxy:3128" or "socks5://...". Default: empty, which means the
  /// usual https_proxy / no_proxy environment variables apply.
  std::string proxy_url;
  /// Default: empty, which means DefaultUserAgent().
  std::string user_agent;
  /// Client-side rate limit shared by all requests of one Client: a token
  /// bucket refilled at `qps` per second holding at most `burst` tokens. qps
  /// <= 0 disables it. Defaults 10 and 64: client-go's 5/10 is tuned for
  /// controllers, and a node agent that prepares a pod's claims wants them
  /// fetched at once: the burst covers one NodePrepareResources call's
  /// concurrent fetches (up to 64, multiplexed on one HTTP/2 connection), so
  /// even a 64-claim pod is not paced (with burst 20 it would wait ~4.4 s).
  /// But the agent runs on every node, so its steady rate stays at 10/s, a
  /// small fraction of the kubelet's 50/100.
  ///@{
  double qps = 10;
  int burst = 64;
  ///@}
  /// Per request, including connecting; watches use their own timeout_seconds
  /// instead. Default 30 s, as kubectl's and a typical controller's.
  absl::Duration timeout = absl::Seconds(30);
  /// Retries of idempotent requests after connection errors, 429 and 5xx,
  /// with jittered exponential backoff from 200 ms up to 5 s, or the server's
  /// Retry-After (capped at 60 s). Default 5.
  int max_retries = 5;
  /// Speak Kubernetes' protobuf wire format with the API server for the
  /// resources dra::k8s has a schema for (ResourceSlices), as client-go does
  /// for built-in types: about 0.6x the bytes of JSON. An object with a field
  /// the schema lacks is sent as JSON. Default true; false: JSON only.
  bool protobuf = true;
  /// The largest response body a request accepts (not watches: each of their
  /// events is bounded at 64 MiB). A larger one fails the request with
  /// ResourceExhausted instead of growing the process without bound.
  /// Default 256 MiB: about 25,000 full ResourceSlices in one list.
  size_t max_response_bytes = size_t{256} << 20;

  /// The namespace of the service account or of the kubeconfig context;
  /// "default" when the context names none. Informational: the client's verbs
  /// take the namespace explicitly.
  std::string namespace_;
};

/// The in-cluster config, as client-go's rest.InClusterConfig: the server from
/// $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, the token file, CA
/// and namespace from /var/run/secrets/kubernetes.io/serviceaccount. The token
/// must be readable now; a missing ca.crt means the system trust store is used.
absl::StatusOr<ClientConfig> InClusterConfig();
/// The same with another service account directory (for tests).
absl::StatusOr<ClientConfig> InClusterConfig(const std::string& service_account_dir);

/// Loads a kubeconfig file, using `context` or, when empty, the file's
/// current-context. Relative file paths are resolved against the file's
/// directory; *-data fields are base64-decoded. Files the config names must be
/// readable now. Not supported (an error naming the key): username/password,
/// auth-provider, impersonation (as, as-groups, ...).
absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

/// The usual search: `explicit_kubeconfig` if not empty, else the first
/// existing file of the colon-separated $KUBECONFIG (client-go would merge
/// them all; an error if none exists), else ~/.kube/config if it exists, else
/// InClusterConfig().
absl::StatusOr<ClientConfig> LoadDefaultConfig(const std::string& explicit_kubeconfig = "");

}  // namespace dra::k8s
