#include "k8s/http_util.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"

namespace dra::k8s {
namespace internal {
namespace {

using nlohmann::json;

absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

const char* ReasonPhrase(int code) {
  switch (code) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "Request Entity Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

absl::StatusCode CodeFor(int http_code, const std::string& reason) {
  switch (http_code) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kFailedPrecondition;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    default:
      break;
  }
  if (http_code >= 500 && http_code <= 599) return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kUnknown;
}

// Printable text of at most 256 bytes from an arbitrary body.
std::string Snippet(std::string_view body) {
  std::string out;
  for (char c : body.substr(0, 256)) {
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u == '\n' || u == '\t' ? ' ' : (u < 0x20 || u == 0x7f ? '?' : c));
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (body.size() > 256) out += "...";
  return out;
}

absl::Status Build(int http_code, const std::string& reason, std::string message, std::string_view context) {
  if (message.empty()) message = absl::StrCat("HTTP ", http_code, " ", ReasonPhrase(http_code));
  if (http_code == 410) message = absl::StrCat("expired: ", message);
  if (!context.empty()) absl::StrAppend(&message, " [", AsAbsl(context), ": HTTP ", http_code, "]");
  absl::Status status(CodeFor(http_code, reason), message);
  // From an lvalue: Cord's constructor from a std::string&& is instantiated
  // in libabsl, and Clang 18 and later mangle its name otherwise than the GCC
  // that built Debian 13's libabsl does (llvm/llvm-project#102443).
  const std::string code = std::to_string(http_code);
  status.SetPayload(kHttpStatusPayloadUrl, absl::Cord(code));
  if (!reason.empty()) status.SetPayload(kStatusReasonPayloadUrl, absl::Cord(reason));
  return status;
}

}  // namespace

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' || u == '.' ||
        u == '_' || u == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

std::string ResourcePath(const ResourceRef& ref, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path =
      ref.group.empty() ? absl::StrCat("/api/", ref.version) : absl::StrCat("/apis/", ref.group, "/", ref.version);
  if (!ns.empty()) absl::StrAppend(&path, "/namespaces/", PercentEncode(ns));
  absl::StrAppend(&path, "/", ref.resource);
  if (!name.empty()) {
    absl::StrAppend(&path, "/", PercentEncode(name));
    if (!subresource.empty()) absl::StrAppend(&path, "/", PercentEncode(subresource));
  }
  return path;
}

std::string Query(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (value.empty()) continue;
    absl::StrAppend(&out, out.empty() ? "?" : "&", PercentEncode(key), "=", PercentEncode(value));
  }
  return out;
}

absl::Status StatusFromMetaStatus(const nlohmann::json& status, int fallback_code, std::string_view context) {
  auto text = [](const json& object, const char* key) -> std::string {
    if (!object.is_object()) return "";
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  int code = fallback_code;
  if (auto it = status.find("code");
      it != status.end() && it->is_number_integer() && it->get<int64_t>() > 0 && it->get<int64_t>() < 1000) {
    code = static_cast<int>(it->get<int64_t>());
  }
  std::string reason = text(status, "reason");
  std::string message = text(status, "message");
  if (code == 400 || code == 422) {
    auto details = status.find("details");
    if (details != status.end() && details->is_object()) {
      auto causes = details->find("causes");
      if (causes != details->end() && causes->is_array()) {
        for (const json& cause : *causes) {
          std::string field = text(cause, "field");
          std::string cause_message = text(cause, "message");
          std::string item = field.empty() ? cause_message : absl::StrCat(field, ": ", cause_message);
          if (item.empty() || absl::StrContains(message, item)) continue;
          absl::StrAppend(&message, message.empty() ? "" : "; ", item);
        }
      }
    }
  }
  return Build(code, reason, std::move(message), context);
}

absl::Status StatusFromResponse(int http_code, std::string_view body, std::string_view context) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("kind") && doc["kind"] == "Status") {
    // The HTTP code is the truth; the body's code only if they agree or the
    // HTTP layer had none.
    json copy = doc;
    copy["code"] = http_code;
    return StatusFromMetaStatus(copy, http_code, context);
  }
  return Build(http_code, "", Snippet(body), context);
}

std::optional<absl::Duration> ParseRetryAfter(std::string_view value, absl::Time now) {
  absl::string_view text = absl::StripAsciiWhitespace(AsAbsl(value));
  if (text.empty()) return std::nullopt;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(text, &seconds)) {
    if (seconds < 0) return std::nullopt;
    return absl::Seconds(seconds);
  }
  absl::Time when;
  std::string err;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", text, absl::UTCTimeZone(), &when, &err)) {
    return std::max(absl::ZeroDuration(), when - now);
  }
  return std::nullopt;
}

absl::Status Rewrap(const absl::Status& status, absl::StatusCode code, std::string message) {
  absl::Status out(code, message);
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps),
      burst_(std::max(1, burst)),
      tokens_(std::max(1, burst)),
      last_(absl::InfinitePast()),
      unlimited_(!(qps > 0)) {}

absl::Duration TokenBucket::Reserve(absl::Time now) {
  if (unlimited_) return absl::ZeroDuration();
  dra::MutexLock lock(&mu_);
  if (last_ != absl::InfinitePast() && now > last_) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
  }
  if (now > last_) last_ = now;
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  return absl::Seconds(-tokens_ / qps_) + (last_ - now);
}

void TokenBucket::Cancel() {
  if (unlimited_) return;
  dra::MutexLock lock(&mu_);
  tokens_ = std::min(burst_, tokens_ + 1);
}

absl::Status LineDecoder::Feed(std::string_view data, const std::function<absl::Status(std::string_view)>& on_line) {
  auto emit = [&](std::string_view line) -> absl::Status {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return absl::OkStatus();
    return on_line(line);
  };
  while (!data.empty()) {
    size_t newline = data.find('\n');
    if (newline == std::string_view::npos) {
      if (pending_.size() + data.size() > max_line_) {
        return absl::ResourceExhaustedError(absl::StrCat("watch stream: a line is longer than ", max_line_, " bytes"));
      }
      pending_.append(data.data(), data.size());
      return absl::OkStatus();
    }
    std::string_view head = data.substr(0, newline);
    data.remove_prefix(newline + 1);
    absl::Status status;
    if (pending_.empty()) {
      status = emit(head);
    } else {
      if (pending_.size() + head.size() > max_line_) {
        return absl::ResourceExhaustedError(absl::StrCat("watch stream: a line is longer than ", max_line_, " bytes"));
      }
      pending_.append(head.data(), head.size());
      std::string line = std::move(pending_);
      pending_.clear();
      status = emit(line);
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace internal

std::optional<int> HttpStatusCode(const absl::Status& status) {
  auto payload = status.GetPayload(kHttpStatusPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  int code = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &code)) return std::nullopt;
  return code;
}

std::string StatusReason(const absl::Status& status) {
  auto payload = status.GetPayload(kStatusReasonPayloadUrl);
  return payload.has_value() ? std::string(*payload) : std::string();
}

bool IsGone(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kFailedPrecondition) return false;
  return HttpStatusCode(status) == 410 || absl::StartsWith(status.message(), "expired:");
}

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  return internal::Rewrap(status, status.code(), absl::StrCat(std::string(context), ": ", status.message()));
}

bool IsConflict(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted && HttpStatusCode(status) == 409;
}

}  // namespace dra::k8s
