// A device-plugin author's use of dra::cdi alone: writes a spec file, reads
// it back, prints OK.
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "dra/cdi/codec.h"
#include "dra/cdi/qualified_name.h"
#include "dra/cdi/spec_dir.h"

int main() {
  std::string pattern = (std::filesystem::temp_directory_path() / "dra-cdi-consumer-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::cerr << "mkdtemp failed\n";
    return 1;
  }
  dra::cdi::Spec spec;
  spec.kind = "consumer.example.com/gpu";
  dra::cdi::Device& device = spec.devices.emplace_back();
  device.name = "gpu0";
  device.container_edits.device_nodes.emplace_back().path = "/dev/null";

  dra::cdi::SpecDirOptions options;
  options.path = pattern;
  const dra::cdi::SpecDir dir(options);
  const auto written = dir.Write(dra::cdi::TransientSpecFileName({"consumer.example.com", "gpu"}, "uid-1"), spec);
  const auto id = dra::cdi::MakeQualifiedName(spec.kind, device.name);
  int rc = 0;
  if (!written.ok() || !id.ok()) {
    std::cerr << "cdi: " << (written.ok() ? id.status() : written.status()) << "\n";
    rc = 1;
  } else {
    std::cout << "OK" << std::endl;
  }
  std::filesystem::remove_all(pattern);
  return rc;
}
