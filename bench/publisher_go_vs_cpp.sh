#!/usr/bin/env bash
# The same 10,000 devices published on one node by the Go resourceslice
# controller (k8s.io/dynamic-resource-allocation/resourceslice v0.37.2,
# StartController; bench/gosdk/cmd/publisher) and by dra-cpp's
# dra::resourceslice::Publisher (bench/slice_publisher.cc), one after the
# other, against the e2e suite's real kube-apiserver (tests/e2e/cluster.sh).
# Prints one Markdown table on stdout: metric | Go controller | dra-cpp |
# ratio | target | result, then the load average and the command line.
#
#   bench/publisher_go_vs_cpp.sh [--devices 10000] [--qps Q --burst B]
#                                [--settle 7] [--link static|shared] [--keep]
#
# Both publishers are processes driven alike through commands on stdin
# (publish, change K, idle, quit; see the header of either). One pool local to
# a Node the script creates, in slices of at most 128 devices (dra-cpp:
# SplitIntoSlices; Go: the same cut in its DriverResources), so both write
# ceil(10000/128) = 79 slices. The same node and driver for both; all the
# node's slices are deleted before each publisher starts. Steps, each until the
# publisher has been idle for 0.5 s (for Go this includes the controller's
# delayed re-syncs: SyncDelay, 30 s, after every informer event and
# MutationCacheTTL, 1 min, after creates), the next starting --settle s later:
#   first publish     from the process start: requests by verb, bytes, time to
#                     converge (from Update), CPU, peak RSS
#   identical republish, one device changed, 100 devices changed (every 100th)
#   wipe              an admin deletes the node's slices with one DELETE
#                     collection (fieldSelector spec.nodeName=<node>), as the
#                     kubelet does when it starts: writes and time until the
#                     server holds every slice again
# Measured how:
#   requests   kube-apiserver's own /metrics, apiserver_request_total on
#              resourceslices by verb before and after each step (admin client
#              certificate); a watch counts when it opens
#              (apiserver_longrunning_requests); the harness's own watch is
#              open throughout and adds nothing; the kube-scheduler is stopped
#              once the cluster is up (its watch renewals would count);
#              kube-apiserver's own Node-authorizer informer renews its watch
#              every 5 to 10 min, which a row shows as a watch that ended; a
#              DELETE of the collection (scope "cluster") is the harness's
#              wipe, not counted
#   bytes      each publisher talks to the API server through its own counting
#              TCP proxy (the kubeconfig's server points at it; TLS passes
#              through unmodified, the serving certificate is for 127.0.0.1):
#              TCP payload each direction, TLS included
#   converge   the harness's watch on the node's slices: when the server last
#              became equal to the desired state (every slice, every device)
#   CPU, RSS   utime+stime from /proc/PID/stat; VmHWM from /proc/PID/status
#   where the time goes (rows without a target): from Update (the wipe: the
#              DELETE) to the first slice created and from the first to the
#              last, from the harness's watch; kube-apiserver's mean time per
#              create/update (apiserver_request_duration_seconds)
# Each client as it ships: client-go speaks protobuf to kube-apiserver for
# ResourceSlices and its informer's watch-list stream is gzip-compressed;
# dra-cpp speaks protobuf for ResourceSlices too, and its watch carries
# metadata only (PartialObjectMetadata).
# Targets (dra-cpp): exactly 79 creates on the first publish, 0 writes on the
# identical republish, 1 write for one device, restored after the wipe in at
# most 0.1x the Go controller's time, CPU and bytes at most Go's.
#
# --qps/--burst: the client rate limit of both (a negative qps: none). Default:
# each library's own (client-go 5/10, dra-cpp 10/64). --keep: keep the work
# dir (publisher logs, results.json with per-connection bytes and the slice
# event timeline of every step, the cluster's logs).
#
# Builds what it needs: bench_slice_publisher in the Release tree of --link (or
# DRA_BENCH_BUILD_DIR), the Go publisher and the control plane with
# tests/e2e/build-k8s.sh (cached in ~/.cache/dra-cpp). Starts its own cluster
# in a temp dir and stops it on exit. About 6 minutes with cached builds, most
# of it the Go controller's delayed syncs. Progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
cmdline="${DRA_BENCH_BUILD_DIR:+DRA_BENCH_BUILD_DIR=$DRA_BENCH_BUILD_DIR }bench/publisher_go_vs_cpp.sh${*:+ $*}"

devices=10000
qps=""
burst=0
settle=7
link=static
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --devices) devices="$2"; shift 2 ;;
    --qps) qps="$2"; shift 2 ;;
    --burst) burst="$2"; shift 2 ;;
    --settle) settle="$2"; shift 2 ;;
    --link) link="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,67p' "$0"; exit 0 ;;
    *) echo "publisher_go_vs_cpp: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [ -n "$qps" ] && [ "$burst" = 0 ] && [[ "$qps" != -* ]]; then
  echo "publisher_go_vs_cpp: --qps needs --burst" >&2; exit 2
fi

. bench/tree.sh
dra_bench_tree publisher_go_vs_cpp "$link"
log() { echo "publisher_go_vs_cpp: $*" >&2; }

t=$SECONDS
dra_bench_build bench_slice_publisher
bin_dir="$(tests/e2e/build-k8s.sh --print-dir etcd kube-apiserver kube-scheduler gosdk-publisher)"
log "built in $((SECONDS - t)) s"

work="$(mktemp -d /tmp/dra-publisher-bench-XXXXXX)"
cleanup() {
  local status=$?
  DRA_K8S_BIN="$bin_dir" tests/e2e/cluster.sh stop "$work/cluster" >/dev/null 2>&1 || true
  if [ $status -ne 0 ]; then
    log "failed; logs kept in $work"
  elif [ "$keep" = 1 ]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
log "starting a control plane in $work/cluster"
DRA_K8S_BIN="$bin_dir" tests/e2e/cluster.sh start "$work/cluster" >&2
# Nothing here needs a scheduler, and its informer renews its ResourceSlice
# watch every 5 to 10 minutes, which would count as a request of whichever
# publisher runs then: stop it (cluster.sh stop copes with it gone).
read -r sched_pid _ < "$work/cluster/pids/kube-scheduler.pid"
if tr '\0' ' ' < "/proc/$sched_pid/cmdline" 2>/dev/null | grep -q kube-scheduler; then
  kill -TERM "$sched_pid"
  for _ in $(seq 1 100); do [ -d "/proc/$sched_pid" ] || break; sleep 0.1; done
  log "stopped kube-scheduler (pid $sched_pid): nothing here needs it"
fi

extra=()
if [ -n "$qps" ]; then extra+=(--qps "$qps" --burst "$burst"); fi
python3 bench/publisher_go_vs_cpp.py run --cluster "$work/cluster" --work "$work" \
  --go "$bin_dir/gosdk-publisher" --cpp "$repo/$build/bench/bench_slice_publisher" \
  --devices "$devices" --settle "$settle" --cmdline "$cmdline" --load-before "$load_before" "${extra[@]}"
