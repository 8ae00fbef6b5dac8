#!/usr/bin/env bash
# The example GPU driver (examples/gpu, 8 mock GPUs) on the suite's real
# control plane and node, started in a work dir on the real disk (not tmpfs:
# the checkpoint's and CDI files' fsyncs count). Prints one Markdown table on
# stdout; progress on stderr.
#
#   bench/gpu_driver.sh [--starts 10] [--pods 5] [--link static|shared]
#
# Rows:
#   start-to-registered  the kubelet peer (tests/e2e/kubeletpeer: the kubelet's
#                        plugin manager, its reconciler every 1 ms instead of
#                        the kubelet's 1 s) starts the driver and times from
#                        just before the exec until the kubelet's DRA handler
#                        accepted the registration. Median of --starts starts;
#                        the driver's slices were deleted before each start.
#   start-to-published   the same starts, until the driver logged that it had
#                        created its ResourceSlice in the real API server
#                        (registered time + the gap between the two log lines).
#   idle RSS             VmRSS 2 s after registration.
#   prepare, 1 and 8 GPUs  on the real node: a pod with one claim for 1 (8)
#                        GPUs, created --pods times each; the kubelet's own
#                        metrics, mean per pod: dra_operations_duration_seconds
#                        of PrepareResources (the kubelet's whole DRA step of
#                        the pod start: claim GET, the gRPC call, its
#                        bookkeeping) and dra_grpc_operations_duration_seconds
#                        of NodePrepareResources (the driver's call alone), and
#                        from pod creation to Running as the API shows it.
#   loaded RSS           VmRSS and VmHWM (peak) of the node's driver after the pods.
# The reference row is the Go dra-example-driver as the issue measured it
# (8 mock GPUs, started by the kubelet peer on this kind of machine): not
# measured in this run.
#
# --link: how gpu-driver links gRPC, protobuf and abseil: static (default,
# DRA_STATIC_GRPC=ON, the Dockerfile's way; tree build-bench) or shared
# (Debian's libraries; tree build-bench-shared).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

starts=10
pods=5
link=static
while [ $# -gt 0 ]; do
  case "$1" in
    --starts) starts="$2"; shift 2 ;;
    --pods) pods="$2"; shift 2 ;;
    --link) link="$2"; shift 2 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
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
log "built in $((SECONDS - t)) s"

work="$(mktemp -d "${DRA_BENCH_WORK_PARENT:-/var/tmp}/dra-gpu-bench-XXXXXX")"
cleanup() {
  tests/e2e/cluster.sh stop "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
log "cluster and node in $work ($(df -T "$work" | awk 'NR == 2 {print $2}'))"
tests/e2e/cluster.sh start "$work/cluster" >&2
tests/e2e/cluster.sh node-start "$work/cluster" >&2

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/gpu_driver.py --cluster "$work/cluster" --work "$work" --driver "$repo/$build/examples/gpu/gpu-driver" \
  --peer "$peer" --starts "$starts" --pods "$pods" --link "$link" --load-before "$load_before"
