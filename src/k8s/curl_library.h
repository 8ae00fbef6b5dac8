// libcurl, loaded with dlopen when the first API client is created: a
// driver that never talks to an API server (or a process that only uses
// dra::k8s's types) does not load libcurl and the two dozen libraries it
// brings (its TLS, Kerberos, LDAP, SSH and IDN stacks): about 4 MB of
// resident memory and their relocations at exec. The functions keep
// libcurl's signatures; Curl().easy_setopt(...) is curl_easy_setopt(...).
#pragma once

#include <curl/curl.h>

#include "absl/status/status.h"

namespace dra::k8s::internal {

struct CurlLibrary {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_reset) easy_reset;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  decltype(&::curl_multi_init) multi_init;
  decltype(&::curl_multi_setopt) multi_setopt;
  decltype(&::curl_multi_add_handle) multi_add_handle;
  decltype(&::curl_multi_remove_handle) multi_remove_handle;
  decltype(&::curl_multi_perform) multi_perform;
  decltype(&::curl_multi_poll) multi_poll;
  decltype(&::curl_multi_wakeup) multi_wakeup;
  decltype(&::curl_multi_info_read) multi_info_read;
  decltype(&::curl_multi_cleanup) multi_cleanup;
  decltype(&::curl_share_init) share_init;
  decltype(&::curl_share_setopt) share_setopt;
  decltype(&::curl_share_cleanup) share_cleanup;
  decltype(&::curl_url) url;
  decltype(&::curl_url_set) url_set;
  decltype(&::curl_url_get) url_get;
  decltype(&::curl_url_cleanup) url_cleanup;
  decltype(&::curl_free) free;
};

// Loads libcurl.so.4 and runs curl_global_init, once per process;
// thread-safe. Fails, saying what to install, when the library or one of
// its functions is missing.
absl::Status LoadCurl();

// The loaded library. Only after LoadCurl() returned OK.
const CurlLibrary& Curl();

}  // namespace dra::k8s::internal
