#include "k8s/gzip_members.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"

namespace dra::k8s::internal {

struct GzipMembers::State {
  z_stream stream = {};
  bool ready = false;  // inflateInit2 succeeded
  bool failed = false;
};

GzipMembers::GzipMembers() : state_(std::make_unique<State>()) {
  // 16 + MAX_WBITS: a gzip header and trailer, not zlib's.
  state_->ready = inflateInit2(&state_->stream, 16 + MAX_WBITS) == Z_OK;
}

GzipMembers::~GzipMembers() {
  if (state_->ready) inflateEnd(&state_->stream);
}

absl::Status GzipMembers::Inflate(std::string_view data, std::string& out) {
  State& s = *state_;
  if (!s.ready) return absl::ResourceExhaustedError("gzip: cannot initialise zlib");
  if (s.failed) return absl::DataLossError("gzip: the stream failed before");
  z_stream& z = s.stream;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  char buffer[16384];
  // Until the input is used up and zlib holds no more output.
  do {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    const int result = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (result == Z_STREAM_END) {
      inflateReset(&z);  // what follows is the next member
    } else if (result == Z_BUF_ERROR) {
      break;  // nothing to do without more input
    } else if (result != Z_OK) {
      s.failed = true;
      return absl::DataLossError(
          absl::StrCat("gzip: ", z.msg != nullptr ? z.msg : "corrupt data", " (zlib ", result, ")"));
    }
  } while (z.avail_in > 0 || z.avail_out == 0);
  return absl::OkStatus();
}

}  // namespace dra::k8s::internal
