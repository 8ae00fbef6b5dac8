// The fake API server (tests/support/fakeapiserver, which the integration
// tests use) against the real kube-apiserver v1.37.2 of the e2e cluster:
// every test sends the same raw HTTP requests to both and compares the
// status codes, the metav1.Status reason, code and causes, the Warning
// headers, and the objects each returns after normalization (uid,
// resourceVersion, timestamps and generateName suffixes differ by nature).
// Where the fake deliberately differs, the test asserts the difference and
// says why; tests/support/fakeapiserver/README.md lists them.
//
// The fake is started per test case; on the real server every test case
// works in its own namespace and names its cluster-scoped objects uniquely,
// with the same names on both servers.
#include <curl/curl.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "dra/k8s/client.h"
#include "dra/k8s/client_config.h"
#include "e2e/e2e_cluster.h"
#include "support/fake_apiserver.h"
#include "support/poll.h"
#include "support/watch_thread.h"

namespace dra::k8s {
namespace {

using dra::e2e::AdminConfig;
using dra::e2e::MakeClient;
using dra::e2e::UniqueName;
using dra::testing::FakeApiServer;
using dra::testing::PollUntil;
using dra::testing::WatchThread;
using nlohmann::json;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
constexpr char kClasses[] = "/apis/resource.k8s.io/v1/deviceclasses";
constexpr char kNodesPath[] = "/api/v1/nodes";
constexpr char kJson[] = "application/json";
constexpr char kMerge[] = "application/merge-patch+json";
constexpr char kJsonPatch[] = "application/json-patch+json";
constexpr char kStrategic[] = "application/strategic-merge-patch+json";
constexpr char kApply[] = "application/apply-patch+yaml";

// One server: base URL, CA and bearer token.
struct Server {
  std::string name;  // "real" or "fake"
  std::string url;
  std::string ca_file;
  std::string token;
};

struct Reply {
  long code = 0;
  std::vector<std::string> warnings;  // Warning header values
  json body;                          // null when the body is not JSON
  std::string raw;
};

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t CollectWarning(char* data, size_t size, size_t n, void* out) {
  std::string line(data, size * n);
  constexpr char kName[] = "warning:";
  if (line.size() > sizeof(kName) && absl::EqualsIgnoreCase(line.substr(0, sizeof(kName) - 1), kName)) {
    std::string value = line.substr(sizeof(kName) - 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    static_cast<std::vector<std::string>*>(out)->push_back(value);
  }
  return size * n;
}

// A raw request: no retries, no Accept-Encoding, the Warning headers kept.
Reply Send(const Server& server, const std::string& method, const std::string& path, const std::string& body,
           const std::string& content_type) {
  CURL* curl = curl_easy_init();
  REQUIRE(curl != nullptr);
  Reply reply;
  char error[CURL_ERROR_SIZE] = {0};
  const std::string target = server.url + path;
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_CAINFO, server.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.raw);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, CollectWarning);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reply.warnings);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_slist* headers = nullptr;
  const std::string auth = "Authorization: Bearer " + server.token;
  const std::string type = "Content-Type: " + content_type;
  headers = curl_slist_append(headers, auth.c_str());
  if (!body.empty()) headers = curl_slist_append(headers, type.c_str());
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, "User-Agent: parity/1.0");  // field manager "parity"
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  INFO(server.name << " " << method << " " << target << ": " << (error[0] != '\0' ? error : curl_easy_strerror(rc)));
  REQUIRE(rc == CURLE_OK);
  reply.body = json::parse(reply.raw, nullptr, /*allow_exceptions=*/false);
  if (reply.body.is_discarded()) reply.body = nullptr;
  return reply;
}

// A raw watch stream: its events, read until `done` says so (or 20 s pass).
struct Stream {
  std::string buffer;
  std::vector<json> events;
  std::function<bool(const std::vector<json>&)> done;
  bool finished = false;
};

size_t ReadEvents(char* data, size_t size, size_t n, void* out) {
  auto* stream = static_cast<Stream*>(out);
  stream->buffer.append(data, size * n);
  size_t end;
  while ((end = stream->buffer.find('\n')) != std::string::npos) {
    json event = json::parse(stream->buffer.substr(0, end), nullptr, /*allow_exceptions=*/false);
    stream->buffer.erase(0, end + 1);
    if (!event.is_discarded()) stream->events.push_back(event);
    if (stream->done(stream->events)) {
      stream->finished = true;
      return 0;  // ends the transfer
    }
  }
  return size * n;
}

std::vector<json> WatchUntil(const Server& server, const std::string& path,
                             std::function<bool(const std::vector<json>&)> done) {
  CURL* curl = curl_easy_init();
  REQUIRE(curl != nullptr);
  Stream stream;
  stream.done = std::move(done);
  const std::string target = server.url + path;
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_CAINFO, server.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ReadEvents);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &stream);
  curl_slist* headers = nullptr;
  const std::string auth = "Authorization: Bearer " + server.token;
  headers = curl_slist_append(headers, auth.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_perform(curl);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  INFO(server.name << " GET " << path << " did not reach the expected events; got " << json(stream.events).dump());
  CHECK(stream.finished);
  return stream.events;
}

// "TYPE name" of a watch event, with the initial-events-end annotation.
std::string Describe(const json& event) {
  const json& md = event["object"]["metadata"];
  std::string out = event.value("type", "") + " " + md.value("name", "");
  if (md.contains("annotations") && md["annotations"].contains("k8s.io/initial-events-end"))
    out += "initial-events-end";
  return out;
}

// What differs between two servers by nature, replaced by a marker: uid,
// resourceVersion, timestamps (creation, deletion, managedFields, device
// taints' timeAdded), the random generateName suffix, continue tokens.
// managedFields entries are sorted by manager, operation and subresource
// (the servers sort them by time, which may fall in different seconds).
json Normalize(json v) {
  if (v.is_array()) {
    for (json& e : v) e = Normalize(e);
    return v;
  }
  if (!v.is_object()) return v;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key() == "metadata" || it.key() == "items") continue;
    if (it.key() == "timeAdded" && it->is_string()) {
      *it = "<time>";
      continue;
    }
    *it = Normalize(*it);
  }
  if (v.contains("items") && v["items"].is_array()) v["items"] = Normalize(v["items"]);
  if (v.value("kind", "") == "Status" && v.contains("details") && v["details"].contains("uid")) {
    v["details"]["uid"] = "<set>";  // a delete answered with a Status names the uid
  }
  if (v.contains("metadata") && v["metadata"].is_object()) {
    json& md = v["metadata"];
    for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "continue"}) {
      if (md.contains(field)) md[field] = "<set>";
    }
    if (md.contains("generateName") && md.contains("name") && md["name"].is_string() &&
        absl::StartsWith(md["name"].get<std::string>(), md["generateName"].get<std::string>())) {
      md["name"] = md["generateName"].get<std::string>() + "<suffix>";
    }
    if (md.contains("managedFields") && md["managedFields"].is_array()) {
      json& entries = md["managedFields"];
      for (json& e : entries) e.erase("time");
      std::sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
        return std::make_tuple(a.value("manager", ""), a.value("operation", ""), a.value("subresource", "")) <
               std::make_tuple(b.value("manager", ""), b.value("operation", ""), b.value("subresource", ""));
      });
    }
  }
  return v;
}

// The field paths of a Status's causes, sorted.
std::vector<std::string> CauseFields(const json& status) {
  std::vector<std::string> out;
  if (status.is_object() && status.contains("details") && status["details"].contains("causes")) {
    for (const json& c : status["details"]["causes"]) out.push_back(c.value("field", ""));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::string Show(const Reply& r) {
  return absl::StrCat("HTTP ", r.code,
                      r.warnings.empty() ? "" : absl::StrCat(" warnings [", absl::StrJoin(r.warnings, " | "), "]"),
                      "\n", r.body.is_null() ? r.raw : r.body.dump(1));
}

// The replies of both servers to one request.
struct Pair {
  Reply real;
  Reply fake;
};

// Both servers, the namespace the test case works in (created on the real
// server; the fake has no namespace objects and accepts any), and the
// comparisons.
class Parity {
 public:
  explicit Parity(const std::string& prefix) {
    auto fake = FakeApiServer::Start();
    INFO(fake.status().ToString());
    REQUIRE(fake.ok());
    fake_server_ = std::move(*fake);
    ClientConfig admin = AdminConfig();
    real_ = {"real", admin.server, admin.ca_file, admin.bearer_token};
    fake_ = {"fake", fake_server_->url(), fake_server_->ca_file(), fake_server_->admin_token()};
    REQUIRE(!real_.token.empty());
    ns_ = UniqueName(prefix);
    Reply created =
        Send(real_, "POST", "/api/v1/namespaces",
             json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}}.dump(), kJson);
    INFO(Show(created));
    REQUIRE(created.code == 201);
  }

  const std::string& ns() const { return ns_; }
  std::string Claims() const { return "/apis/resource.k8s.io/v1/namespaces/" + ns_ + "/resourceclaims"; }
  const Server& real() const { return real_; }
  const Server& fake() const { return fake_; }
  FakeApiServer& fake_server() { return *fake_server_; }

  Pair Do(const std::string& method, const std::string& path, const json& body = nullptr,
          const std::string& content_type = kJson) {
    const std::string text = body.is_null() ? "" : body.dump();
    return {Send(real_, method, path, text, content_type), Send(fake_, method, path, text, content_type)};
  }

  // Same status code, same Warning headers (as sets: the real server lists
  // unknown fields in document order, the fake sorted by name) and the same
  // body after Normalize(). Returns the pair for further checks.
  Pair Same(const std::string& what, const std::string& method, const std::string& path, const json& body = nullptr,
            const std::string& content_type = kJson) {
    Pair p = Do(method, path, body, content_type);
    CheckSame(what, p);
    return p;
  }

  static void CheckSame(const std::string& what, const Pair& p) {
    INFO(what << "\nreal: " << Show(p.real) << "\nfake: " << Show(p.fake));
    CHECK(p.real.code == p.fake.code);
    CHECK(Sorted(p.real.warnings) == Sorted(p.fake.warnings));
    if (p.real.code >= 400) {
      CheckSameStatus(p);
      return;
    }
    const json real = Normalize(p.real.body);
    const json fake = Normalize(p.fake.body);
    INFO("difference (a JSON patch from real to fake): " << json::diff(real, fake).dump());
    CHECK(real == fake);
  }

  // Same code, reason, message, and causes (fields, reasons, messages).
  static void CheckSameStatus(const Pair& p) {
    const json& r = p.real.body;
    const json& f = p.fake.body;
    REQUIRE(r.is_object());
    REQUIRE(f.is_object());
    CHECK(r.value("kind", "") == "Status");
    CHECK(f.value("kind", "") == "Status");
    CHECK(r.value("code", 0) == f.value("code", 0));
    CHECK(r.value("reason", "") == f.value("reason", ""));
    CHECK(r.value("message", "") == f.value("message", ""));
    CHECK(r.value("details", json::object()) == f.value("details", json::object()));
  }

 private:
  std::unique_ptr<FakeApiServer> fake_server_;
  Server real_;
  Server fake_;
  std::string ns_;
};

json Slice(const std::string& name, const std::string& node, const std::string& pool,
           const std::string& driver = "gpu.parity.example.com") {
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceSlice"},
              {"metadata", {{"name", name}, {"labels", {{"parity", "yes"}}}}},
              {"spec",
               {{"driver", driver},
                {"nodeName", node},
                {"pool", {{"name", pool}, {"generation", 1}, {"resourceSliceCount", 1}}},
                {"devices",
                 json::array({{{"name", "gpu-0"},
                               {"attributes",
                                {{"model", {{"string", "p-1000"}}},
                                 {"index", {{"int", 0}}},
                                 {"v", {{"version", "1.2.3"}}},
                                 {"ok", {{"bool", true}}}}},
                               {"capacity", {{"memory", {{"value", "1024Mi"}}}, {"frac", {{"value", "1.5"}}}}}}})}}}};
}

json Claim(const std::string& name) {
  return json{
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"devices",
         {{"requests", json::array({{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}}})},
          {"constraints",
           json::array({{{"requests", json::array({"gpu"})}, {"matchAttribute", "gpu.example.com/model"}}})}}}}}};
}

json Allocation(const std::string& node) {
  json result = {{"request", "gpu"}, {"driver", "gpu.parity.example.com"}, {"pool", node}, {"device", "gpu-0"}};
  json requirement = {{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({node})}};
  return json{{"devices", {{"results", json::array({result})}}},
              {"nodeSelector", {{"nodeSelectorTerms", json::array({{{"matchFields", json::array({requirement})}}})}}}};
}

json DeleteOptions(const std::string& uid, const std::string& rv) {
  json pre = json::object();
  if (!uid.empty()) pre["uid"] = uid;
  if (!rv.empty()) pre["resourceVersion"] = rv;
  return json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", pre}};
}

std::string Rv(const json& object) { return object["metadata"]["resourceVersion"].get<std::string>(); }

TEST_CASE("ResourceSlices: create, get, update, patches, generation, conflicts, preconditions, dryRun",
          "[e2e][parity]") {
  Parity p("parity-slices");
  const std::string name = UniqueName("ps");
  const std::string path = std::string(kSlices) + "/" + name;
  const std::string node = name + "-node";

  Pair created = p.Same("create (quantities canonicalized, generation 1, managedFields)", "POST", kSlices,
                        Slice(name, node, "pool-a"));
  REQUIRE(created.real.code == 201);
  CHECK(created.real.body["spec"]["devices"][0]["capacity"]["memory"]["value"] == "1Gi");
  p.Same("create again: AlreadyExists", "POST", kSlices, Slice(name, node, "pool-a"));
  p.Same("get", "GET", path);
  p.Same("get a missing slice: 404", "GET", path + "-nope");
  p.Same("delete a missing slice: 404", "DELETE", path + "-nope");
  p.Same("patch a missing slice: 404", "PATCH", path + "-nope", json{{"metadata", json::object()}}, kMerge);

  // Update: generation bumps with the spec; a stale resourceVersion is a
  // conflict; a write that changes nothing keeps the resourceVersion.
  json real_obj = created.real.body;
  json fake_obj = created.fake.body;
  for (json* o : {&real_obj, &fake_obj}) (*o)["spec"]["pool"]["generation"] = 2;
  Pair updated{Send(p.real(), "PUT", path, real_obj.dump(), kJson),
               Send(p.fake(), "PUT", path, fake_obj.dump(), kJson)};
  Parity::CheckSame("update: generation 2", updated);
  CHECK(updated.real.body["metadata"]["generation"] == 2);
  Pair stale{Send(p.real(), "PUT", path, real_obj.dump(), kJson), Send(p.fake(), "PUT", path, fake_obj.dump(), kJson)};
  Parity::CheckSame("update with a stale resourceVersion: Conflict", stale);
  CHECK(stale.real.code == 409);
  Pair noop{Send(p.real(), "PUT", path, updated.real.body.dump(), kJson),
            Send(p.fake(), "PUT", path, updated.fake.body.dump(), kJson)};
  Parity::CheckSame("an update that changes nothing", noop);
  CHECK(Rv(noop.real.body) == Rv(updated.real.body));
  CHECK(Rv(noop.fake.body) == Rv(updated.fake.body));
  real_obj = updated.real.body;
  fake_obj = updated.fake.body;
  for (json* o : {&real_obj, &fake_obj}) {
    (*o)["metadata"]["labels"]["extra"] = "1";
    (*o)["metadata"].erase("resourceVersion");  // unconditional
  }
  Pair metadata_only{Send(p.real(), "PUT", path, real_obj.dump(), kJson),
                     Send(p.fake(), "PUT", path, fake_obj.dump(), kJson)};
  Parity::CheckSame("an unconditional update of labels only: generation stays", metadata_only);
  CHECK(metadata_only.real.body["metadata"]["generation"] == 2);

  // Patches.
  p.Same("merge patch", "PATCH", path,
         json{{"metadata", {{"labels", {{"a", "1"}}}}}, {"spec", {{"pool", {{"generation", 3}}}}}}, kMerge);
  p.Same("strategic merge patch: finalizers are a merge list", "PATCH", path,
         json{{"metadata", {{"labels", {{"b", "2"}}}, {"finalizers", json::array({"parity.example.com/a"})}}}},
         kStrategic);
  p.Same("strategic merge patch: a second finalizer is added", "PATCH", path,
         json{{"metadata", {{"finalizers", json::array({"parity.example.com/b"})}}}}, kStrategic);
  p.Same(
      "strategic merge patch: $deleteFromPrimitiveList", "PATCH", path,
      json{{"metadata",
            {{"$deleteFromPrimitiveList/finalizers", json::array({"parity.example.com/a", "parity.example.com/b"})}}}},
      kStrategic);
  json ops = json::array({{{"op", "test"}, {"path", "/spec/pool/generation"}, {"value", 3}},
                          {{"op", "replace"}, {"path", "/spec/pool/generation"}, {"value", 4}},
                          {{"op", "add"}, {"path", "/spec/devices/-"}, {"value", {{"name", "gpu-1"}}}}});
  p.Same("JSON patch", "PATCH", path, ops, kJsonPatch);
  p.Same("JSON patch whose test fails: 422 without details", "PATCH", path, ops, kJsonPatch);
  p.Same("JSON patch making the object invalid: 422 with the field", "PATCH", path,
         json::array({{{"op", "replace"}, {"path", "/spec/devices/0/name"}, {"value", "Not_A_Name"}}}), kJsonPatch);
  p.Same("JSON patch of an immutable field", "PATCH", path,
         json::array({{{"op", "replace"}, {"path", "/spec/nodeName"}, {"value", "elsewhere"}}}), kJsonPatch);
  p.Same("merge patch of the driver (immutable)", "PATCH", path, json{{"spec", {{"driver", "other.example.com"}}}},
         kMerge);
  p.Same("merge patch with a stale resourceVersion", "PATCH", path,
         json{{"metadata", {{"resourceVersion", Rv(created.real.body)}}}}, kMerge);

  // dryRun: answered like the real write, nothing stored.
  Pair before = p.Same("get before dry runs", "GET", path);
  p.Same("dry-run merge patch", "PATCH", path + "?dryRun=All", json{{"spec", {{"pool", {{"generation", 9}}}}}}, kMerge);
  p.Same("dry-run create", "POST", std::string(kSlices) + "?dryRun=All", Slice(name + "-dry", node, "pool-a"));
  p.Same("the dry-run create stored nothing", "GET", path + "-dry");
  p.Same("dry-run delete", "DELETE", path + "?dryRun=All");
  Pair after = p.Same("unchanged after the dry runs", "GET", path);
  CHECK(Rv(after.real.body) == Rv(before.real.body));
  CHECK(Rv(after.fake.body) == Rv(before.fake.body));

  // Delete preconditions: a wrong uid or resourceVersion is a conflict whose
  // message names the values of each server, so the messages are compared
  // with those substituted.
  const std::string real_uid = after.real.body["metadata"]["uid"];
  const std::string fake_uid = after.fake.body["metadata"]["uid"];
  Pair wrong_uid = p.Do("DELETE", path, DeleteOptions("not-the-uid", ""));
  Pair wrong_rv = p.Do("DELETE", path, DeleteOptions("", "1"));
  for (Pair* pair : {&wrong_uid, &wrong_rv}) {
    INFO("real: " << Show(pair->real) << "\nfake: " << Show(pair->fake));
    CHECK(pair->real.code == 409);
    CHECK(pair->fake.code == 409);
    std::string fake_message = pair->fake.body.value("message", "");
    std::string real_message = pair->real.body.value("message", "");
    fake_message = absl::StrReplaceAll(
        fake_message, {{"(" + fake_uid + ")", "(<uid>)"}, {"(" + Rv(after.fake.body) + ")", "(<rv>)"}});
    real_message = absl::StrReplaceAll(
        real_message, {{"(" + real_uid + ")", "(<uid>)"}, {"(" + Rv(after.real.body) + ")", "(<rv>)"}});
    CHECK(real_message == fake_message);
    CHECK(pair->real.body["details"] == pair->fake.body["details"]);
    CHECK(pair->real.body["reason"] == pair->fake.body["reason"]);
  }
  Pair deleted{Send(p.real(), "DELETE", path, DeleteOptions(real_uid, Rv(after.real.body)).dump(), kJson),
               Send(p.fake(), "DELETE", path, DeleteOptions(fake_uid, Rv(after.fake.body)).dump(), kJson)};
  Parity::CheckSame("delete with matching preconditions returns the object", deleted);
  p.Same("gone", "GET", path);
}

TEST_CASE("ResourceSlices: generateName, finalizers and deletionTimestamp, defaults, validation", "[e2e][parity]") {
  Parity p("parity-slices2");
  const std::string name = UniqueName("pg");
  const std::string node = name + "-node";

  json generate = Slice("", node, "pool-g");
  generate["metadata"].erase("name");
  generate["metadata"]["generateName"] = name + "-";
  Pair generated = p.Same("generateName", "POST", kSlices, generate);
  CHECK(generated.real.body["metadata"]["name"].get<std::string>().size() == name.size() + 6);
  CHECK(generated.fake.body["metadata"]["name"].get<std::string>().size() == name.size() + 6);
  generate["metadata"]["generateName"] = "Bad_";
  // The name each server generated appears in its Status: compare with it masked.
  Pair bad_generate = p.Do("POST", kSlices, generate);
  for (Reply* r : {&bad_generate.real, &bad_generate.fake}) {
    REQUIRE(r->body.is_object());
    const std::string generated = r->body["details"].value("name", "");
    CHECK(absl::StartsWith(generated, "Bad_"));
    r->body = json::parse(absl::StrReplaceAll(r->body.dump(), {{generated, "Bad_<suffix>"}}));
  }
  Parity::CheckSame("an invalid generateName", bad_generate);
  json unnamed = Slice("", node, "pool-g");
  unnamed["metadata"].erase("name");
  p.Same("neither name nor generateName", "POST", kSlices, unnamed);

  // Finalizers: delete sets deletionTimestamp (and bumps the generation);
  // removing the last finalizer deletes.
  const std::string fin = name + "-fin";
  json with_finalizer = Slice(fin, node, "pool-f");
  with_finalizer["metadata"]["finalizers"] = json::array({"parity.example.com/keep"});
  p.Same("create with a finalizer", "POST", kSlices, with_finalizer);
  Pair marked = p.Same("delete marks it", "DELETE", std::string(kSlices) + "/" + fin);
  CHECK(marked.real.body["metadata"].contains("deletionTimestamp"));
  p.Same("delete again", "DELETE", std::string(kSlices) + "/" + fin);
  p.Same("still there", "GET", std::string(kSlices) + "/" + fin);
  p.Same("the last finalizer goes", "PATCH", std::string(kSlices) + "/" + fin,
         json{{"metadata", {{"finalizers", nullptr}}}}, kMerge);
  p.Same("then it is gone", "GET", std::string(kSlices) + "/" + fin);

  // Defaults and zero values: a device taint gets timeAdded; a missing pool
  // generation is 0; a missing resourceSliceCount is 0, which is invalid.
  json tainted = Slice(name + "-taint", node, "pool-t");
  tainted["spec"]["devices"][0]["taints"] = json::array({{{"key", "k"}, {"value", "v"}, {"effect", "NoSchedule"}}});
  tainted["spec"]["pool"].erase("generation");
  tainted["spec"]["devices"][0]["capacity"]["empty"] = json::object();  // a Quantity's zero value is "0"
  Pair defaulted = p.Same("device taint timeAdded, pool generation 0, capacity value 0", "POST", kSlices, tainted);
  CHECK(defaulted.real.body["spec"]["pool"]["generation"] == 0);
  CHECK(defaulted.real.body["spec"]["devices"][0]["taints"][0].contains("timeAdded"));
  json no_count = Slice(name + "-count", node, "pool-c");
  no_count["spec"]["pool"].erase("resourceSliceCount");
  p.Same("resourceSliceCount missing: 0 must be greater than zero", "POST", kSlices, no_count);

  json invalid = Slice(name + "-invalid", "", "");
  invalid["spec"]["driver"] = "";
  invalid["spec"]["devices"][0]["name"] = "Bad_Device";
  invalid["metadata"]["labels"]["bad key!"] = "x";
  Pair rejected = p.Same("many rule violations at once: the same causes in the same order", "POST", kSlices, invalid);
  CHECK(CauseFields(rejected.real.body).size() == 6);
  json two_nodes = Slice(name + "-two", node, "pool-2");
  two_nodes["spec"]["allNodes"] = true;
  p.Same("two node selections", "POST", kSlices, two_nodes);
  json duplicate = Slice(name + "-dup", node, "pool-d");
  duplicate["spec"]["devices"].push_back(duplicate["spec"]["devices"][0]);
  p.Same("duplicate device names", "POST", kSlices, duplicate);
}

TEST_CASE("ResourceSlices: every device field, shared counters, device rules", "[e2e][parity]") {
  Parity p("parity-devices");
  const std::string name = UniqueName("pd");
  const std::string node = name + "-node";
  json counters = Slice(name + "-counters", node, "pool-r");
  counters["spec"].erase("devices");
  counters["spec"]["pool"]["resourceSliceCount"] = 2;
  counters["spec"]["sharedCounters"] = json::array(
      {{{"name", "gpu-0-memory"}, {"counters", {{"memory", {{"value", "80Gi"}}}, {"engines", {{"value", "8"}}}}}}});
  p.Same("a slice of shared counters", "POST", kSlices, counters);

  json rich = Slice(name + "-devices", node, "pool-r");
  rich["spec"]["pool"]["resourceSliceCount"] = 2;
  json& device = rich["spec"]["devices"][0];
  device["attributes"]["models"] = {{"strings", json::array({"a100", "a100-80g"})}};
  device["attributes"]["ids"] = {{"ints", json::array({1, 2})}};
  device["attributes"]["example.com/qualified"] = {{"string", "x"}};
  device["capacity"] = {
      {"memory",
       {{"value", "80Gi"},
        {"requestPolicy",
         {{"default", "1024Mi"}, {"validRange", {{"min", "1Gi"}, {"max", "80Gi"}, {"step", "1Gi"}}}}}}},
      {"engines",
       {{"value", "8"}, {"requestPolicy", {{"default", "1"}, {"validValues", json::array({"1", "2", "4000m"})}}}}}};
  device["consumesCounters"] =
      json::array({{{"counterSet", "gpu-0-memory"}, {"counters", {{"memory", {{"value", "10Gi"}}}}}}});
  device["allowMultipleAllocations"] = true;
  device["bindsToNode"] = true;
  device["bindingConditions"] = json::array({"example.com/attached"});
  device["bindingFailureConditions"] = json::array({"example.com/attach-failed"});
  device["taints"] =
      json::array({{{"key", "example.com/degraded"}, {"value", "ecc"}, {"effect", "NoSchedule"}},
                   {{"key", "example.com/gone"}, {"effect", "NoExecute"}, {"timeAdded", "2026-01-02T03:04:05.678Z"}}});
  rich["spec"]["devices"].push_back({{"name", "plain"}});
  Pair stored = p.Same("every device field: stored, canonicalized and defaulted alike", "POST", kSlices, rich);
  CHECK(stored.real.code == 201);

  json both = Slice(name + "-both", node, "pool-b");
  both["spec"]["sharedCounters"] = counters["spec"]["sharedCounters"];
  p.Same("shared counters and devices in one slice", "POST", kSlices, both);
  json policy = Slice(name + "-policy", node, "pool-b");
  policy["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = {{"default", "1Gi"}};
  p.Same("a request policy without allowMultipleAllocations", "POST", kSlices, policy);
  policy["metadata"]["name"] = name + "-values";
  policy["spec"]["devices"][0]["allowMultipleAllocations"] = true;
  policy["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = {{"validValues", json::array({"1Gi"})}};
  p.Same("validValues without a default", "POST", kSlices, policy);
  json two = Slice(name + "-two", node, "pool-b");
  two["spec"]["devices"][0]["attributes"]["two"] = {{"int", 1}, {"string", "x"}};
  p.Same("an attribute of two types", "POST", kSlices, two);
  json none = Slice(name + "-none", node, "pool-b");
  none["spec"]["devices"][0]["attributes"]["none"] = json::object();
  p.Same("an attribute of no type", "POST", kSlices, none);
  json all = both;
  all["metadata"]["name"] = name + "-all";
  all["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"] = {{"default", "1Gi"}};
  all["spec"]["devices"][0]["attributes"]["two"] = {{"int", 1}, {"string", "x"}};
  p.Same("all of them: the same causes in the same order", "POST", kSlices, all);
}

TEST_CASE("Unknown fields, wrong types: dropped with a warning, Strict, Ignore, 400s", "[e2e][parity]") {
  Parity p("parity-fields");
  const std::string name = UniqueName("pu");
  const std::string node = name + "-node";
  json unknown = Slice(name, node, "pool-u");
  unknown["spec"]["devices"][0]["bogus"] = 1;
  unknown["spec"]["bogus2"] = "x";

  Pair dropped = p.Same("unknown fields, default: dropped with a Warning each", "POST", kSlices, unknown);
  CHECK(dropped.real.code == 201);
  CHECK(dropped.real.warnings.size() == 2);
  unknown["metadata"]["name"] = name + "-warn";
  p.Same("unknown fields, fieldValidation=Warn", "POST", std::string(kSlices) + "?fieldValidation=Warn", unknown);
  unknown["metadata"]["name"] = name + "-ignore";
  Pair ignored = p.Same("unknown fields, fieldValidation=Ignore: no warning", "POST",
                        std::string(kSlices) + "?fieldValidation=Ignore", unknown);
  CHECK(ignored.real.warnings.empty());
  unknown["metadata"]["name"] = name + "-strict";
  Pair strict = p.Do("POST", std::string(kSlices) + "?fieldValidation=Strict", unknown);
  {
    // The real server lists the unknown fields in document order, the fake
    // sorted by name: compare everything but that order.
    INFO("real: " << Show(strict.real) << "\nfake: " << Show(strict.fake));
    CHECK(strict.real.code == 400);
    CHECK(strict.fake.code == 400);
    CHECK(strict.real.body["reason"] == strict.fake.body["reason"]);
    const std::string prefix =
        "ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: strict decoding error: ";
    for (const Reply* r : {&strict.real, &strict.fake}) {
      const std::string message = r->body.value("message", "");
      CHECK(absl::StartsWith(message, prefix));
      CHECK(absl::StrContains(message, "unknown field \"spec.devices[0].bogus\""));
      CHECK(absl::StrContains(message, "unknown field \"spec.bogus2\""));
    }
  }
  p.Same("the strict create stored nothing", "GET", std::string(kSlices) + "/" + name + "-strict");

  const std::string path = std::string(kSlices) + "/" + name;
  Pair got = p.Same("get", "GET", path);
  json real_obj = got.real.body;
  json fake_obj = got.fake.body;
  for (json* o : {&real_obj, &fake_obj}) (*o)["spec"]["devices"][0]["bogus"] = true;
  Parity::CheckSame(
      "update with an unknown field: dropped with a warning",
      {Send(p.real(), "PUT", path, real_obj.dump(), kJson), Send(p.fake(), "PUT", path, fake_obj.dump(), kJson)});
  p.Same("merge patch with an unknown field: dropped with a warning", "PATCH", path, json{{"spec", {{"bogus", 1}}}},
         kMerge);
  Pair strict_patch = p.Do("PATCH", path + "?fieldValidation=Strict", json{{"spec", {{"bogus", 1}}}}, kMerge);
  {
    // A 422 on the field "patch" whose value is the patched object: its
    // JSON differs in key order and server-set fields; compare the rest.
    INFO("real: " << Show(strict_patch.real) << "\nfake: " << Show(strict_patch.fake));
    CHECK(strict_patch.real.code == 422);
    CHECK(strict_patch.fake.code == 422);
    CHECK(strict_patch.real.body["reason"] == strict_patch.fake.body["reason"]);
    CHECK(CauseFields(strict_patch.real.body) == std::vector<std::string>{"patch"});
    CHECK(CauseFields(strict_patch.fake.body) == std::vector<std::string>{"patch"});
    for (const Reply* r : {&strict_patch.real, &strict_patch.fake}) {
      const std::string message = r->body.value("message", "");
      CHECK(absl::StartsWith(message, " \"\" is invalid: patch: Invalid value: \""));
      CHECK(absl::EndsWith(message, "\": strict decoding error: unknown field \"spec.bogus\""));
    }
  }

  // A value the Go types cannot hold is a 400 decoding error; the message
  // ends with Go's JSON error, which the fake does not reproduce.
  json wrong_type = Slice(name + "-type", node, "pool-u");
  wrong_type["spec"]["pool"]["generation"] = "one";
  json bad_quantity = Slice(name + "-qty", node, "pool-u");
  bad_quantity["spec"]["devices"][0]["capacity"]["memory"]["value"] = "12x";
  for (const json& body : {wrong_type, bad_quantity}) {
    Pair bad = p.Do("POST", kSlices, body);
    INFO("real: " << Show(bad.real) << "\nfake: " << Show(bad.fake));
    CHECK(bad.real.code == 400);
    CHECK(bad.fake.code == 400);
    CHECK(bad.real.body["reason"] == "BadRequest");
    CHECK(bad.fake.body["reason"] == "BadRequest");
    const std::string prefix = "ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: ";
    CHECK(absl::StartsWith(bad.real.body.value("message", ""), prefix));
    CHECK(absl::StartsWith(bad.fake.body.value("message", ""), prefix));
  }
}

TEST_CASE("ResourceClaims: defaults, status subresource, immutable spec, no generation", "[e2e][parity]") {
  Parity p("parity-claims");
  const std::string claims = p.Claims();
  const std::string path = claims + "/c1";
  Pair created =
      p.Same("create: allocationMode and count defaulted, status {}, no generation", "POST", claims, Claim("c1"));
  REQUIRE(created.real.code == 201);
  CHECK(created.real.body["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1);
  CHECK_FALSE(created.real.body["metadata"].contains("generation"));

  json sub = Claim("c2");
  sub["metadata"]["annotations"] = {{"a", "b"}};
  sub["spec"]["devices"]["requests"] =
      json::array({{{"name", "gpu"},
                    {"firstAvailable", json::array({{{"name", "big"},
                                                     {"deviceClassName", "gpu.example.com"},
                                                     {"tolerations", json::array({{{"key", "k"}}})}}})}},
                   {{"name", "all"},
                    {"exactly",
                     {{"deviceClassName", "gpu.example.com"},
                      {"allocationMode", "All"},
                      {"tolerations", json::array({{{"key", "k"}, {"operator", "Exists"}}})}}}}});
  sub["spec"]["devices"].erase("constraints");
  p.Same("subrequests and tolerations defaulted", "POST", claims, sub);
  json generate = Claim("");
  generate["metadata"].erase("name");
  generate["metadata"]["generateName"] = "gen-";
  p.Same("generateName", "POST", claims, generate);
  p.Same("a status sent on create is dropped", "POST", claims, [] {
    json c = Claim("c3");
    c["status"] = {{"allocation", Allocation("n1")}};
    return c;
  }());
  p.Same("get a missing claim: 404", "GET", claims + "/nope");

  // status.devices must name allocated devices.
  Pair got = p.Same("get", "GET", path);
  json device = {{"driver", "gpu.parity.example.com"},
                 {"pool", "node-a"},
                 {"device", "gpu-0"},
                 {"conditions", json::array({{{"type", "Ready"},
                                              {"status", "True"},
                                              {"reason", "R"},
                                              {"message", "m"},
                                              {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}};
  json real_obj = got.real.body;
  json fake_obj = got.fake.body;
  for (json* o : {&real_obj, &fake_obj}) (*o)["status"] = {{"devices", json::array({device})}};
  Parity::CheckSame("status.devices without an allocation",
                    {Send(p.real(), "PUT", path + "/status", real_obj.dump(), kJson),
                     Send(p.fake(), "PUT", path + "/status", fake_obj.dump(), kJson)});
  Pair allocated = p.Same("allocation through a merge patch of /status", "PATCH", path + "/status",
                          json{{"status", {{"allocation", Allocation("node-a")}}}}, kMerge);
  real_obj = allocated.real.body;
  fake_obj = allocated.fake.body;
  for (json* o : {&real_obj, &fake_obj}) {
    (*o)["status"]["devices"] = json::array({device});
    (*o)["metadata"]["labels"] = {{"ignored", "yes"}};  // /status writes change status only
  }
  Pair status_put{Send(p.real(), "PUT", path + "/status", real_obj.dump(), kJson),
                  Send(p.fake(), "PUT", path + "/status", fake_obj.dump(), kJson)};
  Parity::CheckSame("PUT /status with devices", status_put);
  Pair noop{Send(p.real(), "PUT", path, status_put.real.body.dump(), kJson),
            Send(p.fake(), "PUT", path, status_put.fake.body.dump(), kJson)};
  Parity::CheckSame("a main-resource PUT that changes nothing", noop);
  CHECK(Rv(noop.real.body) == Rv(status_put.real.body));
  CHECK(Rv(noop.fake.body) == Rv(status_put.fake.body));
  p.Same("a main-resource merge patch ignores status", "PATCH", path,
         json{{"metadata", {{"labels", {{"x", "1"}}}}}, {"status", {{"devices", nullptr}}}}, kMerge);
  p.Same("a JSON patch of /status", "PATCH", path + "/status",
         json::array({{{"op", "replace"}, {"path", "/status/devices/0/conditions/0/reason"}, {"value", "Q"}}}),
         kJsonPatch);
  p.Same("the spec is immutable", "PATCH", path,
         json{{"spec",
               {{"devices",
                 {{"requests", json::array({{{"name", "other"}, {"exactly", {{"deviceClassName", "x"}}}}})}}}}}},
         kMerge);
  Parity::CheckSame("an update with a stale resourceVersion",
                    {Send(p.real(), "PUT", path, created.real.body.dump(), kJson),
                     Send(p.fake(), "PUT", path, created.fake.body.dump(), kJson)});
  Pair current = p.Same("get before deleting", "GET", path);
  Pair wrong_uid = p.Do("DELETE", path, DeleteOptions("not-the-uid", ""));
  {
    INFO("real: " << Show(wrong_uid.real) << "\nfake: " << Show(wrong_uid.fake));
    CHECK(wrong_uid.real.code == 409);
    CHECK(absl::StrReplaceAll(wrong_uid.real.body.value("message", ""),
                              {{current.real.body["metadata"]["uid"].get<std::string>(), "<uid>"}}) ==
          absl::StrReplaceAll(wrong_uid.fake.body.value("message", ""),
                              {{current.fake.body["metadata"]["uid"].get<std::string>(), "<uid>"}}));
    CHECK(wrong_uid.real.body["details"] == wrong_uid.fake.body["details"]);
  }
  p.Same("delete", "DELETE", path);
  p.Same("gone", "GET", path);
}

TEST_CASE("server-side apply: create, update, conflicts, force, removal, errors", "[e2e][parity]") {
  Parity p("parity-apply");
  const std::string name = UniqueName("pa");
  const std::string path = std::string(kSlices) + "/" + name;
  auto apply_path = [&](const std::string& manager, bool force) {
    return absl::StrCat(path, "?fieldManager=", manager, force ? "&force=true" : "");
  };
  json config = Slice(name, name + "-node", "pool-a");
  config["metadata"]["labels"] = {{"l", "1"}};

  p.Same("apply creates", "PATCH", apply_path("m1", false), config, kApply);
  p.Same("the same apply again changes nothing", "PATCH", apply_path("m1", false), config, kApply);
  // The configuration is compared as sent: "1024Mi" is not the stored "1Gi".
  p.Same("another manager applying non-canonical quantities conflicts", "PATCH", apply_path("m2", false), config,
         kApply);
  config["spec"]["devices"][0]["capacity"] = {{"memory", {{"value", "1Gi"}}}, {"frac", {{"value", "1500m"}}}};
  p.Same("another manager applying the same values shares them", "PATCH", apply_path("m2", false), config, kApply);
  config["spec"]["pool"]["generation"] = 2;
  p.Same("m2 changing a shared field conflicts with m1", "PATCH", apply_path("m2", false), config, kApply);
  p.Same("force takes it", "PATCH", apply_path("m2", true), config, kApply);
  config["metadata"].erase("labels");
  p.Same("m1 drops its label; m2 still applies it", "PATCH", apply_path("m1", false), config, kApply);
  p.Same("m2 drops it too: removed", "PATCH", apply_path("m2", false), config, kApply);
  p.Same("an update manager", "PATCH", path + "?fieldManager=u",
         json{{"spec", {{"pool", {{"resourceSliceCount", 2}}}}}}, kMerge);
  config["spec"]["pool"]["resourceSliceCount"] = 3;
  p.Same("conflict with an update manager", "PATCH", apply_path("m1", false), config, kApply);
  p.Same("no fieldManager", "PATCH", path, config, kApply);
  json bogus = config;
  bogus["spec"]["bogus"] = 1;
  p.Same("an unknown field in an apply configuration: 500", "PATCH", apply_path("m1", false), bogus, kApply);

  // Claim status through apply, as a driver does.
  const std::string claim = p.Claims() + "/c1";
  p.Same("claim", "POST", p.Claims(), Claim("c1"));
  p.Same("allocate", "PATCH", claim + "/status", json{{"status", {{"allocation", Allocation("node-a")}}}}, kMerge);
  json status = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", "c1"}, {"namespace", p.ns()}}},
      {"status",
       {{"devices",
         json::array({{{"driver", "gpu.parity.example.com"},
                       {"pool", "node-a"},
                       {"device", "gpu-0"},
                       {"conditions", json::array({{{"type", "Ready"},
                                                    {"status", "True"},
                                                    {"reason", "R"},
                                                    {"message", ""},
                                                    {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}}})}}}};
  p.Same("apply status.devices", "PATCH", claim + "/status?fieldManager=driver", status, kApply);
  status["status"]["devices"][0]["conditions"][0]["status"] = "False";
  p.Same("another manager's condition conflicts", "PATCH", claim + "/status?fieldManager=rival", status, kApply);
  p.Same("forced", "PATCH", claim + "/status?fieldManager=rival&force=true", status, kApply);
  status["status"].erase("devices");
  p.Same("the driver applies no devices: the rival still owns the entry", "PATCH",
         claim + "/status?fieldManager=driver", status, kApply);
  p.Same("the rival applies none either: removed", "PATCH", claim + "/status?fieldManager=rival", status, kApply);
}

TEST_CASE("DeviceClasses and Nodes", "[e2e][parity]") {
  Parity p("parity-classes");
  const std::string name = UniqueName("pc");
  const std::string path = std::string(kClasses) + "/" + name;
  json cls = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "DeviceClass"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"selectors", json::array({{{"cel", {{"expression", "device.driver == \"gpu.parity.example.com\""}}}}})},
        {"config", json::array({{{"opaque", {{"driver", "gpu.parity.example.com"}, {"parameters", {{"a", 1}}}}}}})}}}};
  p.Same("create a class", "POST", kClasses, cls);
  p.Same("again", "POST", kClasses, cls);
  p.Same("merge patch: generation", "PATCH", path, json{{"spec", {{"selectors", nullptr}}}}, kMerge);
  p.Same("labels only: generation stays", "PATCH", path, json{{"metadata", {{"labels", {{"a", "b"}}}}}}, kMerge);
  p.Same(
      "a class without a spec", "POST", kClasses,
      json{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "DeviceClass"}, {"metadata", {{"name", name + "-empty"}}}});
  p.Same("delete", "DELETE", path);

  const std::string node = UniqueName("pn");
  const std::string node_path = std::string(kNodesPath) + "/" + node;
  json body = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", node}, {"labels", {{"a", "b"}}}}},
               {"spec", {{"taints", json::array({{{"key", "k"}, {"effect", "NoSchedule"}}})}}},
               {"status", {{"capacity", {{"cpu", "2"}}}}}};
  p.Same("create a node: not-ready taint, allocatable defaulted, status not owned", "POST", kNodesPath, body);
  p.Same("patch node status", "PATCH", node_path + "/status",
         json{{"status", {{"declaredFeatures", json::array({"DRANodeAllocatableResources"})}}}}, kMerge);
  p.Same("a main-resource patch ignores status", "PATCH", node_path,
         json{{"metadata", {{"labels", {{"c", "d"}}}}}, {"status", {{"capacity", {{"cpu", "4"}}}}}}, kMerge);
  p.Same("delete the node", "DELETE", node_path);
  p.Same("node gone", "GET", node_path);
}

TEST_CASE("lists: field and label selectors, limit and continue", "[e2e][parity]") {
  Parity p("parity-lists");
  const std::string run = UniqueName("pl");
  for (int i = 0; i < 5; ++i) {
    json s = Slice(absl::StrCat(run, "-", i), absl::StrCat(run, "-node-", i % 2), absl::StrCat("pool-", i % 3),
                   absl::StrCat("d", i % 2, ".parity.example.com"));
    s["metadata"]["labels"] = {{"run", run}, {"grp", absl::StrCat("g", i % 2)}, {"idx", std::to_string(i)}};
    REQUIRE(p.Same("create", "POST", kSlices, s).real.code == 201);
  }
  // The real cluster holds other tests' objects: every query also selects this run.
  const std::string all = std::string(kSlices) + "?labelSelector=run%3D" + run;
  auto list = [&](const std::string& what, const std::string& query) {
    Pair pair = p.Same(what, "GET", all + query);
    CHECK(pair.real.code == 200);
    return pair;
  };
  list("everything of the run", "");
  list("spec.driver", "&fieldSelector=spec.driver%3Dd1.parity.example.com");
  list("spec.nodeName", "&fieldSelector=spec.nodeName%3D" + run + "-node-0");
  list("spec.pool.name and !=", "&fieldSelector=spec.pool.name!%3Dpool-2,spec.nodeName%3D" + run + "-node-0");
  list("metadata.name", "&fieldSelector=metadata.name%3D" + run + "-3");
  list("label in, !=", ",idx+in+(1,2,3),grp!%3Dg1");
  list("label exists, !", ",grp,!nothing");
  list("label gt", ",idx>2");
  p.Same("unsupported field label", "GET", all + "&fieldSelector=spec.foo%3Dx");

  // Paging: same pages, same remainingItemCount, tokens usable on their server.
  Pair page = list("first page", "&limit=2");
  std::vector<std::string> real_names, fake_names;
  for (int guard = 0; guard < 5; ++guard) {
    for (const json& item : page.real.body["items"]) real_names.push_back(item["metadata"]["name"]);
    for (const json& item : page.fake.body["items"]) fake_names.push_back(item["metadata"]["name"]);
    const std::string real_next = page.real.body["metadata"].value("continue", "");
    const std::string fake_next = page.fake.body["metadata"].value("continue", "");
    CHECK(real_next.empty() == fake_next.empty());
    if (real_next.empty() || fake_next.empty()) break;
    page = {Send(p.real(), "GET", all + "&limit=2&continue=" + real_next, "", kJson),
            Send(p.fake(), "GET", all + "&limit=2&continue=" + fake_next, "", kJson)};
    Parity::CheckSame("next page", page);
  }
  CHECK(real_names.size() == 5);
  CHECK(real_names == fake_names);
  // Without a selector the list of a resource carries remainingItemCount:
  // on the fake, the only objects are this run's.
  Pair unselected{Send(p.real(), "GET", std::string(kSlices) + "?limit=1", "", kJson),
                  Send(p.fake(), "GET", std::string(kSlices) + "?limit=1", "", kJson)};
  CHECK(unselected.real.body["metadata"].contains("remainingItemCount"));
  CHECK(unselected.fake.body["metadata"]["remainingItemCount"] == 4);
  p.Same("a continue token that is not one", "GET", all + "&continue=bm90LWEtdG9rZW4");
  {
    // Deliberate difference: the fake's label selector parser is not the
    // apimachinery lexer; its syntax errors are 400 BadRequest too, with
    // its own wording.
    Pair bad = p.Do("GET", std::string(kSlices) + "?labelSelector=a+b");
    INFO("real: " << Show(bad.real) << "\nfake: " << Show(bad.fake));
    CHECK(bad.real.code == 400);
    CHECK(bad.fake.code == 400);
    CHECK(bad.real.body["reason"] == bad.fake.body["reason"]);
    CHECK(bad.real.body["message"] == "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
    CHECK(bad.fake.body["message"] == "unable to parse requirement: invalid label key \"a b\"");
  }
  p.Same("deletecollection", "DELETE", std::string(kSlices) + "?labelSelector=run%3D" + run);
  list("nothing left", "");
}

TEST_CASE("request errors: options, bodies, media types, list parameters", "[e2e][parity]") {
  Parity p("parity-errors");
  const std::string name = UniqueName("pe");
  const std::string path = std::string(kSlices) + "/" + name;
  REQUIRE(p.Same("create", "POST", kSlices, Slice(name, name + "-node", "pool-e")).real.code == 201);

  p.Same("create with an unknown fieldValidation", "POST", std::string(kSlices) + "?fieldValidation=Bogus",
         Slice(name + "-fv", name + "-node", "pool-e"));
  p.Same("update with an unknown fieldValidation", "PUT", path + "?fieldValidation=Bogus", json::object());
  p.Same("patch of a missing object with an unknown fieldValidation", "PATCH", path + "-missing?fieldValidation=Bogus",
         json::object(), kMerge);
  json wrong = Slice(name + "-wrong", name + "-node", "pool-e");
  wrong["spec"].erase("devices");  // v1beta1 devices have another shape
  wrong["apiVersion"] = "resource.k8s.io/v1beta1";
  p.Same("another apiVersion in the body", "POST", kSlices, wrong);
  wrong["apiVersion"] = "resource.k8s.io/v1";
  wrong["kind"] = "DeviceClass";
  p.Same("another kind of the group in the body", "POST", kSlices, wrong);
  wrong["kind"] = "Foo";
  p.Same("an unknown kind in the body", "POST", kSlices, wrong);
  p.Same("a body that is not JSON", "POST", kSlices, nullptr);  // empty
  {
    // The excerpt of the body the real server appends is not always the body
    // itself (an array shows as hex); code, reason and the message up to it agree.
    Pair array{Send(p.real(), "POST", kSlices, "[1]", kJson), Send(p.fake(), "POST", kSlices, "[1]", kJson)};
    INFO("real: " << Show(array.real) << "\nfake: " << Show(array.fake));
    CHECK(array.real.code == 400);
    CHECK(array.fake.code == 400);
    const std::string real_message = array.real.body.value("message", "");
    const std::string fake_message = array.fake.body.value("message", "");
    CHECK(real_message.substr(0, real_message.rfind(" (")) == fake_message.substr(0, fake_message.rfind(" (")));
  }
  Parity::CheckSame("a truncated body",
                    {Send(p.real(), "POST", kSlices, "{", kJson), Send(p.fake(), "POST", kSlices, "{", kJson)});
  Parity::CheckSame("a create in text/plain", {Send(p.real(), "POST", kSlices, "{}", "text/plain"),
                                               Send(p.fake(), "POST", kSlices, "{}", "text/plain")});
  Parity::CheckSame("a patch in text/plain", {Send(p.real(), "PATCH", path, "{}", "text/plain"),
                                              Send(p.fake(), "PATCH", path, "{}", "text/plain")});
  Parity::CheckSame("a truncated merge patch",
                    {Send(p.real(), "PATCH", path, "{", kMerge), Send(p.fake(), "PATCH", path, "{", kMerge)});
  Parity::CheckSame(
      "a JSON patch whose operation is not an object",
      {Send(p.real(), "PATCH", path, "[1]", kJsonPatch), Send(p.fake(), "PATCH", path, "[1]", kJsonPatch)});
  Parity::CheckSame("the same for a missing object: 404 first",
                    {Send(p.real(), "PATCH", path + "-missing", "[1]", kJsonPatch),
                     Send(p.fake(), "PATCH", path + "-missing", "[1]", kJsonPatch)});
  p.Same("update of a missing object", "PUT", path + "-missing", Slice(name + "-missing", name + "-node", "pool-e"));
  p.Same("update whose body names another object", "PUT", path, Slice(name + "-other", name + "-node", "pool-e"));
  {
    // Deliberate difference: the fake reads JSON only; the real server also
    // takes YAML (and protobuf).
    const std::string yaml = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\n";
    Pair y{Send(p.real(), "POST", kSlices, yaml, "application/yaml"),
           Send(p.fake(), "POST", kSlices, yaml, "application/yaml")};
    INFO("real: " << Show(y.real) << "\nfake: " << Show(y.fake));
    CHECK(y.real.code == 422);  // decoded, then invalid: no name, no spec
    CHECK(y.fake.code == 415);
  }

  const std::string run_only = std::string(kSlices) + "?labelSelector=parity%3Dyes,nothing-else";
  p.Same("a negative limit is no limit", "GET", run_only + "&limit=-1");
  p.Same("a malformed limit", "GET", run_only + "&limit=abc");
  p.Same("a field selector claims do not support", "GET", p.Claims() + "?fieldSelector=spec.foo%3Dx");
  p.Same("a field selector device classes do not support", "GET",
         std::string(kClasses) + "?fieldSelector=spec.foo%3Dx");
  p.Same("a field selector nodes do not support", "GET", std::string(kNodesPath) + "?fieldSelector=spec.foo%3Dx");
  p.Same("claims of all namespaces, by namespace", "GET",
         "/apis/resource.k8s.io/v1/resourceclaims?fieldSelector=metadata.namespace%3D" + p.ns());
}

TEST_CASE("watch options: initial events, the initial-events-end bookmark, invalid ListOptions", "[e2e][parity]") {
  Parity p("parity-watchlist");
  const std::string claims = p.Claims();
  p.Same("create", "POST", claims, Claim("a"));
  p.Same("create", "POST", claims, Claim("b"));
  auto until_initial_end = [](const std::vector<json>& events) {
    return !events.empty() && Describe(events.back()) == "BOOKMARK initial-events-end";
  };
  auto until_two = [](const std::vector<json>& events) { return events.size() >= 2; };
  for (const std::string query :
       {"?watch=1&allowWatchBookmarks=true", "?watch=1&allowWatchBookmarks=true&resourceVersion=0",
        "?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"}) {
    INFO(query);
    std::vector<std::string> real, fake;
    for (const json& e : WatchUntil(p.real(), claims + query, until_initial_end)) real.push_back(Describe(e));
    for (const json& e : WatchUntil(p.fake(), claims + query, until_initial_end)) fake.push_back(Describe(e));
    CHECK(real == std::vector<std::string>{"ADDED a", "ADDED b", "BOOKMARK initial-events-end"});
    CHECK(real == fake);
  }
  {
    // Without bookmarks: the initial objects, nothing to end them.
    std::vector<std::string> real, fake;
    for (const json& e : WatchUntil(p.real(), claims + "?watch=1", until_two)) real.push_back(Describe(e));
    for (const json& e : WatchUntil(p.fake(), claims + "?watch=1", until_two)) fake.push_back(Describe(e));
    CHECK(real == std::vector<std::string>{"ADDED a", "ADDED b"});
    CHECK(real == fake);
  }
  p.Same("sendInitialEvents without resourceVersionMatch", "GET", claims + "?watch=1&sendInitialEvents=true");
  p.Same("resourceVersionMatch on a watch without sendInitialEvents", "GET",
         claims + "?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan");
  p.Same("sendInitialEvents on a list", "GET", claims + "?sendInitialEvents=true");
  p.Same("resourceVersionMatch on a list without resourceVersion", "GET", claims + "?resourceVersionMatch=Exact");
}

// "TYPE name" of every event but bookmarks.
struct Events {
  std::mutex mu;
  std::vector<std::string> seen;
  void Add(const WatchEvent& e) {
    if (e.type == "BOOKMARK") return;
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(e.type + " " + e.object["metadata"].value("name", ""));
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return seen;
  }
};

TEST_CASE("watch: ADDED, MODIFIED, DELETED, objects entering and leaving a selection", "[e2e][parity]") {
  Parity p("parity-watch");
  const std::string claims = p.Claims();
  ClientConfig fake_config;
  fake_config.server = p.fake().url;
  fake_config.ca_file = p.fake().ca_file;
  fake_config.bearer_token = p.fake().token;
  fake_config.qps = 0;
  std::shared_ptr<Client> clients[2] = {MakeClient(AdminConfig()), MakeClient(fake_config)};
  Events all[2];
  Events selected[2];
  std::unique_ptr<WatchThread> watches[4];
  // Start from the namespace's list version: no initial events (and no
  // gzipped stream, see tests/e2e/README.md).
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<ListResult> start = clients[i]->List(kResourceClaims, p.ns());
    REQUIRE(start.ok());
    WatchOptions options;
    options.resource_version = start->resource_version;
    watches[i] = std::make_unique<WatchThread>(clients[i], kResourceClaims, p.ns(), options,
                                               [&, i](const WatchEvent& e) { all[i].Add(e); });
    options.label_selector = "watched=yes";
    watches[2 + i] = std::make_unique<WatchThread>(clients[i], kResourceClaims, p.ns(), options,
                                                   [&, i](const WatchEvent& e) { selected[i].Add(e); });
  }
  p.Same("create", "POST", claims, Claim("w1"));
  p.Same("label it: enters the selection", "PATCH", claims + "/w1",
         json{{"metadata", {{"labels", {{"watched", "yes"}}}}}}, kMerge);
  p.Same("annotate it", "PATCH", claims + "/w1", json{{"metadata", {{"annotations", {{"a", "b"}}}}}}, kMerge);
  p.Same("unlabel it: leaves the selection", "PATCH", claims + "/w1", json{{"metadata", {{"labels", nullptr}}}},
         kMerge);
  p.Same("delete", "DELETE", claims + "/w1");
  const std::vector<std::string> want_all = {"ADDED w1", "MODIFIED w1", "MODIFIED w1", "MODIFIED w1", "DELETED w1"};
  const std::vector<std::string> want_selected = {"ADDED w1", "MODIFIED w1", "DELETED w1"};
  for (int i = 0; i < 2; ++i) {
    INFO((i == 0 ? "real" : "fake"));
    CHECK(PollUntil([&] { return all[i].Get().size() >= want_all.size(); }, absl::Seconds(20)));
    CHECK(PollUntil([&] { return selected[i].Get().size() >= want_selected.size(); }, absl::Seconds(20)));
    CHECK(all[i].Get() == want_all);
    CHECK(selected[i].Get() == want_selected);
  }
  for (auto& w : watches) w->Stop();
  for (auto& w : watches) CHECK(w->Wait().ok());
}

}  // namespace
}  // namespace dra::k8s
