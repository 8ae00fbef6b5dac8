#include "dra/kubeletplugin/driver.h"

namespace dra::kubeletplugin {

std::string_view ErrorSeverityName(ErrorSeverity severity) {
  return severity == ErrorSeverity::kFatal ? "fatal" : "recoverable";
}

}  // namespace dra::kubeletplugin
