#!/usr/bin/env bash
# Installs what is missing, builds dra-cpp, starts the minimal example driver
# with its sockets and CDI spec dir in a temp dir and drives it the way the
# kubelet does, with dractl: register, prepare (showing the CDI spec file the
# Helper wrote), health, unprepare. Cleans up after itself.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh >/dev/null
echo "== building (first run takes a few minutes)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${DRA_JOBS:-2}" --target minimal-driver dractl >/dev/null

dractl="$root/build/tools/dractl/dractl"
driver_bin="$root/build/examples/minimal/minimal-driver"
work=$(mktemp -d /tmp/dra-demo-XXXXXX)
driver_pid=
cleanup() {
  [ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/plugins_registry"
# One allocated claim of the minimal driver, as the scheduler would leave it.
claims="$root/examples/minimal/claims.json"
uid=$(sed -n 's/.*"uid": "\([^"]*\)".*/\1/p' "$claims")

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "start the minimal driver (sockets under $work, CDI specs in $work/cdi)"
"$driver_bin" --registrar-dir "$work/plugins_registry" --plugin-data-dir "$work/plugins/minimal.example.com" \
  --cdi-dir "$work/cdi" --claims "$claims" 2>"$work/driver.log" &
driver_pid=$!
for _ in $(seq 1 500); do
  [ -S "$work/plugins_registry/minimal.example.com-reg.sock" ] && break
  kill -0 "$driver_pid" 2>/dev/null || { cat "$work/driver.log"; exit 1; }
  sleep 0.01
done
ls -l "$work/plugins_registry" "$work/plugins/minimal.example.com"

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
echo "driver log:"; sed 's/^/  /' "$work/driver.log"
echo; echo "demo finished"
