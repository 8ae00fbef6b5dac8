#include "admission_webhook.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/claim_config_review.h"
#include "common/https_server.h"
#include "dra/flags.h"
#include "dra/kubeletplugin/termination_signals.h"
#include "dra/log_flags.h"
#include "gpu_config.h"
#include "net_config.h"

namespace gpu {
namespace {

using nlohmann::json;

constexpr char kProgram[] = "dra-example-webhook";
constexpr char kReviewPath[] = "/validate-resource-claim-parameters";

template <typename Decode>
example::OpaqueParametersCheck CheckBy(Decode decode) {
  return [decode](const json& parameters) { return decode(parameters).status(); };
}

// dra-example-driver's cpu profile takes no configuration.
example::OpaqueParametersCheck CheckFor(const std::string& profile) {
  if (profile == "gpu") return CheckBy(DecodeGpuConfig);
  if (profile == "net") return CheckBy(DecodeNetConfig);
  return [](const json&) { return absl::InvalidArgumentError("configuration not allowed"); };
}

example::HttpsResponse Text(int code, std::string body) {
  return example::HttpsResponse{code, "text/plain; charset=utf-8", std::move(body)};
}

example::HttpsResponse Serve(const example::HttpsRequest& request, const std::string& driver,
                             const example::OpaqueParametersCheck& check, const dra::Logger& logger) {
  if (request.path == "/readyz") return Text(200, "ok");
  if (request.path != kReviewPath) return Text(404, "not found\n");
  if (request.method != "POST") return Text(405, "method not allowed\n");
  // The media type, whatever its parameters.
  if (request.content_type.substr(0, request.content_type.find(';')) != "application/json") {
    return Text(415, absl::StrCat("contentType=", request.content_type, ", expected application/json\n"));
  }
  const json review = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return Text(400, "request body is not JSON\n");
  absl::StatusOr<json> answer = example::ReviewClaimConfigs(review, driver, check);
  if (!answer.ok()) return Text(400, absl::StrCat(answer.status().message(), "\n"));
  const json& response = (*answer)["response"];
  if (!response["allowed"].get<bool>()) {
    logger.Info("Refused", {{"uid", response["uid"].get<std::string>()},
                            {"resource", review["request"].value("resource", json::object()).dump()},
                            {"message", response["status"]["message"].get<std::string>()}});
  }
  return example::HttpsResponse{200, "application/json", answer->dump()};
}

}  // namespace

int RunAdmissionWebhook(int argc, char** argv) {
  dra::FlagSet flags(kProgram,
                     "dra-example-driver's validating admission webhook: refuses ResourceClaims and "
                     "ResourceClaimTemplates with an invalid opaque config for the driver.");
  example::HttpsServer::Options options;
  std::string profile = "gpu";
  std::string driver_name;
  dra::LogFlags log_flags;
  flags.String("tls-cert-file", &options.cert_file,
               "PEM file of the server's certificate, its CA chain after it (required; read again when it changes)");
  flags.String("tls-private-key-file", &options.key_file, "PEM file of the certificate's private key (required)");
  flags.Int("port", &options.port, "HTTPS port", "", 1, 65535);
  flags.Custom("device-profile", "gpu|net|cpu", "\"gpu\"",
               "whose opaque config to check: GpuConfig, NetConfig, or none (cpu: every config is refused)",
               "DEVICE_PROFILE", [&profile](const std::string& text) {
                 if (text != "gpu" && text != "net" && text != "cpu") {
                   return absl::InvalidArgumentError("must be gpu, net or cpu");
                 }
                 profile = text;
                 return absl::OkStatus();
               });
  flags.String("driver-name", &driver_name, "the driver whose configs to check (default <device-profile>.example.com)",
               "DRIVER_NAME");
  log_flags.Register(flags);
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  for (const auto& [flag, value] :
       {std::pair{"tls-cert-file", &options.cert_file}, {"tls-private-key-file", &options.key_file}}) {
    if (value->empty()) {
      std::cerr << kProgram << ": flag --" << flag << " is required\n(see " << kProgram << " --help)\n";
      return 2;
    }
  }
  if (driver_name.empty()) driver_name = absl::StrCat(profile, ".example.com");
  dra::kubeletplugin::TerminationSignals signals;
  const dra::Logger logger = log_flags.MakeLogger();
  const example::OpaqueParametersCheck check = CheckFor(profile);
  options.logger = logger;
  absl::StatusOr<std::unique_ptr<example::HttpsServer>> server = example::HttpsServer::Start(
      options, [&](const example::HttpsRequest& request) { return Serve(request, driver_name, check, logger); });
  if (!server.ok()) {
    std::cerr << kProgram << ": " << server.status().message() << "\n";
    return 1;
  }
  logger.Info("Webhook serving",
              {{"port", absl::StrCat((*server)->port())}, {"driver", driver_name}, {"path", kReviewPath}});
  signals.Wait();
  return 0;
}

}  // namespace gpu
