/// @file
/// dra::LogFlags: the log flags of a driver, as klog's: -v and --log-format
/// (text, klog's format, or json; also LOG_FORMAT).
#pragma once

#include <string>

#include "dra/flags.h"
#include "dra/log.h"

namespace dra {

/// The log flags; register them, parse, then MakeLogger().
struct LogFlags {
  int verbosity = 0;                ///< -v
  std::string log_format = "text";  ///< --log-format text|json, LOG_FORMAT

  /// Adds -v and --log-format to `flags`.
  void Register(FlagSet& flags);

  /// The logger the flags ask for, writing to stderr.
  Logger MakeLogger() const;
};

}  // namespace dra
