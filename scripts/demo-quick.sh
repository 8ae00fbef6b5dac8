#!/usr/bin/env bash
# scripts/demo.sh --quick, in seconds and without a kubelet: builds the
# example GPU driver (examples/gpu), starts a local stand-in for
# kube-apiserver (tests/support/fakeapiserver) and the driver with its
# sockets and CDI spec dir in a temp dir; shows the GPUs it publishes, then
# plays the scheduler (allocating claims in the API server) and the kubelet
# (dractl): register, prepare with a GpuConfig (the CDI spec the driver
# wrote, the device status it put in the claim), a bad config failing only
# its claim, a GPU going bad (taint and health), unprepare, metrics, SIGTERM.
# Cleans up after itself.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

echo "== building (first run takes a few minutes)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${DRA_JOBS:-2}" --target gpu-driver dractl fakeapiserver >/dev/null

dractl="$root/build/tools/dractl/dractl"
driver_bin="$root/build/examples/gpu/gpu-driver"
apiserver_bin="$root/build/tests/support/fakeapiserver/bin/fakeapiserver"
work=$(mktemp -d /tmp/dra-demo-XXXXXX)
driver_pid=
apiserver_pid=
cleanup() {
  [ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null || true
  [ -n "$apiserver_pid" ] && kill "$apiserver_pid" 2>/dev/null && wait "$apiserver_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# wait_until PID LOG CMD...: runs CMD every 10 ms until it succeeds; stops
# the demo, showing LOG, if PID exits first or 10 s pass.
wait_until() {
  local pid="$1" log="$2"
  shift 2
  for _ in $(seq 1 1000); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.01
  done
  echo "timed out waiting for: $*" >&2
  cat "$log"
  exit 1
}
# py CODE: runs CODE with `doc` the JSON document on stdin.
py() { python3 -c "import json, sys
doc = json.load(sys.stdin)
$1"; }

step "a local API server (the test suite's stand-in for kube-apiserver, HTTPS on 127.0.0.1) and the Node"
echo "demo-token,admin" > "$work/tokens.csv"
"$apiserver_bin" --cert-dir "$work/apiserver" --port-file "$work/apiserver.port" --token-file "$work/tokens.csv" \
  --quiet --exit-with-parent 2>"$work/apiserver.log" &
apiserver_pid=$!
wait_until "$apiserver_pid" "$work/apiserver.log" test -s "$work/apiserver.port"
server="https://127.0.0.1:$(cat "$work/apiserver.port")"
api() { curl -sS --fail-with-body --cacert "$work/apiserver/ca.crt" -H "Authorization: Bearer demo-token" "$@"; }
cat > "$work/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: demo, cluster: {server: "$server", certificate-authority: "$work/apiserver/ca.crt"}}]
users: [{name: driver, user: {token: demo-token}}]
contexts: [{name: demo, context: {cluster: demo, user: driver}}]
current-context: demo
KUBECONFIG
api -X POST -H "Content-Type: application/json" "$server/api/v1/nodes" \
  -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-local"}}' >/dev/null
echo "API server at $server; Node node-local created"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
step "start the GPU driver: 2 mock GPUs, device status on, health from $work/health"
"$driver_bin" --node-name=node-local --kubeconfig="$work/kubeconfig" --cdi-root="$work/cdi" \
  --kubelet-registrar-directory-path="$work/plugins_registry" --kubelet-plugins-directory-path="$work/plugins" \
  --num-devices=2 --gpu-device-status --mock-health-file="$work/health" --http-endpoint="127.0.0.1:$port" \
  2>"$work/driver.log" &
driver_pid=$!
mkdir -p "$work/plugins_registry"
wait_until "$driver_pid" "$work/driver.log" test -S "$work/plugins_registry/gpu.example.com-reg.sock"
ls -l "$work/plugins_registry" "$work/plugins/gpu.example.com"

step "the ResourceSlice it published, as the scheduler sees it"
slices="$server/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dgpu.example.com"
slice_published() { api "$slices" | grep -q '"gpu-1"'; }
wait_until "$driver_pid" "$work/driver.log" slice_published
api "$slices" | py '
for s in doc["items"]:
    print("slice", s["metadata"]["name"], "of node", s["spec"]["nodeName"], "pool", s["spec"]["pool"]["name"])
    for d in s["spec"]["devices"]:
        a = {k: list(v.values())[0] for k, v in d["attributes"].items()}
        print("  %s: uuid %s, %s, pciBusID %s, memory %s, compute %s" % (d["name"], a["uuid"], a["productName"],
              a["resource.kubernetes.io/pciBusID"], d["capacity"]["memory"]["value"], d["capacity"]["compute"]["value"]))'

step "dractl register: discover the socket, GetInfo, validate, NotifyRegistrationStatus"
"$dractl" register --registry-dir "$work/plugins_registry"

# claim NAME DEVICE CONFIG: creates a claim for one GPU with CONFIG (a GpuConfig's
# JSON) and allocates DEVICE to it, as the scheduler would; prints its UID.
claim() {
  local name="$1" device="$2" config="$3" created
  created=$(python3 - "$name" "$config" <<'EOF' | api -X POST -H "Content-Type: application/json" \
      "$server/apis/resource.k8s.io/v1/namespaces/default/resourceclaims" -d @-
import json, sys
name, config = sys.argv[1:]
claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"namespace": "default", "name": name},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}],
                  "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
                                                              "parameters": json.loads(config)}}]}}}
print(json.dumps(claim, separators=(",", ":"), sort_keys=True))
EOF
  )
  echo "$created" | python3 -c 'import json, sys
claim = json.load(sys.stdin)
claim["status"] = {"allocation": {"devices": {"results": [
    {"request": "gpu", "driver": "gpu.example.com", "pool": "node-local", "device": sys.argv[1]}],
    "config": [dict(c, source="FromClaim") for c in claim["spec"]["devices"]["config"]]}}}
print(json.dumps(claim, separators=(",", ":"), sort_keys=True))' "$device" |
    api -X PUT -H "Content-Type: application/json" \
      "$server/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$name/status" -d @- |
    py 'print(doc["metadata"]["uid"])'
}
endpoint="$work/plugins/gpu.example.com/dra.sock"

step "a claim for gpu-0 with a GpuConfig (time slicing, interval Long), allocated as the scheduler would"
uid=$(claim gpu-claim gpu-0 \
  '{"apiVersion":"gpu.resource.example.com/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}')
echo "default/gpu-claim uid $uid"

step "dractl prepare default/gpu-claim (NodePrepareResources): the devices and CDI IDs the kubelet gets"
"$dractl" prepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid"

step "the claim's CDI spec, written by the SDK for the driver (the container runtime reads it)"
# Named and kinded as dra-example-driver names its own, which the GPU example
# stands in for (its unprepare removes it after a rollback).
spec="$work/cdi/k8s.gpu.example.com-gpu_$uid.yaml"
ls -l "$work/cdi"
cat "$spec"

step "the device status the driver wrote into the claim (ClaimStatusWriter)"
api "$server/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu-claim" |
  py 'print(json.dumps(doc["status"]["devices"], indent=2))'

step "a claim whose GpuConfig has a typo fails that claim only, naming the field"
bad=$(claim bad-claim gpu-1 \
  '{"apiVersion":"gpu.resource.example.com/v1alpha1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"intervall":"Long"}}}')
"$dractl" prepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid" --claim "default/bad-claim/$bad" || true

step "gpu-1 goes bad: a line in the mock health file; the driver taints it and tells the kubelet"
echo "1 unhealthy" >> "$work/health"
tainted() { api "$slices" | grep -q '"taints"'; }
wait_until "$driver_pid" "$work/driver.log" tainted
api "$slices" | py '
for s in doc["items"]:
    for d in s["spec"]["devices"]:
        print(" ", d["name"], "taints:", json.dumps(d.get("taints", [])))'
"$dractl" health --endpoint "$endpoint"

step "dractl unprepare (NodeUnprepareResources): the claim's CDI spec goes"
"$dractl" unprepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid"
echo "CDI spec dir now: $(ls -A "$work/cdi" | tr '\n' ' ')(the common spec stays)"

step "/metrics (the SDK's Prometheus metrics), the dra_ lines"
curl -sS "http://127.0.0.1:$port/metrics" | grep -E '^dra_(kubelet_calls|claims|claim_errors|prepared_claims|registered|resource_slice|api_requests|background)'

step "stop the driver with SIGTERM: sockets are removed, the slice stays for the next instance"
kill -TERM "$driver_pid"; wait "$driver_pid"; driver_pid=
echo "registry dir now: $(ls -A "$work/plugins_registry" | tr '\n' ' ')(nothing left)"
echo "ResourceSlices now: $(api "$slices" | py 'print(len(doc["items"]))')"
echo "driver log:"; sed 's/^/  /' "$work/driver.log"
echo; echo "demo finished"
