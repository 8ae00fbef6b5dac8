// A Logger that drops everything, for tests whose expected errors would only
// clutter the output.
#pragma once

#include <memory>

#include "dra/log.h"

namespace dra::testing {

class DiscardSink : public LogSink {
 public:
  void Write(const LogRecord&) override {}
};

inline Logger DiscardLogger() { return Logger(std::make_shared<DiscardSink>()); }

}  // namespace dra::testing
