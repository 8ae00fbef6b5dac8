#include "dra/log_flags.h"

namespace dra {

void LogFlags::Register(FlagSet& flags) {
  flags.Int("v", &verbosity, "log verbosity", "", 0, 10);
  flags.Custom("log-format", "text|json", "\"text\"", "log format", "LOG_FORMAT", [this](const std::string& text) {
    if (text != "text" && text != "json") return absl::InvalidArgumentError("must be text or json");
    log_format = text;
    return absl::OkStatus();
  });
}

Logger LogFlags::MakeLogger() const {
  return Logger(NewStderrLogSink(log_format == "json" ? LogFormat::kJson : LogFormat::kKlogText), verbosity);
}

}  // namespace dra
