#include "dra/log.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "nlohmann/json.hpp"

namespace dra {
namespace {

char SeverityLetter(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kInfo:
      return 'I';
    case LogSeverity::kWarning:
      return 'W';
    case LogSeverity::kError:
      return 'E';
  }
  return 'I';
}

// klog quotes strings with Go's %q rules; JSON escaping is the same for the
// characters log messages carry.
std::string Quote(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string FormatKlog(const LogRecord& record) {
  // Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg
  std::string out = absl::FormatTime("%m%d %H:%M:%E6S", record.time, absl::UTCTimeZone());
  out = absl::StrFormat("%c%s %7d dra] %s", SeverityLetter(record.severity), out, getpid(), Quote(record.message));
  for (const LogField& field : record.fields) absl::StrAppend(&out, " ", field.key, "=", Quote(field.value));
  return out;
}

std::string FormatJson(const LogRecord& record) {
  nlohmann::ordered_json line;
  line["ts"] = absl::ToDoubleSeconds(record.time - absl::UnixEpoch());
  if (record.severity == LogSeverity::kError) {
    line["level"] = "error";
  } else {
    line["v"] = record.verbosity;
  }
  line["msg"] = record.message;
  for (const LogField& field : record.fields) line[field.key] = field.value;
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class StderrSink : public LogSink {
 public:
  explicit StderrSink(LogFormat format) : format_(format) {}
  void Write(const LogRecord& record) override {
    std::string line = FormatLogRecord(record, format_);
    line += '\n';
    dra::MutexLock lock(&mu_);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }

 private:
  const LogFormat format_;
  dra::Mutex mu_;
};

}  // namespace

std::string FormatLogRecord(const LogRecord& record, LogFormat format) {
  return format == LogFormat::kJson ? FormatJson(record) : FormatKlog(record);
}

std::shared_ptr<LogSink> NewStderrLogSink(LogFormat format) { return std::make_shared<StderrSink>(format); }

Logger::Logger() : Logger(NewStderrLogSink(LogFormat::kKlogText), 0) {}

Logger::Logger(std::shared_ptr<LogSink> sink, int verbosity) : sink_(std::move(sink)), verbosity_(verbosity) {}

Logger Logger::WithValues(std::initializer_list<LogField> fields) const {
  Logger logger = *this;
  auto values = values_ ? std::make_shared<std::vector<LogField>>(*values_) : std::make_shared<std::vector<LogField>>();
  values->insert(values->end(), fields.begin(), fields.end());
  logger.values_ = std::move(values);
  return logger;
}

void Logger::Info(std::string_view message, std::initializer_list<LogField> fields) const {
  Log(LogSeverity::kInfo, 0, message, fields);
}
void Logger::InfoV(int level, std::string_view message, std::initializer_list<LogField> fields) const {
  Log(LogSeverity::kInfo, level, message, fields);
}
void Logger::Warning(std::string_view message, std::initializer_list<LogField> fields) const {
  Log(LogSeverity::kWarning, 0, message, fields);
}
void Logger::Error(std::string_view message, std::initializer_list<LogField> fields) const {
  Log(LogSeverity::kError, 0, message, fields);
}

void Logger::Log(LogSeverity severity, int level, std::string_view message,
                 std::initializer_list<LogField> fields) const {
  if (!sink_ || !V(level)) return;
  LogRecord record;
  record.severity = severity;
  record.verbosity = level;
  record.time = absl::Now();
  record.message = message;
  record.fields.reserve((values_ ? values_->size() : 0) + fields.size());
  if (values_) record.fields.assign(values_->begin(), values_->end());
  record.fields.insert(record.fields.end(), fields.begin(), fields.end());
  sink_->Write(record);
}

}  // namespace dra
