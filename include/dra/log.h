/// @file
/// dra::Logger: the SDK's structured logging, klog text or JSON lines.
/// The library never writes to stdout; records go to a LogSink.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"

namespace dra {

/// How serious a record is; klog's I, W and E.
enum class LogSeverity { kInfo, kWarning, kError };

/// One key=value pair of a record.
struct LogField {
  std::string key;    ///< e.g. "requestID"
  std::string value;  ///< written as a quoted string
};

/// One log record, as a LogSink receives it.
struct LogRecord {
  LogSeverity severity = LogSeverity::kInfo;  ///< info, warning or error
  int verbosity = 0;                          ///< klog -v level the record needs
  absl::Time time;                            ///< when it was logged
  std::string_view message;                   ///< valid only during LogSink::Write
  std::vector<LogField> fields;               ///< the logger's values, then the call's own fields
};

/// Where a Logger's records go: implement it to route the SDK's logs elsewhere.
class LogSink {
 public:
  virtual ~LogSink() = default;
  /// Called from any thread.
  virtual void Write(const LogRecord& record) = 0;
};

/// The text format of a record: klog's text header or one JSON object.
enum class LogFormat { kKlogText, kJson };

/// A sink that writes to stderr: klog's text header
/// `I1129 09:29:22.123456   12345 dra] "message" key="value"` or one JSON
/// object per line ({"ts":...,"v":0,"msg":...,key:value}).
std::shared_ptr<LogSink> NewStderrLogSink(LogFormat format = LogFormat::kKlogText);

/// Formats one record the way NewStderrLogSink does, without the newline.
std::string FormatLogRecord(const LogRecord& record, LogFormat format);

/// A cheap handle for logging through a sink. Records above the verbosity
/// (klog's -v) are dropped. A default Logger logs klog text to stderr at 0.
class Logger {
 public:
  /// Klog text to stderr at verbosity 0.
  Logger();
  /// Logs to `sink` (nowhere when null) the records up to klog level `verbosity`.
  explicit Logger(std::shared_ptr<LogSink> sink, int verbosity = 0);

  /// Whether records at klog level `level` are written.
  bool V(int level) const { return level <= verbosity_; }

  /// This logger with `fields` put before every record's own, as logr's
  /// WithValues: the Helper gives each kubelet call a logger that carries its
  /// method and request ID.
  Logger WithValues(std::initializer_list<LogField> fields) const;

  /// Logs `message` with `fields` at level 0.
  void Info(std::string_view message, std::initializer_list<LogField> fields = {}) const;
  /// Logs `message` with `fields` at klog level `level` (dropped when above the verbosity).
  void InfoV(int level, std::string_view message, std::initializer_list<LogField> fields = {}) const;
  /// Logs a warning with `fields` at level 0.
  void Warning(std::string_view message, std::initializer_list<LogField> fields = {}) const;
  /// Logs an error with `fields` at level 0.
  void Error(std::string_view message, std::initializer_list<LogField> fields = {}) const;

 private:
  void Log(LogSeverity severity, int level, std::string_view message, std::initializer_list<LogField> fields) const;

  std::shared_ptr<LogSink> sink_;
  int verbosity_ = 0;
  std::shared_ptr<const std::vector<LogField>> values_;  // null when none
};

}  // namespace dra
