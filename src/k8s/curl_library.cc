#include "k8s/curl_library.h"

#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"

namespace dra::k8s::internal {
namespace {

constexpr char kSoname[] = "libcurl.so.4";

CurlLibrary g_curl;
absl::Status g_loaded = absl::UnknownError("libcurl not loaded");
std::once_flag g_once;

template <typename Fn>
bool Bind(void* handle, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (fn == nullptr) missing = name;
  return fn != nullptr;
}

absl::Status Load() {
  // RTLD_NODELETE: the functions stay valid for the process's life.
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("load ", kSoname, " (Debian package libcurl4): ", error != nullptr ? error : "dlopen failed"));
  }
  std::string missing;
  CurlLibrary& c = g_curl;
  const bool all =
      Bind(handle, "curl_global_init", c.global_init, missing) &&
      Bind(handle, "curl_easy_init", c.easy_init, missing) &&
      Bind(handle, "curl_easy_setopt", c.easy_setopt, missing) &&
      Bind(handle, "curl_easy_getinfo", c.easy_getinfo, missing) &&
      Bind(handle, "curl_easy_perform", c.easy_perform, missing) &&
      Bind(handle, "curl_easy_reset", c.easy_reset, missing) &&
      Bind(handle, "curl_easy_cleanup", c.easy_cleanup, missing) &&
      Bind(handle, "curl_easy_strerror", c.easy_strerror, missing) &&
      Bind(handle, "curl_slist_append", c.slist_append, missing) &&
      Bind(handle, "curl_slist_free_all", c.slist_free_all, missing) &&
      Bind(handle, "curl_multi_init", c.multi_init, missing) &&
      Bind(handle, "curl_multi_setopt", c.multi_setopt, missing) &&
      Bind(handle, "curl_multi_add_handle", c.multi_add_handle, missing) &&
      Bind(handle, "curl_multi_remove_handle", c.multi_remove_handle, missing) &&
      Bind(handle, "curl_multi_perform", c.multi_perform, missing) &&
      Bind(handle, "curl_multi_poll", c.multi_poll, missing) &&
      Bind(handle, "curl_multi_wakeup", c.multi_wakeup, missing) &&
      Bind(handle, "curl_multi_info_read", c.multi_info_read, missing) &&
      Bind(handle, "curl_multi_cleanup", c.multi_cleanup, missing) &&
      Bind(handle, "curl_share_init", c.share_init, missing) &&
      Bind(handle, "curl_share_setopt", c.share_setopt, missing) &&
      Bind(handle, "curl_share_cleanup", c.share_cleanup, missing) && Bind(handle, "curl_url", c.url, missing) &&
      Bind(handle, "curl_url_set", c.url_set, missing) && Bind(handle, "curl_url_get", c.url_get, missing) &&
      Bind(handle, "curl_url_cleanup", c.url_cleanup, missing) && Bind(handle, "curl_free", c.free, missing);
  if (!all) {
    return absl::FailedPreconditionError(
        absl::StrCat(kSoname, " has no ", missing, ": libcurl 7.87 or newer is needed (Debian 12's libcurl4)"));
  }
  if (CURLcode code = c.global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return absl::InternalError(absl::StrCat("curl_global_init: ", c.easy_strerror(code)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadCurl() {
  std::call_once(g_once, [] { g_loaded = Load(); });
  return g_loaded;
}

const CurlLibrary& Curl() { return g_curl; }

}  // namespace dra::k8s::internal
