#!/usr/bin/env bash
# The version matrix: the e2e flows that touch what differs between
# Kubernetes releases, run on a control plane and node of each supported
# release (tests/e2e/build-k8s.sh, cluster.sh with DRA_K8S_VERSION), then a
# table of the outcomes:
#
#   scripts/test-matrix.sh [--build-dir DIR] [VERSION...]
#
# VERSION: v1.35.4 v1.36.3 v1.37.2 v1.38.0-beta.0 (default: every release
# build-k8s.sh supports). DIR: a configured and built tree (default build/).
# Each release gets a cluster of its own in DIR/tests/e2e/matrix-<version>
# whose node runs the CRI stand-in, stopped after its flows, then one in
# DIR/tests/e2e/matrix-<version>-runtime whose node runs containerd with the
# example drivers' images for the flows marked "runtime" (the examples'
# charts and real containers); a missing release is built first (15-25
# minutes on 2 cores the first time). Needs what the e2e-node and e2e-runtime
# tests need (root or sudo; the runtime, images and helm that `ctest -L
# e2e-runtime` builds).
#
# An outcome is "pass", "FAIL", or "n/s" where the release does not serve what
# the flow checks (the flow is not run). Each flow's log is in
# DIR/tests/e2e/matrix-<version>/logs/flow-<n>.log. Exit status 1 if any
# flow failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build"
versions=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {print; next} {exit}' "$0"; exit 0 ;;
    v*) versions+=("$1"); shift ;;
    *) echo "test-matrix: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || mapfile -t versions < <("$root/tests/e2e/build-k8s.sh" --print-versions)
e2e="$build_dir/tests/e2e"
[ -x "$e2e/e2e_node" ] || { echo "test-matrix: $e2e/e2e_node is missing: build $build_dir first" >&2; exit 1; }

# Flow: "<name>|<binary>|<Catch2 test spec>|<first minor that serves it>|<node>",
# node "stand-in" or "runtime" (containerd); a spec has no ',' (Catch2 reads
# it as "or").
flows=(
  "registration, prepare and unprepare through the kubelet|e2e_node|a pod with a ResourceClaimTemplate runs*|35|stand-in"
  "kubelet restart: re-registration, slices restored, no double prepare|e2e_node|the kubelet restarted under a running pod*|35|stand-in"
  "a failed claim: the kubelet's event names it|e2e_node|a driver that fails one claim of a two-claim pod*|35|stand-in"
  "device health in the pod status|e2e_node|a device the driver reports unhealthy*|35|stand-in"
  "binding conditions: bind after the node's reconciler|e2e_node|a fabric-attached device*|35|stand-in"
  "device metadata through the CDI mount|e2e_node|device metadata reaches the container*|35|stand-in"
  "optional node operations (skipNodeOperations)|e2e_node|optional node operations*|37|stand-in"
  "publisher: publish, republish with 0 writes, growth, removal|e2e_publisher|*republish (0 writes)*|35|stand-in"
  "publisher: drift repaired|e2e_publisher|drift*|35|stand-in"
  "publisher: a field newer than the server, one error with its version|e2e_publisher|a field newer than the server*|35|stand-in"
  "publisher: every 1.37 device field stored intact|e2e_publisher|*capacity policies stored intact|37|stand-in"
  "publisher: counter compatibility groups stored intact|e2e_publisher|counter consumption with compatibility groups*|37|stand-in"
  "publisher: reconcile_pool (ReconcilePoolWithName)|e2e_publisher|reconcile_pool*|35|stand-in"
  "claim status under resourceclaims/driver authorization|e2e_claim_status|device status under granular authorization*|36|stand-in"
  "claim status under update-only RBAC (the reference's chart)|e2e_claim_status|device status under RBAC that grants update*|35|stand-in"
  "node allocatable resources in the server's shape (publisher)|e2e_publisher|node allocatable resources in the shape*|36|stand-in"
  "nodeAllocatableResources (the 1.37 shape; client)|e2e_client|nodeAllocatableResources*|37|stand-in"
  "the CPU example: CPUs of a socket by consumable capacity, counted as node cpu|e2e_cpu_driver|the CPU driver: the scheduler takes CPUs of a socket*|36|stand-in"
  "the GPU example's chart: its DaemonSet pod registers and publishes|e2e_runtime|helm install of the GPU example on the real node*|35|runtime"
  "GPU workloads in real containers: CDI env, device nodes, shared claims|e2e_runtime|GPU workloads in real containers*|35|runtime"
  "the CPU example's chart: NRI pins the claim's container|e2e_runtime|helm install of the CPU example on the real node*|37|runtime"
)

declare -A outcome times
t_all=$SECONDS
for v in "${versions[@]}"; do
  minor="$(echo "$v" | cut -d. -f2)"
  t0=$SECONDS
  for node in stand-in runtime; do
    dir="$e2e/matrix-$v"
    [ "$node" = stand-in ] || dir="$dir-runtime"
    mkdir -p "$dir/logs"
    echo "test-matrix: Kubernetes $v: cluster in $dir, its node on the $node" >&2
    runtime=stand-in
    [ "$node" = stand-in ] || runtime=containerd
    DRA_K8S_VERSION="$v" "$root/tests/e2e/cluster.sh" start "$dir" >"$dir/logs/start.log" 2>&1 &&
      DRA_E2E_RUNTIME="$runtime" "$root/tests/e2e/cluster.sh" node-start "$dir" >>"$dir/logs/start.log" 2>&1 ||
      { echo "test-matrix: $v: the cluster did not start ($dir/logs/start.log)" >&2; tail -5 "$dir/logs/start.log" >&2; }
    for i in "${!flows[@]}"; do
      IFS='|' read -r name binary spec since flow_node <<<"${flows[$i]}"
      [ "$flow_node" = "$node" ] || continue
      if [ "$minor" -lt "$since" ]; then outcome[$v,$i]="n/s"; continue; fi
      if DRA_E2E_KUBECONFIG="$dir/admin.kubeconfig" timeout 900 "$e2e/$binary" --warn NoTests "$spec" \
          >"$dir/logs/flow-$i.log" 2>&1; then
        outcome[$v,$i]="pass"
      else
        outcome[$v,$i]="FAIL"
      fi
      echo "test-matrix: $v: ${outcome[$v,$i]}: $name" >&2
    done
    "$root/tests/e2e/cluster.sh" stop "$dir" >>"$dir/logs/start.log" 2>&1 || true
  done
  echo "test-matrix: $v done in $((SECONDS - t0)) s" >&2
  times[$v]=$((SECONDS - t0))
done

failed=0
printf '\nVersion matrix, %s (%s s)\n\n' "$(date -u +%Y-%m-%d)" "$((SECONDS - t_all))"
printf '| %s |' "flow"; for v in "${versions[@]}"; do printf ' %s |' "$v"; done; printf '\n'
printf '|---|'; for _ in "${versions[@]}"; do printf -- '---|'; done; printf '\n'
printf '| %s |' "time (s)"; for v in "${versions[@]}"; do printf ' %s |' "${times[$v]}"; done; printf '\n'
for i in "${!flows[@]}"; do
  IFS='|' read -r name _ <<<"${flows[$i]}"
  printf '| %s |' "$name"
  for v in "${versions[@]}"; do
    printf ' %s |' "${outcome[$v,$i]}"
    [ "${outcome[$v,$i]}" != "FAIL" ] || failed=1
  done
  printf '\n'
done
exit $failed
