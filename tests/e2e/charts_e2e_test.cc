// The example drivers' Helm charts (examples/{gpu,cpu}/deploy/helm/*) with
// the suite's helm (build-k8s.sh helm): they lint; with their defaults they
// render exactly the plain manifests beside them, so the two cannot drift
// apart; values change what they say; values their schemas refuse fail,
// naming the value; and the rendered objects are accepted by the real API
// server.
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "e2e/e2e_cluster.h"
#include "e2e/helm.h"
#include "e2e/manifests.h"
#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace dra::e2e {
namespace {

using nlohmann::json;

constexpr char kKubeVersion[] = "1.37.2";

struct Chart {
  std::string name;
  std::string namespace_;                // of the plain manifests
  std::vector<std::string> plain_files;  // under deploy/, but the namespace
  size_t objects = 0;                    // rendered with the defaults
  std::string deploy_dir() const { return absl::StrCat(DRA_SOURCE_DIR, "/examples/", name.substr(0, 3), "/deploy"); }
  std::string dir() const { return deploy_dir() + "/helm/" + name; }
};

const Chart kGpuChart{"gpu-example-driver",
                      "dra-gpu-example",
                      {"rbac.yaml", "admission-policy.yaml", "gpu-config-policy.yaml", "deviceclass.yaml",
                       "daemonset.yaml", "fabric-controller.yaml"},
                      14};
const Chart kCpuChart{"cpu-example-driver",
                      "dra-cpu-example",
                      {"rbac.yaml", "admission-policy.yaml", "deviceclass.yaml", "daemonset.yaml"},
                      8};
const std::vector<Chart> kCharts = {kGpuChart, kCpuChart};

// `helm template <release> <chart> -n <ns>` with `sets` (--set each, or
// --set-json for "key=[...]", a list that --set cannot make empty).
std::vector<json> Render(const Chart& chart, const std::string& release, const std::string& ns,
                         const std::vector<std::string>& sets = {}) {
  std::vector<std::string> args = {"template", release, chart.dir(), "--namespace", ns, "--kube-version", kKubeVersion};
  for (const std::string& set : sets) {
    args.push_back(absl::StrContains(set, "=[") ? "--set-json" : "--set");
    args.push_back(set);
  }
  testing::ProcessResult result = Helm(args);
  INFO("helm template: " << result.err);
  REQUIRE(result.exit_code == 0);
  return ManifestObjects(result.out, "helm template");
}

std::string KeyOf(const json& object) {
  return absl::StrCat(object.value("kind", ""), "/", object["metadata"].value("name", ""));
}

std::map<std::string, json> ByKey(std::vector<json> objects) {
  std::map<std::string, json> by_key;
  for (json& object : objects) {
    const std::string key = KeyOf(object);
    INFO(key);
    CHECK(by_key.emplace(key, std::move(object)).second);
  }
  return by_key;
}

const json& Find(const std::map<std::string, json>& objects, const std::string& key) {
  INFO(key);
  REQUIRE(objects.contains(key));
  return objects.at(key);
}

// The node plugin container's environment, by name.
std::map<std::string, json> PluginEnv(const json& daemonset) {
  std::map<std::string, json> env;
  for (const json& var : daemonset["spec"]["template"]["spec"]["containers"][0]["env"]) {
    env[var["name"].get<std::string>()] = var.contains("value") ? var["value"] : var["valueFrom"];
  }
  return env;
}

TEST_CASE("the example Helm charts pass helm lint --strict", "[e2e][helm]") {
  for (const Chart& chart : kCharts) {
    testing::ProcessResult result = Helm({"lint", "--strict", "--kube-version", kKubeVersion, chart.dir()});
    INFO(chart.name << ": " << result.out << result.err);
    CHECK(result.exit_code == 0);
    CHECK_THAT(result.out, Catch::Contains("0 chart(s) failed"));
  }
}

TEST_CASE("the example Helm charts with their defaults render the plain manifests", "[e2e][helm]") {
  for (const Chart& chart : kCharts) {
    std::map<std::string, json> plain;
    for (const std::string& file : chart.plain_files) {
      const std::string path = chart.deploy_dir() + "/" + file;
      for (json& object : ManifestObjects(testing::ReadFile(path), path)) plain.emplace(KeyOf(object), object);
    }
    const std::map<std::string, json> rendered = ByKey(Render(chart, chart.name, chart.namespace_));
    CHECK(rendered.size() == chart.objects);
    for (const auto& [key, object] : plain) {
      INFO(chart.name << ": " << key << " in the plain manifests:\n" << object.dump(1));
      REQUIRE(rendered.contains(key));
      INFO("rendered:\n" << rendered.at(key).dump(1));
      CHECK(rendered.at(key) == object);
    }
    for (const auto& [key, object] : rendered) {
      INFO(chart.name << ": " << key << " rendered, not in the plain manifests");
      CHECK(plain.contains(key));
    }
  }
}

TEST_CASE("the GPU Helm chart's values change what they say", "[e2e][gpu][helm]") {
  const std::map<std::string, json> objects =
      ByKey(Render(kGpuChart, "acme", "acme-ns",
                   {"driverName=gpu.acme.com", "kubeletDir=/opt/kubelet", "cdiRoot=/etc/cdi", "nodePlugin.verbosity=4",
                    "nodePlugin.logFormat=json", "nodePlugin.numDevices=2", "nodePlugin.nodeSelector.gpu=present",
                    "image.tag=9.9.9", "fabricController.enabled=false", "admissionPolicy.enabled=false",
                    "nodePlugin.gpuPartitions=4", "gpuAllowMultipleAllocations=true",
                    "deviceClasses.extendedResourceName=example.com/gpu", "gpuConfigPolicy.enabled=false"}));
  const json& daemonset = Find(objects, "DaemonSet/acme");
  CHECK(daemonset["metadata"]["namespace"] == "acme-ns");
  const json& pod = daemonset["spec"]["template"]["spec"];
  CHECK(pod["serviceAccountName"] == "acme");
  CHECK(pod["nodeSelector"] == json{{"gpu", "present"}});
  const json& container = pod["containers"][0];
  CHECK(container["image"] == "registry.example.com/dra-cpp/gpu-driver:9.9.9");
  CHECK(container["args"] == json::array({"--fabric-attach", "-v=4"}));
  std::map<std::string, json> env = PluginEnv(daemonset);
  CHECK(env["DRIVER_NAME"] == "gpu.acme.com");
  CHECK(env["NUM_DEVICES"] == "2");
  CHECK(env["LOG_FORMAT"] == "json");
  CHECK(env["KUBELET_REGISTRAR_DIRECTORY_PATH"] == "/opt/kubelet/plugins_registry");
  CHECK(env["KUBELET_PLUGINS_DIRECTORY_PATH"] == "/opt/kubelet/plugins");
  CHECK(env["CDI_ROOT"] == "/etc/cdi");
  CHECK(env["GPU_PARTITIONS"] == "4");
  CHECK(env["GPU_DEVICE_STATUS"] == "true");
  CHECK(env["GPU_ALLOW_MULTIPLE_ALLOCATIONS"] == "true");
  // The kubelet reaches the sockets by their host paths.
  for (const json& mount : container["volumeMounts"]) {
    for (const json& volume : pod["volumes"]) {
      if (volume["name"] == mount["name"]) CHECK(volume["hostPath"]["path"] == mount["mountPath"]);
    }
  }
  CHECK(Find(objects, "ClusterRoleBinding/acme")["subjects"][0]["namespace"] == "acme-ns");
  CHECK(Find(objects, "ClusterRole/acme")["rules"][4]["resourceNames"] == json::array({"gpu.acme.com"}));
  CHECK(Find(objects, "DeviceClass/gpu.acme.com")["spec"]["selectors"][0]["cel"]["expression"] ==
        "device.driver == \"gpu.acme.com\"");
  CHECK(Find(objects, "DeviceClass/gpu.acme.com")["spec"]["extendedResourceName"] == "example.com/gpu");
  CHECK_FALSE(Find(objects, "DeviceClass/fabric.gpu.acme.com")["spec"].contains("extendedResourceName"));
  for (const auto& [key, object] : objects) {
    INFO(key);
    CHECK(object["kind"] != "Deployment");
    CHECK(object["kind"] != "ValidatingAdmissionPolicy");
  }

  // Health pins: the pod's name and namespace, and a Role reading pods in it
  // alone; none without them.
  CHECK_FALSE(env.contains("POD_NAME"));
  CHECK_FALSE(env.contains("HEALTH_SERVICE"));
  CHECK_FALSE(objects.contains("Role/acme-health-pins"));
  const std::map<std::string, json> pinned =
      ByKey(Render(kGpuChart, "pins", "pins-ns", {"nodePlugin.healthPins=true", "nodePlugin.deviceHealth=false"}));
  std::map<std::string, json> pinned_env = PluginEnv(pinned.at("DaemonSet/pins"));
  CHECK(pinned_env["POD_NAME"]["fieldRef"]["fieldPath"] == "metadata.name");
  CHECK(pinned_env["NAMESPACE"]["fieldRef"]["fieldPath"] == "metadata.namespace");
  CHECK(pinned_env["HEALTH_SERVICE"] == "false");
  CHECK(Find(pinned, "Role/pins-health-pins")["metadata"]["namespace"] == "pins-ns");
  CHECK(Find(pinned, "Role/pins-health-pins")["rules"][0]["resources"] == json::array({"pods"}));
  CHECK(Find(pinned, "RoleBinding/pins-health-pins")["subjects"][0]["name"] == "pins");

  // The net profile: NICs, no GpuConfig policy.
  const std::map<std::string, json> nics =
      ByKey(Render(kGpuChart, "nics", "nics-ns", {"deviceProfile=net", "driverName=net.example.com"}));
  CHECK(PluginEnv(nics.at("DaemonSet/nics"))["DEVICE_PROFILE"] == "net");
  CHECK_FALSE(nics.contains("ValidatingAdmissionPolicy/nics-gpu-config"));
  CHECK(nics.contains("ValidatingAdmissionPolicy/nics-own-node-slices"));
}

TEST_CASE("the CPU Helm chart's values change what they say", "[e2e][cpu][helm]") {
  const std::map<std::string, json> objects =
      ByKey(Render(kCpuChart, "acme", "acme-ns",
                   {"driverName=cpu.acme.com", "nodePlugin.reservedCpus=0-1", "nodePlugin.mode=individual",
                    "nodePlugin.groupBy=numa", "nodePlugin.args=[]", "admissionPolicy.enabled=false",
                    "nriSocket=/run/containerd/nri/nri.sock"}));
  const json& daemonset = Find(objects, "DaemonSet/acme");
  std::map<std::string, json> env = PluginEnv(daemonset);
  CHECK(env["DRIVER_NAME"] == "cpu.acme.com");
  CHECK(env["NRI_SOCKET"] == "/run/containerd/nri/nri.sock");
  CHECK(daemonset["spec"]["template"]["spec"]["volumes"].back() ==
        json{{"name", "nri"}, {"hostPath", {{"path", "/run/containerd/nri"}, {"type", "DirectoryOrCreate"}}}});
  CHECK(env["RESERVED_CPUS"] == "0-1");
  CHECK(env["MODE"] == "individual");
  CHECK(env["GROUP_BY"] == "numa");
  CHECK_FALSE(daemonset["spec"]["template"]["spec"]["containers"][0].contains("args"));
  CHECK(Find(objects, "DeviceClass/memory.cpu.acme.com")["spec"]["selectors"][0]["cel"]["expression"] ==
        "device.driver == \"cpu.acme.com\" && device.attributes[\"cpu.acme.com\"].resource == \"memory\"");
  for (const auto& [key, object] : objects) {
    INFO(key);
    CHECK(object["kind"] != "ValidatingAdmissionPolicy");
  }
  // No NRI: no pinning (a flag: the driver reads an empty variable as unset),
  // no socket mounted.
  const json unpinned = Find(ByKey(Render(kCpuChart, "acme", "acme-ns", {"nriSocket="})), "DaemonSet/acme");
  CHECK_FALSE(PluginEnv(unpinned).contains("NRI_SOCKET"));
  CHECK(unpinned["spec"]["template"]["spec"]["containers"][0]["args"].back() == "--nri-socket=");
  CHECK(unpinned["spec"]["template"]["spec"]["volumes"].dump().find("nri") == std::string::npos);
}

TEST_CASE("the example Helm charts refuse values their schemas do not allow, naming them", "[e2e][helm]") {
  const std::vector<std::tuple<const Chart*, std::string, std::string>> cases = {
      {&kGpuChart, "nodePlugin.logFormat=xml", "/nodePlugin/logFormat"},
      {&kGpuChart, "nodePlugin.numDevice=3", "numDevice"},
      {&kGpuChart, "nodePlugin.verbosity=11", "/nodePlugin/verbosity"},
      {&kGpuChart, "driverName=GPU_Example", "/driverName"},
      {&kGpuChart, "kubeletDir=relative/dir", "/kubeletDir"},
      {&kCpuChart, "nodePlugin.reservedCpus=0-x", "/nodePlugin/reservedCpus"},
      {&kCpuChart, "nodePlugin.mode=shared", "/nodePlugin/mode"},
      {&kCpuChart, "nodePlugin.groupBy=l3", "/nodePlugin/groupBy"},
      {&kCpuChart, "nriSocket=nri.sock", "/nriSocket"},
  };
  for (const auto& [chart, set, named] : cases) {
    testing::ProcessResult result = Helm({"template", "x", chart->dir(), "--kube-version", kKubeVersion, "--set", set});
    INFO(chart->name << ": " << set << ": " << result.err);
    CHECK(result.exit_code != 0);
    CHECK_THAT(result.err, Catch::Contains("don't meet the specifications of the schema"));
    CHECK_THAT(result.err, Catch::Contains(named));
  }
}

TEST_CASE("the example Helm charts' rendered objects are accepted by the API server", "[e2e][helm]") {
  auto admin = MakeClient(AdminConfig());
  for (const Chart& chart : kCharts) {
    const std::string ns = CreateNamespace(*admin, "e2e-chart");
    const std::string release = UniqueName("chart");
    const std::vector<json> rendered =
        Render(chart, release, ns, {absl::StrCat("driverName=", release, ".example.com")});
    CHECK(rendered.size() == chart.objects);
    std::vector<std::pair<k8s::ResourceRef, json>> applied;
    for (const json& object : rendered) {
      applied.emplace_back(ResourceOfKind(object["kind"].get<std::string>()), ApplyObject(*admin, object));
    }
    for (const auto& [ref, object] : applied) {
      const std::string name = object["metadata"]["name"].get<std::string>();
      INFO(chart.name << ": " << KeyOf(object));
      CHECK(admin->Get(ref, ref.namespaced ? ns : "", name).ok());
      CHECK(admin->Delete(ref, ref.namespaced ? ns : "", name).ok());
    }
  }
}

}  // namespace
}  // namespace dra::e2e
