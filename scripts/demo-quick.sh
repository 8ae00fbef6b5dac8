#!/usr/bin/env bash
# scripts/demo.sh --quick, in seconds and without a kubelet: builds dra-cpp,
# starts a local stand-in for
# kube-apiserver (tests/support/fakeapiserver) and the minimal example driver
# with its sockets and CDI spec dir in a temp dir; shows the ResourceSlice the
# driver publishes, then drives it the way the kubelet does, with dractl:
# register, prepare (showing the CDI spec file the Helper wrote), health,
# unprepare. Cleans up after itself.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

echo "== building (first run takes a few minutes)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${DRA_JOBS:-2}" --target minimal-driver dractl fakeapiserver >/dev/null

dractl="$root/build/tools/dractl/dractl"
driver_bin="$root/build/examples/minimal/minimal-driver"
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

mkdir -p "$work/plugins_registry"
# One allocated claim of the minimal driver, as the scheduler would leave it.
claims="$root/examples/minimal/claims.json"
uid=$(sed -n 's/.*"uid": "\([^"]*\)".*/\1/p' "$claims")

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# wait_until PID LOG CMD...: runs CMD every 10 ms until it succeeds; stops
# the demo, showing LOG, if PID exits first or 10 s pass.
wait_until() {
  local pid="$1" log="$2"
  shift 2
  for _ in $(seq 1 1000); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.01
  done
  echo "timed out waiting for: $*" >&2
  cat "$log"
  exit 1
}

step "a local API server (the test suite's stand-in for kube-apiserver, HTTPS on 127.0.0.1) and the Node"
echo "demo-token,admin" > "$work/tokens.csv"
"$apiserver_bin" --cert-dir "$work/apiserver" --port-file "$work/apiserver.port" --token-file "$work/tokens.csv" \
  --quiet --exit-with-parent 2>"$work/apiserver.log" &
apiserver_pid=$!
wait_until "$apiserver_pid" "$work/apiserver.log" test -s "$work/apiserver.port"
server="https://127.0.0.1:$(cat "$work/apiserver.port")"
api() { curl -sS --cacert "$work/apiserver/ca.crt" -H "Authorization: Bearer demo-token" "$@"; }
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

step "start the minimal driver (sockets under $work, CDI specs in $work/cdi, slices to the API server)"
"$driver_bin" --registrar-dir "$work/plugins_registry" --plugin-data-dir "$work/plugins/minimal.example.com" \
  --cdi-dir "$work/cdi" --claims "$claims" --kubeconfig "$work/kubeconfig" --node-name node-local \
  2>"$work/driver.log" &
driver_pid=$!
wait_until "$driver_pid" "$work/driver.log" test -S "$work/plugins_registry/minimal.example.com-reg.sock"
ls -l "$work/plugins_registry" "$work/plugins/minimal.example.com"

step "the ResourceSlice the driver published (Helper::PublishResources), as the scheduler sees it"
slices="$server/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dminimal.example.com"
slice_published() { api "$slices" | grep -q '"nodeName"'; }
wait_until "$driver_pid" "$work/driver.log" slice_published
api "$slices" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
    m = s["metadata"]
    print("name:", m["name"], "  owner:", m["ownerReferences"][0]["kind"], m["ownerReferences"][0]["name"])
    print(json.dumps(s["spec"], indent=2))'

step "dractl register: discover the socket, GetInfo, validate, NotifyRegistrationStatus"
"$dractl" register --registry-dir "$work/plugins_registry"

endpoint="$work/plugins/minimal.example.com/dra.sock"
step "dractl prepare default/gpu-claim (NodePrepareResources, DRA v1)"
"$dractl" prepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid"

step "the claim's CDI spec, written by the Helper (the container runtime reads it; mode 0600)"
spec="$work/cdi/minimal.example.com-claim_$uid.json"
ls -l "$work/cdi"
cat "$spec"

step "the checkpoint records the prepared claim (with its CDI spec, to re-create it after a reboot)"
cat "$work/plugins/minimal.example.com/checkpoint.json"; echo

step "a reboot empties /var/run/cdi (tmpfs); prepare again: answered from the checkpoint, spec re-created"
rm -f "$spec"
"$dractl" prepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid" >/dev/null
ls -l "$work/cdi"

step "dractl prepare again: answered from the checkpoint"
"$dractl" prepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid" --json

step "dractl prepare of a claim the driver does not know: fails that claim only"
"$dractl" prepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid" --claim "default/missing/uid-x" || true

step "dractl health (NodeWatchResources, first update)"
"$dractl" health --endpoint "$endpoint"

step "dractl unprepare (NodeUnprepareResources)"
"$dractl" unprepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid"

step "checkpoint and CDI spec dir after unprepare"
cat "$work/plugins/minimal.example.com/checkpoint.json"; echo
echo "CDI spec dir now: $(ls -A "$work/cdi" | tr '\n' ' ')(the claim's spec is gone)"

step "stop the driver with SIGTERM: sockets are removed"
kill -TERM "$driver_pid"; wait "$driver_pid"; driver_pid=
echo "registry dir now: $(ls -A "$work/plugins_registry" | tr '\n' ' ')(nothing left)"
echo "plugin dir now:   $(ls -A "$work/plugins/minimal.example.com" | tr '\n' ' ')"
echo "ResourceSlices now: $(api "$slices" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["items"]))') (kept: the kubelet removes a departed driver's slices)"
echo "driver log:"; sed 's/^/  /' "$work/driver.log"
echo; echo "demo finished"
