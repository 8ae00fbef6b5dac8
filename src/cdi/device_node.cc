#include "dra/cdi/device_node.h"

#include <cerrno>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "absl/strings/str_cat.h"

namespace dra::cdi {

absl::Status FillDeviceNodeFromHost(DeviceNode& node) {
  const std::string& host_path = node.host_path.empty() ? node.path : node.host_path;
  struct stat info;
  if (::lstat(host_path.c_str(), &info) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("device node ", node.path, ": lstat ", host_path));
  }
  std::string host_type;
  switch (info.st_mode & S_IFMT) {
    case S_IFBLK:
      host_type = "b";
      break;
    case S_IFCHR:
      host_type = "c";
      break;
    case S_IFIFO:
      host_type = "p";
      break;
    default:
      return absl::FailedPreconditionError(
          absl::StrCat("device node ", node.path, ": ", host_path, " is not a device node"));
  }
  const bool matches = node.type.empty() || node.type == host_type || (node.type == "u" && host_type == "c");
  if (!matches) {
    return absl::FailedPreconditionError(absl::StrCat("device node ", node.path, ": type \"", node.type, "\" but ",
                                                      host_path, " has type \"", host_type, "\""));
  }
  if (node.type.empty()) node.type = host_type;
  if (node.major == 0 && host_type != "p") {
    node.major = major(info.st_rdev);
    node.minor = minor(info.st_rdev);
  }
  return absl::OkStatus();
}

}  // namespace dra::cdi
