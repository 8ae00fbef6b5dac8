// A temporary directory removed with everything in it when the object dies.
#pragma once

#include <string>

namespace dra::testing {

class TempDir {
 public:
  // Creates a fresh directory under $TMPDIR (or /tmp), mode 0700.
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string Join(const std::string& name) const;

 private:
  std::string path_;
};

// Reads a whole file; empty string if it cannot be read.
std::string ReadFile(const std::string& path);
// Writes a whole file, replacing it; throws std::runtime_error on failure.
void WriteFile(const std::string& path, const std::string& content);

}  // namespace dra::testing
