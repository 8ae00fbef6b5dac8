// example::LogFlags: the log flags every example program takes: -v and
// --log-format (text, klog's format, or json; also LOG_FORMAT).
#pragma once

#include <string>

#include "common/flags.h"
#include "dra/log.h"

namespace example {

struct LogFlags {
  int verbosity = 0;                // -v
  std::string log_format = "text";  // --log-format text|json, LOG_FORMAT

  void Register(FlagSet& flags);

  // The logger the flags ask for, writing to stderr.
  dra::Logger MakeLogger() const;
};

}  // namespace example
