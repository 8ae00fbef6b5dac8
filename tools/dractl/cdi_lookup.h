// What a CDI spec directory defines, as a container runtime's CDI cache
// reads it: the devices of each kind, and the spec files that define them.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dra::sanity {

struct CdiDirectory {
  // kind ("vendor/class") -> device name -> the spec files defining it
  // (more than one is a conflict the runtime refuses).
  std::map<std::string, std::map<std::string, std::vector<std::string>>> devices;
  // "<file>: <why>" for each .json or .yaml file that does not decode or
  // validate; the runtime ignores it.
  std::vector<std::string> invalid;
  // An error listing the directory itself; empty when it was read.
  std::string error;

  // The spec files defining `qualified_name` ("vendor/class=name").
  std::vector<std::string> Resolve(const std::string& qualified_name) const;
};

CdiDirectory ReadCdiDirectory(const std::string& dir);

}  // namespace dra::sanity
