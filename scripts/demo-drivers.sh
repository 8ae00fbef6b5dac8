#!/usr/bin/env bash
# The example GPU and CPU drivers (examples/gpu, examples/cpu) on a real
# Kubernetes v1.37.2 control plane and node, built from source and started in
# a temp dir by the e2e suite's tests/e2e/cluster.sh (the node is a real
# kubelet on the suite's CRI stand-in, which resolves CDI devices as
# containerd does but starts no processes). Step by step: the GPU driver's
# slices, a pod with a GPU from a template and what its container got, the
# claim's device status, a fabric-attached GPU bound after its binding
# condition, a GPU going bad (taint, health, eviction), clean-up; then the
# CPU driver on this machine's real CPU topology: its slice, a pod's claim
# for an exclusive CPU prepared, the cpuset in the container, the pod's
# node-allocatable accounting. Called by scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# wait_for WHAT SECONDS CMD...: runs CMD twice a second until it succeeds.
wait_for() {
  local what="$1" seconds="$2"
  shift 2
  for _ in $(seq 1 $((seconds * 2))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "demo: timed out after ${seconds}s waiting for $what" >&2
  [ -f "${driver_log:-}" ] && { echo "the driver's log:" >&2; tail -30 "$driver_log" >&2; }
  exit 1
}

step "building dra-cpp and the example drivers"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${DRA_JOBS:-2}" --target gpu-driver cpu-driver >/dev/null
driver_bin="$root/build/examples/gpu/gpu-driver"
cpu_driver_bin="$root/build/examples/cpu/cpu-driver"

step "the Kubernetes binaries: built from source on the first run only (about 20 minutes on 2 cores), then cached"
tests/e2e/build-k8s.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubelet cri >/dev/null

work=$(mktemp -d /tmp/dra-gpu-demo-XXXXXX)
cluster="$work/cluster"
driver_pid=
cpu_driver_pid=
driver_log="$work/driver.log"
cleanup() {
  [ -n "${DRA_DEMO_KEEP:-}" ] && { echo "kept: $work"; return; }
  [ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null || true
  [ -n "$cpu_driver_pid" ] && kill "$cpu_driver_pid" 2>/dev/null && wait "$cpu_driver_pid" 2>/dev/null || true
  tests/e2e/cluster.sh stop "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step "a control plane (etcd, kube-apiserver, kube-scheduler) and a node (kubelet, kube-controller-manager, CRI stand-in)"
tests/e2e/cluster.sh start "$cluster" 2>&1 | tail -1
tests/e2e/cluster.sh node-start "$cluster" 2>&1 | tail -1
eval "$(tests/e2e/cluster.sh env "$cluster")"
node=$DRA_E2E_NODE_NAME
token=$(sed -n 's/^ *token: //p' "$cluster/admin.kubeconfig")
server=$DRA_E2E_SERVER
api() { curl -sS --fail-with-body --cacert "$DRA_E2E_CA_FILE" -H "Authorization: Bearer $token" "$@"; }
# Bodies go compact with sorted keys, as kubectl sends them: kube-apiserver
# 1.37 refuses any status patch of a claim whose opaque config parameters it
# stored in another form (the round trip changes their bytes).
post() {
  local body
  body=$(python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1]), separators=(",", ":"), sort_keys=True))' "$2")
  api -X POST -H "Content-Type: application/json" "$server$1" -d "$body" >/dev/null
}
get() { api "$server$1"; }
# py CODE: runs CODE with `doc` the JSON document on stdin.
py() { python3 -c "import json, sys
doc = json.load(sys.stdin)
$1"; }

step "the driver's rights (its ClusterRole, as examples/gpu/deploy/rbac.yaml) and DeviceClasses"
user="system:serviceaccount:dra-system:gpu-driver"
post /apis/rbac.authorization.k8s.io/v1/clusterroles '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
  "metadata":{"name":"gpu-demo-driver"},"rules":[
  {"apiGroups":["resource.k8s.io"],"resources":["resourceslices"],"verbs":["get","list","watch","create","update","delete"]},
  {"apiGroups":[""],"resources":["nodes"],"verbs":["get"]},
  {"apiGroups":["resource.k8s.io"],"resources":["resourceclaims"],"verbs":["get","list","watch"]},
  {"apiGroups":["resource.k8s.io"],"resources":["resourceclaims/status"],"verbs":["patch"]},
  {"apiGroups":["resource.k8s.io"],"resources":["resourceclaims/driver"],"resourceNames":["gpu.example.com"],
   "verbs":["arbitrary-node:patch"]}]}'
post /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{"apiVersion":"rbac.authorization.k8s.io/v1",
  "kind":"ClusterRoleBinding","metadata":{"name":"gpu-demo-driver"},
  "subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"'"$user"'"}],
  "roleRef":{"kind":"ClusterRole","apiGroup":"rbac.authorization.k8s.io","name":"gpu-demo-driver"}}'
post /apis/resource.k8s.io/v1/deviceclasses '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass",
  "metadata":{"name":"gpu.example.com"},"spec":{"selectors":[{"cel":{"expression":
  "device.driver == \"gpu.example.com\" && !(\"fabricAttached\" in device.attributes[\"gpu.example.com\"])"}}]}}'
post /apis/resource.k8s.io/v1/deviceclasses '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass",
  "metadata":{"name":"fabric.gpu.example.com"},"spec":{"selectors":[{"cel":{"expression":
  "device.driver == \"gpu.example.com\" && \"fabricAttached\" in device.attributes[\"gpu.example.com\"]"}}]}}'
api -X PATCH -H "Content-Type: application/merge-patch+json" "$server/api/v1/nodes/$node" \
  -d '{"metadata":{"labels":{"accelerator-type":"high-performance"}}}' >/dev/null
echo "ClusterRole gpu-demo-driver bound to $user; DeviceClasses gpu.example.com and fabric.gpu.example.com;"
echo "node $node labelled accelerator-type=high-performance (the fabric reaches it)"

step "start the GPU driver on the node: 4 mock GPUs, device status, a fabric pool of 2 GPUs it also attaches"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
health_file="$work/gpu-health"
"$driver_bin" --node-name "$node" --kubeconfig "$cluster/driver-gpu-driver.kubeconfig" \
  --cdi-root "$DRA_E2E_CDI_DIR" --kubelet-registrar-directory-path "$DRA_E2E_PLUGINS_REGISTRY" \
  --kubelet-plugins-directory-path "$DRA_E2E_PLUGINS_DIR" --http-endpoint "127.0.0.1:$port" \
  --num-devices 4 --gpu-device-status --mock-health-file "$health_file" \
  --fabric-pool fabric-0 --fabric-num-devices 2 --fabric-attach --fabric-attach-delay 5s 2>"$driver_log" &
driver_pid=$!
registered() { curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^dra_registered 1'; }
wait_for "the kubelet to accept the driver's registration" 30 registered
echo "registered with the kubelet (dra_registered 1 on http://127.0.0.1:$port/metrics)"

step "the ResourceSlices it published"
slices() { get "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dgpu.example.com"; }
published() { [ "$(slices | py 'print(len(doc["items"]))')" = 2 ]; }
wait_for "two slices" 30 published
slices | py '
for s in doc["items"]:
    spec = s["spec"]
    where = "node " + spec["nodeName"] if "nodeName" in spec else "nodes with " + json.dumps(spec["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0])
    print("pool %s (%s):" % (spec["pool"]["name"], where))
    for d in spec["devices"]:
        a = {k: list(v.values())[0] for k, v in d["attributes"].items()}
        extra = " bindsToNode, bindingConditions " + ",".join(d["bindingConditions"]) if d.get("bindsToNode") else ""
        print("  %s: %s %s memory %s pciBusID %s%s" % (d["name"], a["productName"], a["uuid"],
              d["capacity"]["memory"]["value"], a["resource.kubernetes.io/pciBusID"], extra))'

step "a pod with one GPU from a ResourceClaimTemplate, time-sliced with a GpuConfig"
post /apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates '{"apiVersion":"resource.k8s.io/v1",
  "kind":"ResourceClaimTemplate","metadata":{"name":"gpu"},"spec":{"spec":{"devices":{
  "requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}],
  "config":[{"opaque":{"driver":"gpu.example.com","parameters":{"apiVersion":"gpu.resource.example.com/v1alpha1",
  "kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}}}]}}}}'
pod_json() { echo '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'"$1"'"},"spec":{
  "automountServiceAccountToken":false,"containers":[{"name":"app","image":"registry.example/app:1",
  "resources":{"claims":[{"name":"gpu"}]}}],"resourceClaims":[{"name":"gpu",'"$2"'}]}}'; }
post /api/v1/namespaces/default/pods "$(pod_json app '"resourceClaimTemplateName":"gpu"')"
running() { [ "$(get "/api/v1/namespaces/default/pods/$1" | py 'print(doc["status"].get("phase"))')" = Running ]; }
wait_for "pod app to run" 90 running app
claim=$(get /api/v1/namespaces/default/pods/app | py 'print(doc["status"]["resourceClaimStatuses"][0]["resourceClaimName"])')
echo "pod app is Running with claim $claim:"
get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$claim" | py '
r = doc["status"]["allocation"]["devices"]["results"][0]
print("  allocated %s/%s/%s" % (r["driver"], r["pool"], r["device"]))'
echo "what the container runtime made of the claim's CDI devices (the CRI stand-in's record):"
python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["containers"]:
    if c["podName"] == "app" and c["state"] != "failed":
        print("  CDI devices:", ", ".join(c["cdiDevices"]))
        print("  env:", " ".join(e for e in c["env"] if e.startswith(("GPU_DEVICE", "DRA_"))))
        print("  device nodes:", ", ".join(d["path"] for d in c["deviceNodes"]))' "$DRA_E2E_CRI_RECORD"
has_status() { get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$claim" \
  | py 'import sys; sys.exit(0 if doc["status"].get("devices") else 1)'; }
wait_for "the device status in claim $claim" 20 has_status
echo "the claim's status.devices, written by the driver while preparing:"
get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$claim" | py '
for d in doc["status"]["devices"]:
    c = d["conditions"][0]
    print("  %s: %s=%s (%s: %s) data %s" % (d["device"], c["type"], c["status"], c["reason"], c["message"],
          json.dumps(d["data"])))'

step "a fabric-attached GPU: the scheduler waits in PreBind until the node plugin attached it"
post /apis/resource.k8s.io/v1/namespaces/default/resourceclaims '{"apiVersion":"resource.k8s.io/v1",
  "kind":"ResourceClaim","metadata":{"name":"fabric-gpu"},"spec":{"devices":{
  "requests":[{"name":"gpu","exactly":{"deviceClassName":"fabric.gpu.example.com"}}]}}}'
post /api/v1/namespaces/default/pods "$(pod_json fabric '"resourceClaimName":"fabric-gpu"')"
attaching() { grep -q "Attaching fabric GPU" "$driver_log"; }
wait_for "the attach to start" 60 attaching
get /api/v1/namespaces/default/pods/fabric | py '
print("  pod fabric: phase", doc["status"].get("phase"), "- node", doc["spec"].get("nodeName") or "(not bound yet)")'
wait_for "pod fabric to run" 90 running fabric
get /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/fabric-gpu | py '
r = doc["status"]["allocation"]["devices"]["results"][0]
print("  allocated %s/%s, node selector %s" % (r["pool"], r["device"],
      json.dumps(doc["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0])))
for d in doc["status"]["devices"]:
    for c in d["conditions"]:
        print("  %s=%s (%s: %s)" % (c["type"], c["status"], c["reason"], c["message"]))'
echo "  pod fabric is Running on $node"

step "GPU of pod app goes bad: tainted NoExecute in its slice, and the pod evicted"
device=$(get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$claim" \
  | py 'print(doc["status"]["allocation"]["devices"]["results"][0]["device"])')
echo "${device#gpu-} fatal" >> "$health_file"
echo "appended \"${device#gpu-} fatal\" to $health_file"
tainted() { slices | py '
import sys
ok = any(t["effect"] == "NoExecute" for s in doc["items"] for d in s["spec"].get("devices", []) for t in d.get("taints", []))
sys.exit(0 if ok else 1)'; }
wait_for "the taint" 30 tainted
slices | py '
for s in doc["items"]:
    for d in s["spec"].get("devices", []):
        for t in d.get("taints", []):
            print("  %s: taint %s=%s:%s" % (d["name"], t["key"], t["value"], t["effect"]))'
gone() { ! get /api/v1/namespaces/default/pods/app >/dev/null 2>&1 || \
  get /api/v1/namespaces/default/pods/app | py 'import sys; sys.exit(0 if "deletionTimestamp" in doc["metadata"] else 1)'; }
wait_for "the device-taint-eviction controller to evict pod app" 90 gone
get "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dapp" | py '
for e in doc["items"]:
    if e["reason"] in ("DeviceTaintEviction", "Killing", "TaintManagerEviction") or "taint" in e["message"].lower():
        print("  event %s: %s" % (e["reason"], e["message"]))' || true
echo "  pod app was evicted"

step "delete pod fabric: the kubelet unprepares its claim, the driver's CDI spec goes"
api -X DELETE "$server/api/v1/namespaces/default/pods/fabric" >/dev/null
fabric_uid=$(get /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/fabric-gpu | py 'print(doc["metadata"]["uid"])')
unprepared() { grep -q "\"Unprepared claim\".*uid=\"$fabric_uid\"" "$driver_log"; }
wait_for "the claim to be unprepared" 90 unprepared
grep -E '"(Prepared|Unprepared) claim"' "$driver_log" | sed 's/^/  /'
echo "CDI specs left in $DRA_E2E_CDI_DIR: $(ls "$DRA_E2E_CDI_DIR" | tr '\n' ' ')"

step "SIGTERM: the driver stops, its slices stay for the next instance"
kill -TERM "$driver_pid"
wait "$driver_pid"
driver_pid=
echo "exit status 0; slices: $(slices | py 'print(len(doc["items"]))')"

step "the CPU driver on this machine's real CPU topology (/sys), CPU 0 kept for the system"
cpu_user="system:serviceaccount:dra-system:cpu-driver"
post /apis/rbac.authorization.k8s.io/v1/clusterroles '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
  "metadata":{"name":"cpu-demo-driver"},"rules":[
  {"apiGroups":["resource.k8s.io"],"resources":["resourceslices"],"verbs":["get","list","watch","create","update","delete"]},
  {"apiGroups":[""],"resources":["nodes"],"verbs":["get"]},
  {"apiGroups":["resource.k8s.io"],"resources":["resourceclaims"],"verbs":["get"]}]}'
post /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{"apiVersion":"rbac.authorization.k8s.io/v1",
  "kind":"ClusterRoleBinding","metadata":{"name":"cpu-demo-driver"},
  "subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"'"$cpu_user"'"}],
  "roleRef":{"kind":"ClusterRole","apiGroup":"rbac.authorization.k8s.io","name":"cpu-demo-driver"}}'
post /apis/resource.k8s.io/v1/deviceclasses '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass",
  "metadata":{"name":"cpu.example.com"},"spec":{"selectors":[{"cel":{"expression":
  "device.driver == \"cpu.example.com\" && device.attributes[\"cpu.example.com\"].resource == \"cpu\""}}]}}'
cpu_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
driver_log="$work/cpu-driver.log"  # what wait_for shows from now on
"$cpu_driver_bin" --node-name "$node" --kubeconfig "$cluster/driver-cpu-driver.kubeconfig" \
  --cdi-root "$DRA_E2E_CDI_DIR" --kubelet-registrar-directory-path "$DRA_E2E_PLUGINS_REGISTRY" \
  --kubelet-plugins-directory-path "$DRA_E2E_PLUGINS_DIR" --http-endpoint "127.0.0.1:$cpu_port" \
  --reserved-cpus 0 2>"$driver_log" &
cpu_driver_pid=$!
cpu_registered() { curl -sf "http://127.0.0.1:$cpu_port/metrics" | grep -q '^dra_registered 1'; }
wait_for "the kubelet to accept the CPU driver's registration" 30 cpu_registered
cpu_slices() { get "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dcpu.example.com"; }
cpu_published() { [ "$(cpu_slices | py 'print(len(doc["items"]))')" = 1 ]; }
wait_for "the CPU driver's slice" 30 cpu_published
cpu_slices | py '
for s in doc["items"]:
    for d in s["spec"]["devices"]:
        a = {k: list(v.values())[0] for k, v in d["attributes"].items()}
        c = d["capacity"]["cpu.example.com/cpu"]
        print("  %s: %s CPUs that claims share (validRange %s), socket %s, SMT %s," % (
              d["name"], c["value"], json.dumps(c["requestPolicy"]["validRange"]), a["socketID"], a["smtEnabled"]))
        print("    nodeAllocatableResources %s" % json.dumps(d["nodeAllocatableResources"]))'

step "a pod with a claim for one exclusive CPU"
post /apis/resource.k8s.io/v1/namespaces/default/resourceclaims '{"apiVersion":"resource.k8s.io/v1",
  "kind":"ResourceClaim","metadata":{"name":"one-cpu"},"spec":{"devices":{
  "requests":[{"name":"cpus","exactly":{"deviceClassName":"cpu.example.com",
  "capacity":{"requests":{"cpu.example.com/cpu":"1"}}}}]}}}'
post /api/v1/namespaces/default/pods '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pinned"},"spec":{
  "automountServiceAccountToken":false,"containers":[{"name":"app","image":"registry.example/app:1",
  "resources":{"claims":[{"name":"cpus"}]}}],"resourceClaims":[{"name":"cpus","resourceClaimName":"one-cpu"}]}}'
wait_for "pod pinned to run" 90 running pinned
get /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/one-cpu | py '
r = doc["status"]["allocation"]["devices"]["results"][0]
print("  allocated %s, consumedCapacity %s" % (r["device"], json.dumps(r["consumedCapacity"])))'
get /api/v1/namespaces/default/pods/pinned | py '
for s in doc["status"].get("nodeAllocatableResourceClaimStatuses", []):
    print("  the pod counts as node allocatable: claim %s, %s" % (s["resourceClaimName"], json.dumps(s["mapping"])))'
echo "what the container runtime got (the CRI stand-in's record):"
python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["containers"]:
    if c["podName"] == "pinned" and c["state"] != "failed":
        print("  CDI devices:", ", ".join(c["cdiDevices"]))
        print("  env:", " ".join(e for e in c["env"] if e.startswith("DRA_CPUSET")))' "$DRA_E2E_CRI_RECORD"
curl -sf "http://127.0.0.1:$cpu_port/metrics" | grep -E '^dra_cpu_' | sed 's/^/  /'

step "delete pod pinned: the CPU goes back; SIGTERM the CPU driver"
api -X DELETE "$server/api/v1/namespaces/default/pods/pinned" >/dev/null
freed() { curl -sf "http://127.0.0.1:$cpu_port/metrics" | grep -q '^dra_cpu_allocated_cpus 0'; }
wait_for "the CPU to be freed" 90 freed
echo "  dra_cpu_allocated_cpus 0"
kill -TERM "$cpu_driver_pid"
wait "$cpu_driver_pid"
cpu_driver_pid=
echo
echo "demo finished (the cluster is stopped and its temp dir removed)"
