#!/usr/bin/env bash
# The runtime matrix: the runtime flows (every test of e2e_runtime: the
# example drivers' charts and images, GPU workloads in real containers, CPU
# pinning through NRI, runtime and driver restarts, the reference's demos and
# chart) on a node of each container runtime, then a table of the outcomes:
#
#   scripts/test-runtimes.sh [--build-dir DIR] [RUNTIME...]
#
# RUNTIME: containerd crio (default both). DIR: a configured and built tree
# (default build/). Each runtime gets a cluster of its own in
# DIR/tests/e2e/runtimes-<runtime> (the default Kubernetes release, a node
# with DRA_E2E_RUNTIME=<runtime>, tests/e2e/cluster.sh), stopped after its
# flows. What the flows need is built first, cached as ctest's fixtures
# cache it (tests/e2e/build-k8s.sh: the control plane, the node, both
# runtimes, helm, dra-example-driver; build-images.sh: the images of DIR's
# drivers); CRI-O's first build takes about 3 minutes on 2 cores with the Go
# module cache warm. Needs root (or sudo), as the e2e-runtime tests, and
# Debian's conmon and libseccomp-dev for CRI-O (scripts/install-deps.sh).
#
# An outcome is "pass" or "FAIL"; each flow's log is in
# DIR/tests/e2e/runtimes-<runtime>/logs/flow-<n>.log. Exit status 1 if any
# flow failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build"
runtimes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {print; next} {exit}' "$0"; exit 0 ;;
    containerd|crio) runtimes+=("$1"); shift ;;
    *) echo "test-runtimes: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ ${#runtimes[@]} -gt 0 ] || runtimes=(containerd crio)
e2e="$build_dir/tests/e2e"
[ -x "$e2e/e2e_runtime" ] || { echo "test-runtimes: $e2e/e2e_runtime is missing: build $build_dir first" >&2; exit 1; }

t_build=$SECONDS
"$root/tests/e2e/build-k8s.sh" etcd kube-apiserver kube-scheduler kube-controller-manager kubelet cri helm \
  dra-example-kubeletplugin runtime runtime-crio >&2
"$root/tests/e2e/build-images.sh" --build-dir "$build_dir" pause busybox gpu-driver cpu-driver >&2
echo "test-runtimes: binaries and images ready in $((SECONDS - t_build)) s" >&2

mapfile -t flows < <("$e2e/e2e_runtime" --list-test-names-only | grep -v '^$')
[ ${#flows[@]} -gt 0 ] || { echo "test-runtimes: e2e_runtime lists no tests" >&2; exit 1; }

declare -A outcome times versions
for runtime in "${runtimes[@]}"; do
  t0=$SECONDS
  dir="$e2e/runtimes-$runtime"
  mkdir -p "$dir/logs"
  echo "test-runtimes: $runtime: cluster in $dir" >&2
  "$root/tests/e2e/cluster.sh" start "$dir" >"$dir/logs/start.log" 2>&1 &&
    DRA_E2E_RUNTIME="$runtime" "$root/tests/e2e/cluster.sh" node-start "$dir" >>"$dir/logs/start.log" 2>&1 ||
    { echo "test-runtimes: $runtime: the cluster did not start ($dir/logs/start.log)" >&2; tail -5 "$dir/logs/start.log" >&2; }
  # The log line node-start prints of the runtime: "<runtime> <version> on ...".
  versions[$runtime]="$(sed -n 's/^cluster: \(containerd\|CRI-O\) \([^ ]*\) on .*/\1 \2/p' "$dir/logs/start.log" | tail -1)"
  k8s_version="$(sed -n 's/^DRA_E2E_K8S_VERSION=//p' "$dir/cluster.env" 2>/dev/null)"
  for i in "${!flows[@]}"; do
    # Catch2 reads ',' in a test spec as "or": the name up to its first ','.
    spec="${flows[$i]%%,*}"
    [ "$spec" = "${flows[$i]}" ] || spec="$spec*"
    if DRA_E2E_KUBECONFIG="$dir/admin.kubeconfig" timeout 900 "$e2e/e2e_runtime" --warn NoTests "$spec" \
        >"$dir/logs/flow-$i.log" 2>&1; then
      outcome[$runtime,$i]="pass"
    else
      outcome[$runtime,$i]="FAIL"
    fi
    echo "test-runtimes: $runtime: ${outcome[$runtime,$i]}: ${flows[$i]}" >&2
  done
  "$root/tests/e2e/cluster.sh" stop "$dir" >>"$dir/logs/start.log" 2>&1 || true
  times[$runtime]=$((SECONDS - t0))
  echo "test-runtimes: $runtime done in ${times[$runtime]} s" >&2
done

failed=0
printf '\nRuntime matrix, %s, Kubernetes %s\n\n' "$(date -u +%Y-%m-%d)" "${k8s_version:-?}"
printf '| %s |' "flow (e2e_runtime)"; for r in "${runtimes[@]}"; do printf ' %s |' "${versions[$r]:-$r}"; done; printf '\n'
printf '|---|'; for _ in "${runtimes[@]}"; do printf -- '---|'; done; printf '\n'
printf '| %s |' "time (s)"; for r in "${runtimes[@]}"; do printf ' %s |' "${times[$r]}"; done; printf '\n'
for i in "${!flows[@]}"; do
  printf '| %s |' "${flows[$i]}"
  for r in "${runtimes[@]}"; do
    printf ' %s |' "${outcome[$r,$i]}"
    [ "${outcome[$r,$i]}" != "FAIL" ] || failed=1
  done
  printf '\n'
done
exit $failed
