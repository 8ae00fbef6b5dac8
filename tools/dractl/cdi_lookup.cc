#include "dractl/cdi_lookup.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "dra/cdi/codec.h"
#include "dra/cdi/qualified_name.h"
#include "dra/cdi/validation.h"

namespace dra::sanity {

std::vector<std::string> CdiDirectory::Resolve(const std::string& qualified_name) const {
  absl::StatusOr<cdi::QualifiedName> name = cdi::ParseQualifiedName(qualified_name);
  if (!name.ok()) return {};
  const auto kind = devices.find(absl::StrCat(name->vendor, "/", name->class_name));
  if (kind == devices.end()) return {};
  const auto device = kind->second.find(name->name);
  return device == kind->second.end() ? std::vector<std::string>() : device->second;
}

CdiDirectory ReadCdiDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  CdiDirectory result;
  std::error_code error;
  for (fs::directory_iterator entry(dir, error), end; !error && entry != end; entry.increment(error)) {
    const std::string extension = entry->path().extension().string();
    if (extension != ".json" && extension != ".yaml") continue;
    const std::string path = entry->path().string();
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    absl::StatusOr<cdi::Spec> spec =
        cdi::DecodeSpec(text.str(), extension == ".json" ? cdi::Format::kJson : cdi::Format::kYaml);
    absl::Status valid = spec.ok() ? cdi::ValidateSpec(*spec) : spec.status();
    if (!valid.ok()) {
      result.invalid.push_back(absl::StrCat(path, ": ", valid.message()));
      continue;
    }
    for (const cdi::Device& device : spec->devices) result.devices[spec->kind][device.name].push_back(path);
  }
  if (error) result.error = absl::StrCat(dir, ": ", error.message());
  return result;
}

}  // namespace dra::sanity
