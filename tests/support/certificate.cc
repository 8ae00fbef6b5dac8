#include "support/certificate.h"

#include <catch2/catch.hpp>

#include "support/subprocess.h"

namespace dra::testing {

CertificateFiles MakeSelfSignedCertificate(const std::string& dir, const std::string& name) {
  const CertificateFiles files{dir + "/" + name + ".crt", dir + "/" + name + ".key"};
  absl::StatusOr<ProcessResult> made =
      RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                  "-nodes", "-days", "2", "-subj", "/CN=" + name, "-addext",
                  "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", files.key, "-out", files.cert});
  REQUIRE(made.ok());
  INFO(made->out << made->err);
  REQUIRE(made->exit_code == 0);
  return files;
}

}  // namespace dra::testing
