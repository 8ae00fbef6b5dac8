// An exec credential plugin's stdout (ParseExecCredential, in
// src/k8s/auth.h): every input, for either ExecCredential version, is a
// credential or fails with Unauthenticated, and a credential has a token or
// a certificate with its key.
#include "fuzz_check.h"
#include "k8s/auth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string output(dra::fuzz::AsText(data, size));
  for (const char* version : {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}) {
    absl::StatusOr<dra::k8s::internal::ExecCredential> credential =
        dra::k8s::internal::ParseExecCredential(output, version);
    if (!credential.ok()) {
      DRA_FUZZ_CHECK(absl::IsUnauthenticated(credential.status()));
      continue;
    }
    DRA_FUZZ_CHECK(!credential->token.empty() || !credential->client_certificate_data.empty());
    DRA_FUZZ_CHECK(credential->client_certificate_data.empty() == credential->client_key_data.empty());
  }
  return 0;
}
