// The example CPU driver (examples/cpu) as a process on the suite's real
// node, reading a fake sysfs tree (two sockets of four cores with two threads
// each) so that what it publishes does not depend on the test machine, with
// the real scheduler and kubelet: CPUs of a socket allocated by consumable
// capacity and counted as the pod's node-allocatable cpu, the cpuset in the
// container's edits as the CRI stand-in received them, a pod whose container
// requests and claim CPUs exceed the node's allocatable cpu unschedulable,
// and a claim for more CPUs than a socket has never allocated.
//
// The node is shared: these tests run one at a time (RESOURCE_LOCK), each
// with a driver name of its own.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cpu_resources.h"
#include "dra/k8s/quantity.h"
#include "e2e/e2e_cluster.h"
#include "e2e/e2e_node.h"
#include "e2e/node_driver.h"
#include "fake_sysfs.h"
#include "support/temp_dir.h"

namespace dra::e2e {
namespace {

using nlohmann::json;

// The CPU driver on the node with a driver name of its own, on a fake
// machine of two sockets with SMT (socket 0: CPUs 0-3 and 8-11).
struct CpuDriver {
  testing::TempDir sysfs;
  ExampleDriverOnNode run;

  explicit CpuDriver(const std::vector<std::string>& flags) : sysfs(), run(DRA_CPU_DRIVER, "cpu", WithSysfs(flags)) {}

  std::vector<std::string> WithSysfs(std::vector<std::string> flags) {
    testing::FakeMachine machine;
    machine.sockets = 2;
    machine.threads_per_core = 2;
    testing::WriteFakeSysfs(sysfs.path(), machine);
    flags.push_back("--sysfs-root=" + sysfs.path());
    flags.push_back("--nri-socket=");
    return flags;
  }

  // A claim for `cpus` CPUs of one socket.
  json ClaimSpec(const std::string& device_class, int cpus) const {
    const json exactly = {{"deviceClassName", device_class},
                          {"capacity", {{"requests", {{run.driver.name() + "/cpu", std::to_string(cpus)}}}}}};
    return {{"devices", {{"requests", json::array({{{"name", "cpus"}, {"exactly", exactly}}})}}}};
  }
};

// The condition `type` of the pod when its status is `status`, or null.
json Condition(const json& pod, const std::string& type, const std::string& status) {
  for (const json& condition : pod["status"].value("conditions", json::array())) {
    if (condition["type"] == type && condition["status"] == status) return condition;
  }
  return nullptr;
}

TEST_CASE(
    "the CPU driver: the scheduler takes CPUs of a socket, the pod counts them as node cpu, the container "
    "gets its cpuset",
    "[e2e][node][cpu]") {
  CpuDriver cpu({"--reserved-cpus=0"});
  const std::string device_class = cpu.run.DeviceClass();
  cpu.run.CreateClaim("cpus", cpu.ClaimSpec(device_class, 2));
  const json pod = cpu.run.RunPod("app", {{"cpus", "cpus"}}, false);
  INFO("the pod: " << pod.dump(1));

  const json claim = cpu.run.Claim("cpus");
  INFO("the claim: " << claim.dump(1));
  const json& result = claim["status"]["allocation"]["devices"]["results"][0];
  CHECK(absl::StartsWith(result["device"].get<std::string>(), "cpu-socket-"));
  // As the device names it: "cpu" from a 1.38 server on, "<driver>/cpu" before.
  absl::StatusOr<std::string> version = MakeClient(AdminConfig())->ServerVersion();
  REQUIRE(version.ok());
  const std::string capacity = cpu::CpuCapacityName(cpu.run.driver.name(), cpu::MatchesBareCapacityNames(*version));
  CHECK(result["consumedCapacity"] == json{{capacity, "2"}});

  const json& statuses = pod["status"]["nodeAllocatableResourceClaimStatuses"];
  REQUIRE(statuses.size() == 1);
  CHECK(statuses[0]["resourceClaimName"] == "cpus");
  // What the pod was counted for: 1.36's alpha shape is a map, 1.37's a list.
  if (absl::StartsWith(*version, "v1.36.")) {
    CHECK(statuses[0].value("resources", json()) == json{{"cpu", "2"}});
  } else {
    CHECK(statuses[0].value("mapping", json()) == json::array({{{"name", "cpu"}, {"quantity", "2"}}}));
  }

  // A whole core of the allocated socket.
  const std::string uid = claim["metadata"]["uid"].get<std::string>();
  const std::string prefix = "DRA_CPUSET_" + absl::StrReplaceAll(uid, {{"-", "_"}}) + "=";
  const std::vector<std::string> env = cpu.run.ContainerEnv(pod);
  auto it = std::find_if(env.begin(), env.end(), [&](const std::string& e) { return absl::StartsWith(e, prefix); });
  REQUIRE(it != env.end());
  const std::string cpuset = it->substr(prefix.size());
  CHECK((cpuset == "1,9" || cpuset == "4,12"));
  CHECK(cpu.run.driver.Metric("dra_cpu_allocated_cpus") == 2);
  cpu.run.DeletePod("app");
  CHECK(Eventually([&] { return cpu.run.driver.Metric("dra_cpu_allocated_cpus") == 0; }));
}

TEST_CASE(
    "the CPU driver: claim CPUs and container requests beyond the node's allocatable cpu leave the pod "
    "unschedulable, and a claim for more than a socket has is never allocated",
    "[e2e][node][cpu]") {
  CpuDriver cpu({});
  const std::string device_class = cpu.run.DeviceClass();
  absl::StatusOr<json> node = cpu.run.admin->Get(k8s::kNodes, "", cpu.run.node.name);
  REQUIRE(node.ok());
  absl::StatusOr<k8s::Quantity> allocatable =
      k8s::Quantity::Parse((*node)["status"]["allocatable"]["cpu"].get<std::string>());
  REQUIRE(allocatable.ok());

  // The container asks for all the node's cpu but half a CPU; one claim CPU
  // more does not fit.
  cpu.run.CreateClaim("one", cpu.ClaimSpec(device_class, 1));
  json object = PodWithClaims(cpu.run.ns, "too-much", {{"cpus", "one"}}, false);
  object["spec"]["containers"][0]["resources"]["requests"] = {
      {"cpu", absl::StrCat(allocatable->MilliValue() - 500, "m")}};
  REQUIRE(cpu.run.admin->Create(kPods, cpu.run.ns, object).ok());
  json last;
  const bool unschedulable = WaitForPod(
      *cpu.run.admin, cpu.run.ns, "too-much",
      [](const json& p) {
        const json condition = Condition(p, "PodScheduled", "False");
        return !condition.is_null() && absl::StrContains(condition.value("message", ""), "Insufficient cpu");
      },
      &last);
  INFO("the pod: " << last.dump(1));
  CHECK(unschedulable);
  REQUIRE(cpu.run.admin->Delete(kPods, cpu.run.ns, "too-much").ok());

  // A socket has 8 CPUs.
  cpu.run.CreateClaim("nine", cpu.ClaimSpec(device_class, 9));
  REQUIRE(
      cpu.run.admin->Create(kPods, cpu.run.ns, PodWithClaims(cpu.run.ns, "greedy", {{"cpus", "nine"}}, false)).ok());
  const bool pending = WaitForPod(
      *cpu.run.admin, cpu.run.ns, "greedy",
      [](const json& p) { return !Condition(p, "PodScheduled", "False").is_null(); }, &last);
  INFO("the pod: " << last.dump(1));
  CHECK(pending);
  CHECK_FALSE(cpu.run.Claim("nine")["status"].contains("allocation"));
  REQUIRE(cpu.run.admin->Delete(kPods, cpu.run.ns, "greedy").ok());
}

}  // namespace
}  // namespace dra::e2e
