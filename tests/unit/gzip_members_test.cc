// GzipMembers: a gzip stream of several members, as kube-apiserver sends a
// watch-list stream (one member per flush), fed in pieces of every size.
#include "k8s/gzip_members.h"

#include <zlib.h>

#include <catch2/catch.hpp>

#include <string>

namespace dra::k8s::internal {
namespace {

// `text` as one gzip member.
std::string Gzip(const std::string& text) {
  z_stream z = {};
  REQUIRE(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

TEST_CASE("gzip members in a row inflate to their texts in a row, whatever the pieces", "[gzip]") {
  std::string large;
  for (int i = 0; i < 20000; ++i) large += "{\"type\":\"ADDED\",\"object\":{}}\n";  // inflates past one buffer
  const std::string texts[] = {"{\"type\":\"ADDED\"}\n", large, "", "{\"type\":\"BOOKMARK\"}\n"};
  std::string stream, want;
  for (const std::string& text : texts) {
    stream += Gzip(text);
    want += text;
  }
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, stream.size()}) {
    GzipMembers gzip;
    std::string got;
    for (size_t at = 0; at < stream.size(); at += piece) {
      REQUIRE(gzip.Inflate(std::string_view(stream).substr(at, piece), got).ok());
    }
    CHECK(got == want);
  }
}

TEST_CASE("bytes that are no gzip are DataLoss, and the stream stays failed", "[gzip]") {
  GzipMembers gzip;
  std::string out;
  const absl::Status status = gzip.Inflate("{\"type\":\"ADDED\"}\n", out);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(status.message()).rfind("gzip: ", 0) == 0);
  CHECK(gzip.Inflate(Gzip("x"), out).code() == absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace dra::k8s::internal
