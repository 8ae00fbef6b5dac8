#include "common/log_flags.h"

namespace example {

void LogFlags::Register(FlagSet& flags) {
  flags.Int("v", &verbosity, "log verbosity", "", 0, 10);
  flags.Custom("log-format", "text|json", "\"text\"", "log format", "LOG_FORMAT", [this](const std::string& text) {
    if (text != "text" && text != "json") return absl::InvalidArgumentError("must be text or json");
    log_format = text;
    return absl::OkStatus();
  });
}

dra::Logger LogFlags::MakeLogger() const {
  return dra::Logger(dra::NewStderrLogSink(log_format == "json" ? dra::LogFormat::kJson : dra::LogFormat::kKlogText),
                     verbosity);
}

}  // namespace example
