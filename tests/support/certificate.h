// A self-signed certificate for a TLS server on loopback (127.0.0.1 and
// localhost), made by openssl(1): what a test serves and trusts.
#pragma once

#include <string>

namespace dra::testing {

struct CertificateFiles {
  std::string cert;  // PEM; also the CA file a client trusts
  std::string key;   // PEM
};

// Writes dir/name.crt and dir/name.key (subject CN=name, valid two days);
// fails the test when openssl does.
CertificateFiles MakeSelfSignedCertificate(const std::string& dir, const std::string& name);

}  // namespace dra::testing
