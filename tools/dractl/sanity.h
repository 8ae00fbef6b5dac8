// dractl sanity: a conformance suite for any DRA kubelet plugin. It plays the
// kubelet's part over the plugin's sockets, with claims it creates on the API
// server and allocates to the devices the plugin published, and checks each
// rule the kubelet (or the container runtime) relies on.
#pragma once

#include <sys/types.h>

#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dra::sanity {

// A required rule is one the kubelet or the runtime depends on; a
// recommended one is good practice whose breach the kubelet survives.
enum class Level { kRequired, kRecommended };

// Plain C strings: Debian's abseil does not take std::string_view.
struct Check {
  const char* id;  // "REG-1": the group and a number
  Level level;
  const char* rule;    // one line
  const char* source;  // where the rule comes from (kubelet source file)
};

// Every check, in the order they run.
std::span<const Check> Checks();

enum class Outcome { kPass, kFail, kSkip };

struct Result {
  const Check* check = nullptr;
  Outcome outcome = Outcome::kSkip;
  std::string detail;  // why it failed or was skipped; what was seen when it passed
};

struct Options {
  std::string registry_dir;  // where the plugin's registration socket is (or will be)
  std::string driver;        // the driver name; empty: the only DRA plugin in registry_dir
  std::string kubeconfig;    // empty: $KUBECONFIG, then in-cluster
  std::string node;          // the node whose devices to use; empty: the only node of the driver
  std::string namespace_;    // empty: a namespace of its own, deleted at the end
  std::string cdi_dir = "/var/run/cdi";
  pid_t pid = 0;  // the plugin's process, for the SIGTERM checks; 0: skipped
  // The plugin's command line: started by the run once it has looked at
  // registry_dir (so that REG-6 sees the socket appear), stopped by the SIGTERM
  // checks, its output on stderr. Replaces `pid`.
  std::vector<std::string> command;
  absl::Duration wait = absl::Seconds(60);  // for the plugin to appear, publish, answer, exit
  int concurrency = 8;                      // parallel callers in PRE-11
};

// Runs every check and returns one result per entry of Checks(), in that
// order; `progress` sees each as it is decided. An error only when the run
// cannot start (an unreadable kubeconfig, a namespace it may not create).
absl::StatusOr<std::vector<Result>> Run(const Options& options, const std::function<void(const Result&)>& progress);

// One line per check ("PASS  REG-1  rule"), the detail of those that did not
// pass, and a summary line.
void WriteResult(std::ostream& out, const Result& result);
void WriteSummary(std::ostream& out, std::span<const Result> results);
// JUnit XML, as CI systems read it: one testcase per check.
std::string JUnitXml(std::span<const Result> results, absl::Duration elapsed);
// Whether a required check failed.
bool Failed(std::span<const Result> results);

}  // namespace dra::sanity
