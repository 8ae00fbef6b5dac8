// A LogSink that keeps every record as a formatted line, for tests that check
// what was logged.
#pragma once

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dra/log.h"

namespace dra::testing {

class CapturingSink : public LogSink {
 public:
  explicit CapturingSink(LogFormat format = LogFormat::kKlogText) : format_(format) {}

  void Write(const LogRecord& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(FormatLogRecord(record, format_));
  }

  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

  // The lines that contain `text`.
  std::vector<std::string> Matching(std::string_view text) const {
    std::vector<std::string> matching = lines();
    std::erase_if(matching, [&](const std::string& line) { return line.find(text) == std::string::npos; });
    return matching;
  }

 private:
  const LogFormat format_;
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace dra::testing
