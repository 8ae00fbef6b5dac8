#!/usr/bin/env bash
# The GPU example on a real NVIDIA GPU, on a machine that has the NVIDIA
# driver but nothing else of ours (no compiler, no registry, maybe another
# distribution):
#
#   examples/gpu/nvml/real-gpu.sh bundle BUILD_DIR OUT.tar.gz
#       packs gpu-driver, dractl and the suite's stand-in API server from
#       BUILD_DIR (build them first: cmake --build BUILD_DIR --target
#       gpu-driver dractl fakeapiserver), curl, and every shared library they
#       load, the dynamic loader included, so the bundle runs on any x86-64
#       Linux whatever its glibc.
#   examples/gpu/nvml/real-gpu.sh run BUNDLE.tar.gz
#       on the GPU machine: starts the API server and the driver with
#       --device-source=nvml, prints the ResourceSlice it publishes, plays the
#       scheduler (allocates the first GPU to a claim) and the kubelet
#       (dractl register, prepare, health, unprepare), prints the CDI spec the
#       container runtime would read, and stops the driver with SIGTERM.
#       Exit status 0 only when every step worked. $NVML_LIBRARY, when set,
#       is the NVML library to load (the suite's fake one, for a dry run).
set -euo pipefail

usage() { sed -n '2,21s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ $# -eq 3 ] || [ $# -eq 2 ] || usage

bundle() {
  local build="$1" out="$2" stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib"
  cp "$build/examples/gpu/gpu-driver" "$build/tools/dractl/dractl" \
    "$build/tests/support/fakeapiserver/bin/fakeapiserver" "$(command -v curl)" "$stage/bin/"
  strip "$stage/bin/gpu-driver" "$stage/bin/dractl"
  local exe
  for exe in "$stage/bin/gpu-driver" "$stage/bin/dractl" "$stage/bin/curl"; do
    # ldd's lines: "libz.so.1 => /lib/.../libz.so.1 (0x...)" and the loader's "/lib64/ld-linux-x86-64.so.2 (0x...)".
    ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
      while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  done
  tar -C "$stage" -czf "$out" bin lib
  rm -rf "$stage"
  echo "$out: $(du -h "$out" | cut -f1)"
}

run() {
  local tarball="$1"
  # Globals: the EXIT trap reads them after run() returns.
  work=$(mktemp -d /tmp/dra-real-gpu-XXXXXX)
  driver_pid=""
  apiserver_pid=""
  cleanup() {
    [ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null || true
    [ -n "$apiserver_pid" ] && kill "$apiserver_pid" 2>/dev/null && wait "$apiserver_pid" 2>/dev/null || true
    rm -rf "$work"
  }
  trap cleanup EXIT
  tar -C "$work" -xzf "$tarball"
  local b="$work/bin" loader
  loader=$(ls "$work"/lib/ld-linux-*.so.*)
  # Our loader and libraries, not the machine's: the binaries need Debian 12's glibc or newer.
  bundled() { "$loader" --library-path "$work/lib" "$b/$1" "${@:2}"; }
  step() { printf '\n== %s\n' "$*"; }
  # pretty: indented JSON where the machine has python3, as it came otherwise.
  pretty() { if command -v python3 >/dev/null; then python3 -m json.tool; else cat; echo; fi; }
  wait_for() {
    local pid="$1" log="$2"
    shift 2
    for _ in $(seq 1 3000); do
      "$@" >/dev/null 2>&1 && return 0
      kill -0 "$pid" 2>/dev/null || { cat "$log"; return 1; }
      sleep 0.01
    done
    echo "gave up waiting for: $*" >&2; cat "$log"; return 1
  }

  step "the machine"
  uname -srm
  grep -m1 PRETTY_NAME /etc/os-release || true
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total,mig.mode.current --format=csv
  local nvml="${NVML_LIBRARY:-}"
  [ -n "$nvml" ] || nvml=$( (ldconfig -p 2>/dev/null | awk '/libnvidia-ml\.so\.1 .*x86-64/ {print $NF; exit}'); true)
  if [ -z "$nvml" ]; then
    nvml=$(find /usr/lib /usr/lib64 /usr/local/nvidia /usr/lib/x86_64-linux-gnu -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
  fi
  [ -n "$nvml" ] || { echo "no libnvidia-ml.so.1 on this machine" >&2; return 1; }
  echo "NVML: $nvml"

  step "the API server stand-in and the Node"
  echo "gpu-token,admin" > "$work/tokens.csv"
  "$b/fakeapiserver" --cert-dir "$work/apiserver" --port-file "$work/apiserver.port" \
    --token-file "$work/tokens.csv" --quiet --exit-with-parent 2>"$work/apiserver.log" &
  apiserver_pid=$!
  wait_for "$apiserver_pid" "$work/apiserver.log" test -s "$work/apiserver.port"
  local server node
  server="https://127.0.0.1:$(cat "$work/apiserver.port")"
  node=nvml-node
  api() { bundled curl -sS --fail-with-body --cacert "$work/apiserver/ca.crt" -H "Authorization: Bearer gpu-token" "$@"; }
  cat > "$work/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: gpu, cluster: {server: "$server", certificate-authority: "$work/apiserver/ca.crt"}}]
users: [{name: driver, user: {token: gpu-token}}]
contexts: [{name: gpu, context: {cluster: gpu, user: driver}}]
current-context: gpu
KUBECONFIG
  api -X POST -H "Content-Type: application/json" "$server/api/v1/nodes" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$node\"}}" >/dev/null
  echo "Node $node at $server"

  step "gpu-driver --device-source=nvml"
  local started
  mkdir -p "$work/plugins_registry"
  started=$(date +%s%N)
  # Not through bundled(): $! must be the driver's own pid, for SIGTERM.
  "$loader" --library-path "$work/lib" "$b/gpu-driver" --node-name="$node" --kubeconfig="$work/kubeconfig" --cdi-root="$work/cdi" \
    --kubelet-registrar-directory-path="$work/plugins_registry" --kubelet-plugins-directory-path="$work/plugins" \
    --device-source=nvml --nvml-library="$nvml" --gpu-device-status -v 1 2>"$work/driver.log" &
  driver_pid=$!
  wait_for "$driver_pid" "$work/driver.log" test -S "$work/plugins_registry/gpu.example.com-reg.sock"
  echo "registration socket after $((($(date +%s%N) - started) / 1000000)) ms"

  step "the ResourceSlice it published"
  local slices="$server/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dgpu.example.com"
  published() { api "$slices" | grep -q '"devices":\[{'; }
  wait_for "$driver_pid" "$work/driver.log" published
  if command -v python3 >/dev/null; then
    api "$slices" | python3 -c 'import json, sys
for s in json.load(sys.stdin)["items"]:
    print(json.dumps(s["spec"], indent=2))'
  else
    api "$slices"; echo
  fi
  local device
  device=$(api "$slices" | grep -o '"name":"gpu-[0-9][^"]*"' | head -1 | cut -d'"' -f4)
  echo "first device: $device"

  step "dractl register (as the kubelet's plugin manager)"
  bundled dractl register --registry-dir "$work/plugins_registry"

  step "a claim for $device, allocated as the scheduler would"
  local created uid rv
  created=$(api -X POST -H "Content-Type: application/json" \
    "$server/apis/resource.k8s.io/v1/namespaces/default/resourceclaims" \
    -d '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"namespace":"default","name":"gpu-claim"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}}')
  uid=$(echo "$created" | sed -n 's/.*"uid":"\([^"]*\)".*/\1/p')
  rv=$(echo "$created" | sed -n 's/.*"resourceVersion":"\([^"]*\)".*/\1/p')
  api -X PUT -H "Content-Type: application/json" \
    "$server/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu-claim/status" \
    -d "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"namespace\":\"default\",\"name\":\"gpu-claim\",\"uid\":\"$uid\",\"resourceVersion\":\"$rv\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}},\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":\"$node\",\"device\":\"$device\"}]}}}}" >/dev/null
  echo "default/gpu-claim uid $uid"

  local endpoint="$work/plugins/gpu.example.com/dra.sock"
  step "dractl prepare (NodePrepareResources)"
  bundled dractl prepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid"

  step "the claim's CDI spec"
  ls -l "$work/cdi"
  cat "$work/cdi/k8s.gpu.example.com-gpu_$uid.yaml"

  step "the device status the driver wrote into the claim"
  api "$server/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu-claim" |
    sed -n 's/.*"status":\({.*}\)}$/\1/p' | pretty

  step "dractl health (NodeWatchResources, first snapshot)"
  bundled dractl health --endpoint "$endpoint"

  step "dractl unprepare (NodeUnprepareResources)"
  bundled dractl unprepare --endpoint "$endpoint" --claim "default/gpu-claim/$uid"
  echo "CDI dir now: $(ls -A "$work/cdi" | tr '\n' ' ')"

  step "SIGTERM"
  kill -TERM "$driver_pid"
  local rc=0
  wait "$driver_pid" || rc=$?
  driver_pid=""
  echo "driver exit status $rc; registry dir now: $(ls -A "$work/plugins_registry" | tr '\n' ' ')"
  echo "driver log:"; sed 's/^/  /' "$work/driver.log"
  [ "$rc" -eq 0 ]
}

case "$1" in
  bundle) [ $# -eq 3 ] || usage; bundle "$2" "$3" ;;
  run) [ $# -eq 2 ] || usage; run "$2" ;;
  *) usage ;;
esac
