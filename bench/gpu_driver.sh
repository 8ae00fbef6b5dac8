#!/usr/bin/env bash
# The example GPU driver (examples/gpu, 8 mock GPUs) as its image ships it
# (the image's binary and environment, its libraries by LD_LIBRARY_PATH into
# the unpacked image; gRPC linked as --link says) beside the Go reference,
# dra-example-driver's kubelet plugin (build-k8s.sh dra-example-kubeletplugin,
# 8 mock GPUs), on the suite's real control plane and node, one driver at a
# time, the two alternated (start by start, round by round), in a work dir on
# the real disk (not tmpfs: the checkpoint's and CDI files' fsyncs count). Both
# take the same flags (the example keeps the reference's names). Prints one
# Markdown table on stdout; progress on stderr.
#
#   bench/gpu_driver.sh [--starts 10] [--pods 5] [--rounds 1] [--no-reference]
#                       [--link static|shared] [--timing]
#
# Rows:
#   start to registered  the kubelet peer (tests/e2e/kubeletpeer: the kubelet's
#                        plugin manager, its reconciler every 1 ms instead of
#                        the kubelet's 1 s) starts the driver and times from
#                        just before the exec until the kubelet's DRA handler
#                        accepted the registration. Median of --starts starts;
#                        the driver's slices were deleted before each start.
#   start to slice created  gpu-driver only: the same starts, until it logged
#                        that it had created its ResourceSlice in the real API
#                        server (registered time + the gap between the two log
#                        lines); the reference logs no such line.
#   idle RSS             VmRSS 2 s after registration, and the threads.
#   prepare, 1 and 8 GPUs  on the real node (the kubelet's plugin registration
#                        seen in its log at -v 3): a pod with one claim for 1
#                        (8) GPUs, created --pods times each per round; the
#                        kubelet's own metrics per pod:
#                        dra_operations_duration_seconds of PrepareResources
#                        (the kubelet's whole DRA step of the pod start: claim
#                        GET, the gRPC call, its bookkeeping) and
#                        dra_grpc_operations_duration_seconds of
#                        NodePrepareResources (the driver's call alone), median
#                        and p99 (nearest rank: below 100 pods, the largest),
#                        and from pod creation to Running as the API shows it.
#                        The kubelet's successful attempt only: a pod whose
#                        first attempt failed before the driver was called
#                        (the node authorizer did not know the pod yet) is
#                        counted as retried and left out of created-to-Running.
#   loaded RSS           VmRSS and VmHWM (peak) of the node's driver after the pods.
#   image                the OCI archives: gpu-driver's as build-images.sh
#                        makes it from this tree, the reference's with the
#                        three programs its chart runs (as its own image
#                        has them; gpu-driver's answers to all three names).
#
# --timing: gpu-driver's pods run at -v 4, where the SDK logs each
# NodePrepareResources call's times ("Call timing": the claims' fetch, the wait
# for the serializer, the checkpoint's commits, the driver); a second table
# shows them for the 5 calls the kubelet timed largest and the median one,
# beside the kubelet's time for each (the rest: gRPC and the threads between).
# Its log lines cost time too: take the main table from a run without it.
# --link: how gpu-driver links gRPC, protobuf and abseil: static (default,
# DRA_STATIC_GRPC=ON and DRA_GRPC_UNSECURE=ON, the Dockerfile's way; tree
# build-bench) or shared (Debian's libraries; tree build-bench-shared).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

starts=10
pods=5
rounds=1
reference=1
link=static
timing=()
while [ $# -gt 0 ]; do
  case "$1" in
    --starts) starts="$2"; shift 2 ;;
    --pods) pods="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --no-reference) reference=0; shift ;;
    --link) link="$2"; shift 2 ;;
    --timing) timing=(--timing); shift ;;
    -h|--help) sed -n '2,56p' "$0"; exit 0 ;;
    *) echo "gpu_driver: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
. bench/tree.sh
dra_bench_tree gpu_driver "$link"
log() { echo "gpu_driver: $*" >&2; }

t=$SECONDS
dra_bench_build gpu-driver
tests/e2e/build-k8s.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubelet cri kubeletpeer >&2
peer="$(tests/e2e/build-k8s.sh --print-dir kubeletpeer 2>/dev/null)/kubeletpeer"
tests/e2e/build-images.sh --build-dir "$repo/$build" gpu-driver >&2
extra=(--image "$(ls -t "$repo/$build"/images/gpu-driver-*.tar | grep -v -- -full | head -1)")
if [ "$reference" = 1 ]; then
  tests/e2e/build-k8s.sh dra-example-kubeletplugin dra-example-controller dra-example-webhook >&2
  extra+=(--reference "$(tests/e2e/build-k8s.sh --print-dir dra-example-kubeletplugin 2>/dev/null)/dra-example-kubeletplugin")
  tests/e2e/build-images.sh dra-example-driver >&2
  extra+=(--reference-image "$(ls -t "${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}"/images/dra-example-driver-*.tar | head -1)")
fi
log "built in $((SECONDS - t)) s"

work="$(mktemp -d "${DRA_BENCH_WORK_PARENT:-/var/tmp}/dra-gpu-bench-XXXXXX")"
cleanup() {
  local status=$?
  tests/e2e/cluster.sh stop "$work/cluster" >/dev/null 2>&1 || true
  if [ $status -eq 0 ]; then rm -rf "$work"; else log "failed; logs kept in $work"; fi
}
trap cleanup EXIT
log "cluster and node in $work ($(df -T "$work" | awk 'NR == 2 {print $2}'))"
tests/e2e/cluster.sh start "$work/cluster" >&2
DRA_E2E_KUBELET_V=3 tests/e2e/cluster.sh node-start "$work/cluster" >&2

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/gpu_driver.py --cluster "$work/cluster" --work "$work" --driver "$repo/$build/examples/gpu/gpu-driver" \
  --peer "$peer" --starts "$starts" --pods "$pods" --rounds "$rounds" --link "$link" --load-before "$load_before" \
  "${extra[@]}" "${timing[@]}"
