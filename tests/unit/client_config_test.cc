// Client configuration loaders, credential sources, and the REST client's
// pieces that need no API server. The last part drives dra::k8s::Client
// against a scripted plain-HTTP server on 127.0.0.1 (retries, create safety,
// token rotation, watch decoding); TLS and the real API semantics are covered
// by tests/integration/client_test.cc against the fake API server.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "k8s/auth.h"
#include "k8s/http_util.h"
#include "support/poll.h"
#include "support/temp_dir.h"
#include "support/watch_thread.h"

namespace dra::k8s {
namespace {

using dra::testing::ReadFile;
using dra::testing::TempDir;
using dra::testing::WriteFile;
using nlohmann::json;

// Sets an environment variable for the scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

std::string B64(const std::string& text) { return absl::Base64Escape(text); }

constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nMIIBfakeCA\n-----END CERTIFICATE-----\n";
constexpr char kCertPem[] = "-----BEGIN CERTIFICATE-----\nMIIBfakeCert\n-----END CERTIFICATE-----\n";
constexpr char kKeyPem[] = "-----BEGIN PRIVATE KEY-----\nMIIBfakeKey\n-----END PRIVATE KEY-----\n";
constexpr char kSecretToken[] = "s3cr3t-token-value";

// ---------------------------------------------------------------------------
// Kubeconfig

TEST_CASE("kubeconfig: token, inline CA, client certificate data, current-context", "[kubeconfig]") {
  TempDir dir;
  const std::string path = dir.Join("config");
  WriteFile(path, absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: main
clusters:
- name: prod
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: )",
                               B64(kCaPem), R"(
    tls-server-name: kubernetes.default.svc
    proxy-url: http://proxy.example:3128
contexts:
- name: main
  context:
    cluster: prod
    user: admin
    namespace: team-a
users:
- name: admin
  user:
    token: )",
                               kSecretToken, R"(
    client-certificate-data: )",
                               B64(kCertPem), R"(
    client-key-data: )",
                               B64(kKeyPem), "\n"));
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
  REQUIRE(config.ok());
  CHECK(config->server == "https://10.0.0.1:6443");
  CHECK(config->ca_data == kCaPem);
  CHECK(config->ca_file.empty());
  CHECK_FALSE(config->insecure_skip_tls_verify);
  CHECK(config->tls_server_name == "kubernetes.default.svc");
  CHECK(config->proxy_url == "http://proxy.example:3128");
  CHECK(config->bearer_token == kSecretToken);
  CHECK(config->client_cert_data == kCertPem);
  CHECK(config->client_key_data == kKeyPem);
  CHECK(config->namespace_ == "team-a");
  CHECK_FALSE(config->exec.has_value());
  // Defaults.
  CHECK(config->qps == 10);
  CHECK(config->burst == 64);
  CHECK(config->timeout == absl::Seconds(30));
}

TEST_CASE("kubeconfig: relative file paths resolve against the kubeconfig's directory", "[kubeconfig]") {
  TempDir dir;
  ::mkdir(dir.Join("sub").c_str(), 0700);
  ::mkdir(dir.Join("sub/pki").c_str(), 0700);
  WriteFile(dir.Join("sub/pki/ca.crt"), kCaPem);
  WriteFile(dir.Join("sub/pki/client.crt"), kCertPem);
  WriteFile(dir.Join("sub/pki/client.key"), kKeyPem);
  WriteFile(dir.Join("sub/token"), "file-token\n");
  const std::string path = dir.Join("sub/kubeconfig.yaml");
  WriteFile(path, R"(
current-context: c
clusters:
- name: k
  cluster:
    server: https://[fd00::1]:6443
    certificate-authority: pki/ca.crt
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    tokenFile: token
    client-certificate: pki/client.crt
    client-key: )" + dir.Join("sub/pki/client.key") +
                      "\n");
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
  REQUIRE(config.ok());
  CHECK(config->server == "https://[fd00::1]:6443");
  CHECK(config->ca_file == dir.Join("sub/pki/ca.crt"));
  CHECK(config->token_file == dir.Join("sub/token"));
  CHECK(config->client_cert_file == dir.Join("sub/pki/client.crt"));
  CHECK(config->client_key_file == dir.Join("sub/pki/client.key"));
  CHECK(config->namespace_ == "default");
}

constexpr char kTwoContexts[] = R"(
current-context: first
clusters:
- name: one
  cluster: {server: "https://one:6443", insecure-skip-tls-verify: true}
- name: two
  cluster: {server: "https://two:6443"}
contexts:
- name: first
  context: {cluster: one, user: alice}
- name: second
  context: {cluster: two, user: bob, namespace: bobs}
users:
- name: alice
  user: {token: alice-token}
- name: bob
  user: {token: bob-token}
)";

TEST_CASE("kubeconfig: a named context wins over current-context", "[kubeconfig]") {
  TempDir dir;
  WriteFile(dir.Join("config"), kTwoContexts);
  absl::StatusOr<ClientConfig> first = LoadKubeconfig(dir.Join("config"));
  REQUIRE(first.ok());
  CHECK(first->server == "https://one:6443");
  CHECK(first->insecure_skip_tls_verify);
  CHECK(first->bearer_token == "alice-token");

  absl::StatusOr<ClientConfig> second = LoadKubeconfig(dir.Join("config"), "second");
  REQUIRE(second.ok());
  CHECK(second->server == "https://two:6443");
  CHECK_FALSE(second->insecure_skip_tls_verify);
  CHECK(second->bearer_token == "bob-token");
  CHECK(second->namespace_ == "bobs");
}

TEST_CASE("kubeconfig errors name the file and the key, never the secret", "[kubeconfig]") {
  TempDir dir;
  const std::string path = dir.Join("config");

  SECTION("current-context names a missing context") {
    WriteFile(path,
              std::string(kTwoContexts)
                  .replace(std::string(kTwoContexts).find("current-context: first"), 22, "current-context: gone"));
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(config.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(config.status().message() ==
          absl::StrCat("kubeconfig ", path, ": current-context \"gone\" not found in contexts"));
  }
  SECTION("a named context is missing") {
    WriteFile(path, kTwoContexts);
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path, "third");
    REQUIRE_FALSE(config.ok());
    CHECK(config.status().message() == absl::StrCat("kubeconfig ", path, ": context \"third\" not found in contexts"));
  }
  SECTION("no current-context") {
    WriteFile(path, "clusters: []\n");
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(absl::StrContains(config.status().message(), "current-context is not set"));
    CHECK(absl::StrContains(config.status().message(), path));
  }
  SECTION("the context's cluster is missing") {
    WriteFile(path, "current-context: c\ncontexts:\n- name: c\n  context: {cluster: nowhere, user: u}\n");
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(config.status().message() == absl::StrCat("kubeconfig ", path,
                                                    ": contexts[c].context.cluster: cluster \"nowhere\" not found "
                                                    "in clusters"));
  }
  SECTION("bad base64 in a key") {
    WriteFile(path, absl::StrCat(R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k:6443"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users:
- name: u
  user:
    token: )",
                                 kSecretToken,
                                 "\n    client-certificate-data: \"!!not base64!!\"\n"
                                 "    client-key-data: \"also bad\"\n"));
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(config.status().message() ==
          absl::StrCat("kubeconfig ", path, ": users[u].user.client-certificate-data: not valid base64"));
    CHECK_FALSE(absl::StrContains(config.status().message(), kSecretToken));
  }
  SECTION("a referenced file is missing") {
    WriteFile(path, R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k:6443", certificate-authority: missing/ca.crt}}]
contexts: [{name: c, context: {cluster: k}}]
)");
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(config.status().message() == absl::StrCat("kubeconfig ", path,
                                                    ": clusters[k].cluster.certificate-authority: cannot read ",
                                                    dir.Join("missing/ca.crt"), ": No such file or directory"));
  }
  SECTION("CA together with insecure") {
    WriteFile(path, absl::StrCat(R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k:6443", insecure-skip-tls-verify: true, certificate-authority-data: ")",
                                 B64(kCaPem), R"("}}]
contexts: [{name: c, context: {cluster: k}}]
)"));
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(absl::StrContains(config.status().message(), "clusters[k].cluster.insecure-skip-tls-verify"));
  }
  SECTION("unsupported auth") {
    WriteFile(path, R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k:6443"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {auth-provider: {name: gcp}}}]
)");
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(absl::StrContains(config.status().message(), "users[u].user.auth-provider"));
  }
  SECTION("not YAML") {
    WriteFile(path, "clusters: [unclosed\n");
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
    REQUIRE_FALSE(config.ok());
    CHECK(absl::StartsWith(config.status().message(), absl::StrCat("kubeconfig ", path, ": not valid YAML")));
  }
  SECTION("no such file") {
    absl::StatusOr<ClientConfig> config = LoadKubeconfig(dir.Join("absent"));
    REQUIRE_FALSE(config.ok());
    CHECK(config.status().code() == absl::StatusCode::kNotFound);
    CHECK(absl::StrContains(config.status().message(), dir.Join("absent")));
  }
}

TEST_CASE("kubeconfig: exec plugin settings", "[kubeconfig][exec]") {
  TempDir dir;
  const std::string path = dir.Join("config");
  WriteFile(path, R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k:6443"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, k]
      env: [{name: REGION, value: eu}]
      installHint: install get-token from example.com
      provideClusterInfo: true
      interactiveMode: Never
)");
  absl::StatusOr<ClientConfig> config = LoadKubeconfig(path);
  REQUIRE(config.ok());
  REQUIRE(config->exec.has_value());
  CHECK(config->exec->command == dir.Join("./bin/get-token"));
  CHECK(config->exec->args == std::vector<std::string>{"--cluster", "k"});
  REQUIRE(config->exec->env.size() == 1);
  CHECK(config->exec->env[0].name == "REGION");
  CHECK(config->exec->env[0].value == "eu");
  CHECK(config->exec->install_hint == "install get-token from example.com");
  CHECK(config->exec->provide_cluster_info);
  CHECK(config->exec->interactive_mode == "Never");
}

TEST_CASE("LoadDefaultConfig: explicit path, then $KUBECONFIG, then ~/.kube/config, then in-cluster", "[kubeconfig]") {
  TempDir dir;
  WriteFile(dir.Join("a"), kTwoContexts);
  std::string b = std::string(kTwoContexts);
  b.replace(b.find("current-context: first"), 22, "current-context: second");
  WriteFile(dir.Join("b"), b);
  ::mkdir(dir.Join("home").c_str(), 0700);
  ::mkdir(dir.Join("home/.kube").c_str(), 0700);
  ScopedEnv home("HOME", dir.Join("home").c_str());
  ScopedEnv no_host("KUBERNETES_SERVICE_HOST", nullptr);

  {
    ScopedEnv env("KUBECONFIG", (dir.Join("missing") + ":" + dir.Join("b") + ":" + dir.Join("a")).c_str());
    absl::StatusOr<ClientConfig> config = LoadDefaultConfig();
    REQUIRE(config.ok());
    CHECK(config->server == "https://two:6443");
    absl::StatusOr<ClientConfig> explicit_config = LoadDefaultConfig(dir.Join("a"));
    REQUIRE(explicit_config.ok());
    CHECK(explicit_config->server == "https://one:6443");
  }
  {
    ScopedEnv env("KUBECONFIG", nullptr);
    absl::StatusOr<ClientConfig> none = LoadDefaultConfig();
    REQUIRE_FALSE(none.ok());
    CHECK(absl::StrContains(none.status().message(), "KUBERNETES_SERVICE_HOST"));

    WriteFile(dir.Join("home/.kube/config"), b);
    absl::StatusOr<ClientConfig> home_config = LoadDefaultConfig();
    REQUIRE(home_config.ok());
    CHECK(home_config->server == "https://two:6443");
  }
}

TEST_CASE("in-cluster config from a service account directory", "[incluster]") {
  TempDir dir;
  WriteFile(dir.Join("token"), "sa-token\n");
  WriteFile(dir.Join("ca.crt"), kCaPem);
  WriteFile(dir.Join("namespace"), "dra-system");

  SECTION("complete") {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    absl::StatusOr<ClientConfig> config = InClusterConfig(dir.path());
    REQUIRE(config.ok());
    CHECK(config->server == "https://10.96.0.1:443");
    CHECK(config->token_file == dir.Join("token"));
    CHECK(config->bearer_token.empty());
    CHECK(config->ca_file == dir.Join("ca.crt"));
    CHECK(config->namespace_ == "dra-system");
  }
  SECTION("IPv6 service host") {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00:10:96::1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    absl::StatusOr<ClientConfig> config = InClusterConfig(dir.path());
    REQUIRE(config.ok());
    CHECK(config->server == "https://[fd00:10:96::1]:443");
  }
  SECTION("not in a cluster") {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", nullptr);
    absl::StatusOr<ClientConfig> config = InClusterConfig(dir.path());
    REQUIRE_FALSE(config.ok());
    CHECK(config.status().message() ==
          "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
          "defined");
  }
  SECTION("no token") {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
    ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
    ::unlink(dir.Join("token").c_str());
    absl::StatusOr<ClientConfig> config = InClusterConfig(dir.path());
    REQUIRE_FALSE(config.ok());
    CHECK(absl::StrContains(config.status().message(), dir.Join("token")));
  }
}

// ---------------------------------------------------------------------------
// Credential sources

TEST_CASE("a token file is re-read when it changes, and only then", "[auth][token_file]") {
  TempDir dir;
  const std::string path = dir.Join("token");
  WriteFile(path, "first\n");
  internal::TokenFileSource source(path);
  CHECK(source.Token().value() == "first");
  CHECK(source.Token().value() == "first");
  CHECK(source.reads() == 1);

  WriteFile(path, "second-longer");  // size changes
  CHECK(source.Token().value() == "second-longer");
  CHECK(source.reads() == 2);

  // The kubelet's projected volumes swap a symlinked directory: a new inode.
  WriteFile(dir.Join("token.new"), "third-tokenxx");  // same size as before
  REQUIRE(::rename(dir.Join("token.new").c_str(), path.c_str()) == 0);
  CHECK(source.Token().value() == "third-tokenxx");
  CHECK(source.reads() == 3);

  // Disappearing during a rotation keeps the last token.
  ::unlink(path.c_str());
  CHECK(source.Token().value() == "third-tokenxx");

  internal::TokenFileSource missing(dir.Join("nope"));
  absl::StatusOr<std::string> error = missing.Token();
  REQUIRE_FALSE(error.ok());
  CHECK(absl::StrContains(error.status().message(), dir.Join("nope")));
}

TEST_CASE("the authenticator prefers the token file, then the token, then exec", "[auth]") {
  TempDir dir;
  WriteFile(dir.Join("token"), "from-file");
  ClientConfig config;
  config.bearer_token = "static";
  config.token_file = dir.Join("token");
  config.exec = ExecConfig{};
  config.exec->command = "/bin/false";
  internal::Authenticator both(config);
  CHECK(both.Get()->bearer_token == "from-file");
  CHECK(both.exec() == nullptr);
  CHECK(both.Refresh());

  config.token_file.clear();
  internal::Authenticator token_only(config);
  CHECK(token_only.Get()->bearer_token == "static");
  CHECK_FALSE(token_only.Refresh());
}

TEST_CASE("a bearer token with a line break is refused, never sent as a header", "[auth]") {
  ClientConfig config;
  config.bearer_token = "secret\r\nX-Injected: 1";
  absl::StatusOr<internal::Credentials> creds = internal::Authenticator(config).Get();
  REQUIRE_FALSE(creds.ok());
  CHECK(creds.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(creds.status().message(), "bearer token: contains a control character"));
  CHECK_FALSE(absl::StrContains(creds.status().message(), "secret"));
  config.bearer_token = "with\ttab";  // a header value may hold a tab
  CHECK(internal::Authenticator(config).Get().ok());
}

// A plugin that counts its runs in a file and prints an ExecCredential whose
// token is "token-<run>" and whose expiry is read from another file.
struct ExecFixture {
  TempDir dir;
  std::string script = dir.Join("plugin.sh");
  std::string counter = dir.Join("count");
  std::string expiry = dir.Join("expiry");
  std::string env_dump = dir.Join("env");

  ExecFixture() {
    WriteFile(script, absl::StrCat(R"(#!/bin/sh
n=$(cat ")",
                                   counter, R"(" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > ")",
                                   counter, R"("
echo "$REGION" > ")",
                                   env_dump, R"("
echo "$KUBERNETES_EXEC_INFO" >> ")",
                                   env_dump, R"("
exp=$(cat ")",
                                   expiry, R"(" 2>/dev/null)
if [ -n "$exp" ]; then exp=",\"expirationTimestamp\":\"$exp\""; fi
echo "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"token-$n\"$exp}}"
)"));
    ::chmod(script.c_str(), 0700);
  }

  ExecConfig Config() const {
    ExecConfig exec;
    exec.command = script;
    exec.env.push_back({"REGION", "eu-1"});
    exec.provide_cluster_info = true;
    return exec;
  }
  int Runs() const { return std::atoi(ReadFile(counter).c_str()); }
};

TEST_CASE("exec plugin credentials are cached until they expire", "[auth][exec]") {
  ExecFixture f;
  ClientConfig cluster;
  cluster.server = "https://k:6443";
  cluster.ca_data = kCaPem;

  SECTION("no expiry: cached until invalidated (a 401)") {
    internal::ExecCredentialProvider provider(f.Config(), cluster);
    CHECK(provider.Get()->token == "token-1");
    CHECK(provider.Get()->token == "token-1");
    CHECK(f.Runs() == 1);
    provider.Invalidate();
    CHECK(provider.Get()->token == "token-2");
    CHECK(f.Runs() == 2);
    // The plugin saw its env and the cluster.
    std::string env = ReadFile(f.env_dump);
    CHECK(absl::StartsWith(env, "eu-1\n"));
    json info = json::parse(env.substr(5));
    CHECK(info["kind"] == "ExecCredential");
    CHECK(info["spec"]["interactive"] == false);
    CHECK(info["spec"]["cluster"]["server"] == "https://k:6443");
    CHECK(info["spec"]["cluster"]["certificate-authority-data"] == B64(kCaPem));
  }
  SECTION("future expiry: cached") {
    WriteFile(f.expiry, absl::FormatTime(absl::RFC3339_sec, absl::Now() + absl::Hours(1), absl::UTCTimeZone()));
    internal::ExecCredentialProvider provider(f.Config(), cluster);
    for (int i = 0; i < 5; ++i) CHECK(provider.Get()->token == "token-1");
    CHECK(f.Runs() == 1);
    CHECK(provider.runs() == 1);
  }
  SECTION("past expiry: the plugin runs again") {
    WriteFile(f.expiry, absl::FormatTime(absl::RFC3339_sec, absl::Now() - absl::Seconds(1), absl::UTCTimeZone()));
    internal::ExecCredentialProvider provider(f.Config(), cluster);
    CHECK(provider.Get()->token == "token-1");
    CHECK(provider.Get()->token == "token-2");
    CHECK(f.Runs() == 2);
  }
  SECTION("expiry reached while cached") {
    WriteFile(f.expiry, absl::FormatTime(absl::RFC3339_full, absl::Now() + absl::Seconds(1), absl::UTCTimeZone()));
    internal::ExecCredentialProvider provider(f.Config(), cluster);
    CHECK(provider.Get()->token == "token-1");
    CHECK(provider.Get()->token == "token-1");
    WriteFile(f.expiry, "");
    CHECK(dra::testing::PollUntil([&] { return provider.Get()->token == "token-2"; }, absl::Seconds(5)));
    CHECK(f.Runs() == 2);
  }
  SECTION("through the authenticator, with a 401 refresh") {
    ClientConfig config = cluster;
    config.exec = f.Config();
    internal::Authenticator auth(config);
    CHECK(auth.Get()->bearer_token == "token-1");
    CHECK(auth.Get()->bearer_token == "token-1");
    CHECK(auth.Refresh());
    CHECK(auth.Get()->bearer_token == "token-2");
  }
}

TEST_CASE("exec plugin failures", "[auth][exec]") {
  TempDir dir;
  ClientConfig cluster;
  ExecConfig exec;

  SECTION("command not found shows the install hint") {
    exec.command = dir.Join("no-such-plugin");
    exec.install_hint = "Install it with: apt install no-such-plugin";
    internal::ExecCredentialProvider provider(exec, cluster);
    absl::StatusOr<internal::ExecCredential> cred = provider.Get();
    REQUIRE_FALSE(cred.ok());
    CHECK(absl::StrContains(cred.status().message(), "Install it with: apt install no-such-plugin"));
  }
  SECTION("non-zero exit") {
    WriteFile(dir.Join("p"), "#!/bin/sh\necho secret-output\nexit 3\n");
    ::chmod(dir.Join("p").c_str(), 0700);
    exec.command = dir.Join("p");
    internal::ExecCredentialProvider provider(exec, cluster);
    absl::StatusOr<internal::ExecCredential> cred = provider.Get();
    REQUIRE_FALSE(cred.ok());
    CHECK(absl::StrContains(cred.status().message(), "exited with status 3"));
    CHECK_FALSE(absl::StrContains(cred.status().message(), "secret-output"));
  }
  SECTION("wrong apiVersion") {
    WriteFile(dir.Join("p"),
              "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\","
              "\"status\":{\"token\":\"t\"}}'\n");
    ::chmod(dir.Join("p").c_str(), 0700);
    exec.command = dir.Join("p");
    internal::ExecCredentialProvider provider(exec, cluster);
    absl::StatusOr<internal::ExecCredential> cred = provider.Get();
    REQUIRE_FALSE(cred.ok());
    CHECK(absl::StrContains(cred.status().message(), "apiVersion"));
  }
}

TEST_CASE("ExecCredential parsing", "[auth][exec]") {
  const std::string v1 = "client.authentication.k8s.io/v1";
  absl::StatusOr<internal::ExecCredential> cred = internal::ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{
          "clientCertificateData":"CERT","clientKeyData":"KEY","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
      v1);
  REQUIRE(cred.ok());
  CHECK(cred->token.empty());
  CHECK(cred->client_certificate_data == "CERT");
  CHECK(cred->client_key_data == "KEY");
  CHECK(cred->expiration == absl::FromUnixSeconds(1893553445));

  CHECK_FALSE(internal::ParseExecCredential("not json", v1).ok());
  CHECK_FALSE(internal::ParseExecCredential(
                  R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})", v1)
                  .ok());
  CHECK_FALSE(internal::ParseExecCredential(R"({"apiVersion":"client.authentication.k8s.io/v1",
      "kind":"ExecCredential","status":{"clientCertificateData":"CERT"}})",
                                            v1)
                  .ok());
}

// ---------------------------------------------------------------------------
// HTTP pieces

TEST_CASE("resource paths and queries", "[http]") {
  CHECK(internal::ResourcePath(kResourceClaims, "ns", "c1") ==
        "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c1");
  CHECK(internal::ResourcePath(kResourceClaims, "ns", "c1", "status") ==
        "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c1/status");
  CHECK(internal::ResourcePath(kResourceClaims, "") == "/apis/resource.k8s.io/v1/resourceclaims");
  CHECK(internal::ResourcePath(kNodes, "", "n1") == "/api/v1/nodes/n1");
  CHECK(internal::ResourcePath(kResourceSlices, "") == "/apis/resource.k8s.io/v1/resourceslices");
  CHECK(internal::Query({{"labelSelector", "app=x,tier!=db"}, {"limit", ""}, {"fieldSelector", "spec.nodeName=n 1"}}) ==
        "?labelSelector=app%3Dx%2Ctier%21%3Ddb&fieldSelector=spec.nodeName%3Dn%201");
  CHECK(internal::Query({}) == "");
}

TEST_CASE("HTTP errors map to status codes with the server's message", "[http][errors]") {
  auto status = [](int code, const std::string& body) { return internal::StatusFromResponse(code, body, "GET /x"); };
  absl::Status not_found = status(404, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
      "message":"resourceclaims.resource.k8s.io \"c\" not found","reason":"NotFound","code":404})");
  CHECK(not_found.code() == absl::StatusCode::kNotFound);
  CHECK(not_found.message() == "resourceclaims.resource.k8s.io \"c\" not found [GET /x: HTTP 404]");
  CHECK(HttpStatusCode(not_found) == 404);
  CHECK(StatusReason(not_found) == "NotFound");

  absl::Status exists = status(409, R"({"kind":"Status","reason":"AlreadyExists","message":"exists"})");
  CHECK(exists.code() == absl::StatusCode::kAlreadyExists);
  CHECK(absl::IsAlreadyExists(exists));
  CHECK_FALSE(IsConflict(exists));

  absl::Status conflict =
      status(409, R"({"kind":"Status","reason":"Conflict","message":"the object has been modified"})");
  CHECK(conflict.code() == absl::StatusCode::kAborted);
  CHECK(IsConflict(conflict));

  absl::Status gone =
      status(410, R"j({"kind":"Status","reason":"Expired","message":"too old resource version: 1 (5)"})j");
  CHECK(gone.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StartsWith(gone.message(), "expired: too old resource version"));
  CHECK(IsGone(gone));
  CHECK_FALSE(IsGone(absl::FailedPreconditionError("something else")));

  absl::Status invalid = status(422, R"({"kind":"Status","reason":"Invalid",
      "message":"ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.requests[0].name: Required value",
      "details":{"causes":[{"field":"spec.devices.requests[0].name","message":"Required value"},
                           {"field":"metadata.labels","message":"Invalid value: \"-\""}]}})");
  CHECK(invalid.code() == absl::StatusCode::kInvalidArgument);
  CHECK(invalid.message() ==
        "ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.requests[0].name: Required value; "
        "metadata.labels: Invalid value: \"-\" [GET /x: HTTP 422]");

  CHECK(status(400, "").code() == absl::StatusCode::kInvalidArgument);
  CHECK(status(401, "").code() == absl::StatusCode::kUnauthenticated);
  CHECK(status(401, "").message() == "HTTP 401 Unauthorized [GET /x: HTTP 401]");
  CHECK(status(403, R"({"kind":"Status","message":"forbidden: User \"x\" cannot get"})").code() ==
        absl::StatusCode::kPermissionDenied);
  CHECK(status(429, "").code() == absl::StatusCode::kResourceExhausted);
  CHECK(status(503, "<html>\nbusy</html>").code() == absl::StatusCode::kUnavailable);
  CHECK(status(503, "<html>\nbusy</html>").message() == "<html> busy</html> [GET /x: HTTP 503]");
  CHECK(status(418, "").code() == absl::StatusCode::kUnknown);

  // A watch ERROR event.
  absl::Status event = internal::StatusFromMetaStatus(
      json{{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}, {"message", "too old"}}, 500, "GET /w");
  CHECK(IsGone(event));
}

TEST_CASE("Retry-After and backoff", "[http]") {
  const absl::Time now = absl::FromUnixSeconds(1700000000);
  CHECK(internal::ParseRetryAfter("3", now) == absl::Seconds(3));
  CHECK(internal::ParseRetryAfter(" 0 ", now) == absl::ZeroDuration());
  CHECK(internal::ParseRetryAfter(
            absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", now + absl::Seconds(7), absl::UTCTimeZone()), now) ==
        absl::Seconds(7));
  CHECK_FALSE(internal::ParseRetryAfter("", now).has_value());
  CHECK_FALSE(internal::ParseRetryAfter("soon", now).has_value());
  for (int attempt = 0; attempt < 10; ++attempt) {
    absl::Duration d = base::Backoff(attempt, absl::Milliseconds(200), absl::Seconds(5));
    absl::Duration full = std::min(absl::Milliseconds(200) * (1 << attempt), absl::Seconds(5));
    CHECK(d >= full / 2);
    CHECK(d <= full);
  }
}

TEST_CASE("the token bucket allows a burst, then paces at qps", "[http][ratelimit]") {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  internal::TokenBucket bucket(10, 3);
  CHECK(bucket.Reserve(t0) == absl::ZeroDuration());
  CHECK(bucket.Reserve(t0) == absl::ZeroDuration());
  CHECK(bucket.Reserve(t0) == absl::ZeroDuration());
  CHECK(bucket.Reserve(t0) == absl::Milliseconds(100));
  CHECK(bucket.Reserve(t0) == absl::Milliseconds(200));
  // After a second of quiet the bucket is full again (capped at burst).
  const absl::Time t1 = t0 + absl::Seconds(5);
  CHECK(bucket.Reserve(t1) == absl::ZeroDuration());
  CHECK(bucket.Reserve(t1) == absl::ZeroDuration());
  CHECK(bucket.Reserve(t1) == absl::ZeroDuration());
  CHECK(bucket.Reserve(t1) > absl::ZeroDuration());

  internal::TokenBucket unlimited(0, 1);
  for (int i = 0; i < 100; ++i) CHECK(unlimited.Reserve(t0) == absl::ZeroDuration());
}

TEST_CASE("the line decoder reassembles lines across any chunking", "[http][watch]") {
  const std::string stream = "{\"a\":1}\n{\"b\":2}\r\n\n{\"c\":\"long line\"}\n{\"partial\"";
  for (size_t chunk = 1; chunk <= stream.size(); ++chunk) {
    internal::LineDecoder decoder;
    std::vector<std::string> lines;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      REQUIRE(decoder
                  .Feed(std::string_view(stream).substr(i, chunk),
                        [&](std::string_view line) {
                          lines.emplace_back(line);
                          return absl::OkStatus();
                        })
                  .ok());
    }
    CHECK(lines == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":\"long line\"}"});
    CHECK(decoder.pending() == "{\"partial\"");
  }
  internal::LineDecoder small(8);
  CHECK_FALSE(small.Feed("0123456789", [](std::string_view) { return absl::OkStatus(); }).ok());
}

TEST_CASE("Client::Create checks the config", "[client]") {
  auto error = [](ClientConfig config) { return Client::Create(std::move(config)).status(); };
  ClientConfig config;
  CHECK(absl::StrContains(error(config).message(), "server is empty"));
  config.server = "ftp://x";
  CHECK(absl::StrContains(error(config).message(), "scheme must be https or http"));
  config.server = "https://x:6443";
  config.client_cert_data = kCertPem;
  CHECK(absl::StrContains(error(config).message(), "client certificate and client key"));
  config.client_cert_data.clear();
  config.insecure_skip_tls_verify = true;
  config.ca_data = kCaPem;
  CHECK(absl::StrContains(error(config).message(), "insecure"));
  config.ca_data.clear();
  config.token_file = "/nonexistent/token";
  CHECK(absl::StrContains(error(config).message(), "/nonexistent/token"));
  config.token_file.clear();
  CHECK(Client::Create(config).ok());
  CHECK(DefaultUserAgent() == "dra-cpp/" DRA_VERSION);
  CHECK(DefaultUserAgent("gpu.example.com") == "dra-cpp/" DRA_VERSION " gpu.example.com");
}

// ---------------------------------------------------------------------------
// The client against a scripted local HTTP server.

// A plain HTTP/1.1 server on 127.0.0.1 that answers every connection with a
// handler, one thread per connection, and closes the connection afterwards.
class ScriptedServer {
 public:
  struct Request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
  };
  class Conn {
   public:
    explicit Conn(int fd) : fd_(fd) {}
    bool Send(std::string_view data) {
      while (!data.empty()) {
        ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        data.remove_prefix(static_cast<size_t>(n));
      }
      return true;
    }
    void Respond(int code, const std::string& body, const std::string& extra_headers = "") {
      Send(absl::StrCat("HTTP/1.1 ", code, " X\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                        "\r\nConnection: close\r\n", extra_headers, "\r\n", body));
    }
    // Waits until the client closes its end (or `timeout`).
    bool WaitClosed(absl::Duration timeout) {
      const absl::Time deadline = absl::Now() + timeout;
      while (absl::Now() < deadline) {
        struct pollfd pfd = {fd_, POLLIN, 0};
        if (::poll(&pfd, 1, 50) > 0) {
          char buf[256];
          if (::recv(fd_, buf, sizeof buf, 0) <= 0) return true;
        }
      }
      return false;
    }

   private:
    int fd_;
  };
  using Handler = std::function<void(const Request&, Conn&)>;

  explicit ScriptedServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listen_fd_, 64) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    accept_thread_.join();
    ::close(listen_fd_);
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : connections_) t.join();
  }

  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  bool stopping() const { return stopping_; }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      struct pollfd pfd = {listen_fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 20) <= 0) continue;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  void Serve(int fd) {
    std::string data;
    char buf[65536];
    size_t header_end;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      data.append(buf, static_cast<size_t>(n));
    }
    Request request;
    std::string head = data.substr(0, header_end);
    size_t line_end = head.find("\r\n");
    std::string first = head.substr(0, line_end);
    request.method = first.substr(0, first.find(' '));
    request.target = first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
    size_t pos = line_end + 2;
    while (pos < head.size()) {
      size_t end = head.find("\r\n", pos);
      if (end == std::string::npos) end = head.size();
      std::string line = head.substr(pos, end - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = absl::AsciiStrToLower(line.substr(0, colon));
        std::string value = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
        request.headers[name] = value;
      }
      pos = end + 2;
    }
    size_t length = request.headers.count("content-length") ? std::stoul(request.headers["content-length"]) : 0;
    request.body = data.substr(header_end + 4);
    while (request.body.size() < length) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.body.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    Conn conn(fd);
    handler_(request, conn);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
  std::vector<Request> requests_;
};

std::shared_ptr<Client> MakeClient(const std::string& url, int max_retries = 3) {
  ClientConfig config;
  config.server = url;
  config.bearer_token = "tok";
  config.qps = 0;  // no client-side limit unless a test wants one
  config.max_retries = max_retries;
  config.timeout = absl::Seconds(10);
  absl::StatusOr<std::shared_ptr<Client>> client = Client::Create(config);
  REQUIRE(client.ok());
  return *client;
}

std::string Claim(const std::string& name, const std::string& rv = "1") {
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaim"},
              {"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}, {"uid", "u-" + name}}},
              {"spec", {{"devices", json::object()}}}}
      .dump();
}

TEST_CASE("client: GET sends auth and user agent and decodes the claim", "[client][local]") {
  ScriptedServer server(
      [](const ScriptedServer::Request&, ScriptedServer::Conn& conn) { conn.Respond(200, Claim("c1")); });
  auto client = MakeClient(server.url());
  absl::StatusOr<ResourceClaim> claim = client->GetResourceClaim("ns", "c1");
  REQUIRE(claim.ok());
  CHECK(claim->metadata.name == "c1");
  CHECK(claim->metadata.uid == "u-c1");
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "GET");
  CHECK(requests[0].target == "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c1");
  CHECK(requests[0].headers["authorization"] == "Bearer tok");
  CHECK(requests[0].headers["user-agent"] == "dra-cpp/" DRA_VERSION);
  CHECK(requests[0].headers["accept"] == "application/json");

  CHECK(client->Get(kResourceClaims, "", "c1").status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(client->Get(kNodes, "ns", "n").status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("client: 503 with Retry-After is retried after the given time", "[client][local][retry]") {
  std::atomic<int> calls{0};
  ScriptedServer server([&](const ScriptedServer::Request&, ScriptedServer::Conn& conn) {
    if (calls++ == 0) {
      conn.Respond(503, R"({"kind":"Status","message":"busy","code":503})", "Retry-After: 1\r\n");
    } else {
      conn.Respond(200, Claim("c1"));
    }
  });
  auto client = MakeClient(server.url());
  const absl::Time start = absl::Now();
  CHECK(client->Get(kResourceClaims, "ns", "c1").ok());
  CHECK(absl::Now() - start >= absl::Milliseconds(900));
  CHECK(calls == 2);
}

TEST_CASE("client: retries give up with the last error", "[client][local][retry]") {
  std::atomic<int> calls{0};
  ScriptedServer server([&](const ScriptedServer::Request&, ScriptedServer::Conn& conn) {
    ++calls;
    conn.Respond(500, R"({"kind":"Status","message":"etcd is sad","code":500})", "Retry-After: 0\r\n");
  });
  auto client = MakeClient(server.url(), 2);
  absl::Status status = client->Delete(kResourceClaims, "ns", "c1", Preconditions{"uid-1", "7"});
  CHECK(status.code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StartsWith(status.message(), "etcd is sad"));
  CHECK(calls == 3);
  auto requests = server.requests();
  CHECK(requests[0].method == "DELETE");
  json body = json::parse(requests[0].body);
  CHECK(body["preconditions"]["uid"] == "uid-1");
  CHECK(body["preconditions"]["resourceVersion"] == "7");
}

TEST_CASE("client: a POST that may have landed is not retried blindly", "[client][local][create]") {
  std::atomic<int> posts{0};
  std::atomic<int> gets{0};
  std::atomic<bool> exists{false};
  ScriptedServer server([&](const ScriptedServer::Request& request, ScriptedServer::Conn& conn) {
    if (request.method == "POST") {
      ++posts;
      if (posts == 1) return;  // drop the connection without answering
      conn.Respond(201, request.body);
      return;
    }
    ++gets;
    if (exists) {
      conn.Respond(200, Claim("fixed"));
    } else {
      conn.Respond(404, R"({"kind":"Status","reason":"NotFound","message":"not found","code":404})");
    }
  });
  auto client = MakeClient(server.url());

  SECTION("generateName: not retried, Unavailable says it may have happened") {
    json object = json::parse(Claim(""));
    object["metadata"].erase("name");
    object["metadata"]["generateName"] = "gen-";
    absl::StatusOr<json> created = client->Create(kResourceClaims, "ns", object);
    REQUIRE_FALSE(created.ok());
    CHECK(created.status().code() == absl::StatusCode::kUnavailable);
    CHECK(absl::StrContains(created.status().message(), "may have happened"));
    CHECK(posts == 1);
    CHECK(gets == 0);
  }
  SECTION("fixed name, not there: created again") {
    absl::StatusOr<json> created = client->Create(kResourceClaims, "", json::parse(Claim("fixed")));
    REQUIRE(created.ok());
    CHECK(posts == 2);
    CHECK(gets == 1);
  }
  SECTION("fixed name, there: the existing object is returned") {
    exists = true;
    absl::StatusOr<json> created = client->Create(kResourceClaims, "ns", json::parse(Claim("fixed")));
    REQUIRE(created.ok());
    CHECK((*created)["metadata"]["name"] == "fixed");
    CHECK(posts == 1);
    CHECK(gets == 1);
  }
}

TEST_CASE("client: a 429 on POST is retried (the server did not run it)", "[client][local][create]") {
  std::atomic<int> posts{0};
  ScriptedServer server([&](const ScriptedServer::Request& request, ScriptedServer::Conn& conn) {
    if (posts++ == 0) {
      conn.Respond(429, R"({"kind":"Status","reason":"TooManyRequests","message":"slow down","code":429})",
                   "Retry-After: 0\r\n");
    } else {
      conn.Respond(201, request.body);
    }
  });
  auto client = MakeClient(server.url());
  CHECK(client->Create(kResourceClaims, "ns", json::parse(Claim("x"))).ok());
  CHECK(posts == 2);
}

TEST_CASE("client: a rotated token file is used without restart, and a 401 re-reads it", "[client][local][auth]") {
  TempDir dir;
  WriteFile(dir.Join("token"), "old-token");
  std::mutex mu;
  std::string valid = "old-token";
  ScriptedServer server([&](const ScriptedServer::Request& request, ScriptedServer::Conn& conn) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = request.headers.find("authorization");
    if (it == request.headers.end() || it->second != "Bearer " + valid) {
      conn.Respond(401, R"({"kind":"Status","reason":"Unauthorized","message":"Unauthorized","code":401})");
    } else {
      conn.Respond(200, Claim("c1"));
    }
  });
  ClientConfig config;
  config.server = server.url();
  config.token_file = dir.Join("token");
  config.qps = 0;
  auto client = Client::Create(config).value();
  CHECK(client->Get(kResourceClaims, "ns", "c1").ok());

  {
    std::lock_guard<std::mutex> lock(mu);
    valid = "new-token-longer";
  }
  WriteFile(dir.Join("token"), "new-token-longer");
  CHECK(client->Get(kResourceClaims, "ns", "c1").ok());

  {
    std::lock_guard<std::mutex> lock(mu);
    valid = "nobody-has-this";
  }
  absl::StatusOr<json> denied = client->Get(kResourceClaims, "ns", "c1");
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.status().code() == absl::StatusCode::kUnauthenticated);
  CHECK(absl::StrContains(denied.status().message(), "Unauthorized"));
  CHECK_FALSE(absl::StrContains(denied.status().message(), "new-token"));
  // First request, second request, then 401 + one retry after re-reading.
  CHECK(server.requests().size() == 4);
}

TEST_CASE("client: the rate limiter paces requests", "[client][local][ratelimit]") {
  ScriptedServer server(
      [](const ScriptedServer::Request&, ScriptedServer::Conn& conn) { conn.Respond(200, Claim("c1")); });
  ClientConfig config;
  config.server = server.url();
  config.qps = 20;
  config.burst = 1;
  auto client = Client::Create(config).value();
  const absl::Time start = absl::Now();
  for (int i = 0; i < 21; ++i) REQUIRE(client->Get(kResourceClaims, "ns", "c1").ok());
  CHECK(absl::Now() - start >= absl::Milliseconds(900));  // 20 waits of 50 ms; no upper bound
}

TEST_CASE("client: ListAll follows continue tokens and falls back on expiry", "[client][local][list]") {
  std::atomic<bool> expire{false};
  ScriptedServer server([&](const ScriptedServer::Request& request, ScriptedServer::Conn& conn) {
    auto item = [](int i) { return json{{"metadata", {{"name", absl::StrCat("c", i)}}}}; };
    json list = {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaimList"}};
    if (absl::StrContains(request.target, "continue=page2")) {
      if (expire) {
        conn.Respond(410, R"({"kind":"Status","reason":"Expired","message":"continue expired","code":410})");
        return;
      }
      list["metadata"] = {{"resourceVersion", "50"}};
      list["items"] = json::array({item(2)});  // {x} alone copies x with clang
    } else if (absl::StrContains(request.target, "limit=")) {
      list["metadata"] = {{"resourceVersion", "50"}, {"continue", "page2"}};
      list["items"] = json::array({item(0), item(1)});
    } else {
      list["metadata"] = {{"resourceVersion", "60"}};
      list["items"] = json::array({item(0), item(1), item(2), item(3)});
    }
    conn.Respond(200, list.dump());
  });
  auto client = MakeClient(server.url());
  ListOptions options;
  options.limit = 2;
  options.label_selector = "a=b";
  absl::StatusOr<ListResult> all = client->ListAll(kResourceClaims, "ns", options);
  REQUIRE(all.ok());
  REQUIRE(all->items.size() == 3);
  CHECK(all->items[2]["metadata"]["name"] == "c2");
  CHECK(all->items[0]["kind"] == "ResourceClaim");
  CHECK(all->items[0]["apiVersion"] == "resource.k8s.io/v1");
  CHECK(all->resource_version == "50");
  CHECK(server.requests()[0].target ==
        "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims?labelSelector=a%3Db&limit=2");

  expire = true;
  all = client->ListAll(kResourceClaims, "ns", options);
  REQUIRE(all.ok());
  CHECK(all->items.size() == 4);
  CHECK(all->resource_version == "60");
}

TEST_CASE("client: watch decodes a chunked stream and ends when the server closes it", "[client][local][watch]") {
  ScriptedServer server([](const ScriptedServer::Request&, ScriptedServer::Conn& conn) {
    conn.Send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
    std::string events =
        json{{"type", "ADDED"}, {"object", json::parse(Claim("a", "10"))}}.dump() + "\n" +
        json{{"type", "MODIFIED"}, {"object", json::parse(Claim("a", "11"))}}.dump() + "\n" +
        R"({"type":"BOOKMARK","object":{"kind":"ResourceClaim","metadata":{"resourceVersion":"12"}}})" + "\n";
    // Split mid-event, with pauses, as a real stream arrives.
    for (size_t i = 0; i < events.size(); i += 37) {
      conn.Send(std::string_view(events).substr(i, 37));
      absl::SleepFor(absl::Milliseconds(2));
    }
  });
  auto client = MakeClient(server.url());
  std::vector<WatchEvent> events;
  WatchOptions options;
  options.resource_version = "9";
  options.timeout_seconds = 30;
  const auto add = [&](const WatchEvent& e) { events.push_back(e); };
  CHECK(client->RunWatch(kResourceClaims, "ns", options, add, WatchStop()).ok());
  REQUIRE(events.size() == 3);
  CHECK(events[0].type == "ADDED");
  CHECK(events[1].object["metadata"]["resourceVersion"] == "11");
  CHECK(events[2].type == "BOOKMARK");
  CHECK(events[2].object["metadata"]["resourceVersion"] == "12");
  CHECK(server.requests()[0].target ==
        "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims?watch=true&resourceVersion=9&allowWatchBookmarks=true&"
        "timeoutSeconds=30");
}

TEST_CASE("client: watch reports 410 as IsGone, from an ERROR event or the HTTP status", "[client][local][watch]") {
  std::atomic<int> calls{0};
  ScriptedServer server([&](const ScriptedServer::Request&, ScriptedServer::Conn& conn) {
    if (calls++ == 0) {
      conn.Send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
      conn.Send(
          R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (40)","reason":"Expired","code":410}})j"
          "\n");
      conn.WaitClosed(absl::Seconds(5));
    } else {
      conn.Respond(410, R"({"kind":"Status","reason":"Expired","message":"too old resource version","code":410})");
    }
  });
  auto client = MakeClient(server.url());
  int delivered = 0;
  const auto deliver = [&](const WatchEvent&) { ++delivered; };
  absl::Status status = client->RunWatch(kResourceClaims, "", WatchOptions{}, deliver, WatchStop());
  CHECK(IsGone(status));
  CHECK(absl::StrContains(status.message(), "too old resource version: 1 (40)"));
  CHECK(delivered == 0);
  CHECK(IsGone(client->RunWatch(kResourceClaims, "", WatchOptions{}, deliver, WatchStop())));
}

TEST_CASE("client: Stop ends an idle watch at once", "[client][local][watch]") {
  std::atomic<bool> client_closed{false};
  ScriptedServer server([&](const ScriptedServer::Request&, ScriptedServer::Conn& conn) {
    conn.Send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
    conn.Send(json{{"type", "ADDED"}, {"object", json::parse(Claim("a"))}}.dump() + "\n");
    client_closed = conn.WaitClosed(absl::Seconds(20));
  });
  auto client = MakeClient(server.url());
  std::atomic<int> events{0};
  dra::testing::WatchThread watch(client, kResourceClaims, "ns", WatchOptions{}, [&](const WatchEvent&) { ++events; });
  REQUIRE(dra::testing::PollUntil([&] { return events == 1; }));
  CHECK_FALSE(watch.Done());
  watch.Stop();
  CHECK(watch.Wait().ok());
  CHECK(watch.Stopped());
  CHECK(dra::testing::PollUntil([&] { return client_closed.load(); }));
}

TEST_CASE("client: Stop from the event callback", "[client][local][watch]") {
  ScriptedServer server([&](const ScriptedServer::Request&, ScriptedServer::Conn& conn) {
    conn.Send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
    for (int i = 0; i < 3; ++i) conn.Send(json{{"type", "ADDED"}, {"object", json::parse(Claim("a"))}}.dump() + "\n");
    conn.WaitClosed(absl::Seconds(20));
  });
  auto client = MakeClient(server.url());
  int events = 0;
  WatchStop stop;
  const auto stop_at_first = [&](const WatchEvent&) {
    ++events;
    stop.Stop();
  };
  CHECK(client->RunWatch(kResourceClaims, "ns", WatchOptions{}, stop_at_first, stop).ok());
  CHECK(events == 1);
}

TEST_CASE("client: concurrent requests from many threads", "[client][local]") {
  ScriptedServer server([](const ScriptedServer::Request& request, ScriptedServer::Conn& conn) {
    std::string name = request.target.substr(request.target.rfind('/') + 1);
    conn.Respond(200, Claim(name));
  });
  auto client = MakeClient(server.url());
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string name = absl::StrCat("c", t, "-", i);
        absl::StatusOr<ResourceClaim> claim = client->GetResourceClaim("ns", name);
        if (claim.ok() && claim->metadata.name == name) ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(ok == 80);
}

TEST_CASE("client: a refused connection is Unavailable and names the server", "[client][local]") {
  int port;
  {
    ScriptedServer server([](const ScriptedServer::Request&, ScriptedServer::Conn&) {});
    port = std::stoi(server.url().substr(server.url().rfind(':') + 1));
  }
  auto client = MakeClient(absl::StrCat("http://127.0.0.1:", port), 1);
  absl::StatusOr<json> got = client->Get(kResourceClaims, "ns", "c1");
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(got.status().message(), absl::StrCat("127.0.0.1:", port)));
  CHECK_FALSE(HttpStatusCode(got.status()).has_value());
}

}  // namespace
}  // namespace dra::k8s
