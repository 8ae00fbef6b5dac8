#!/usr/bin/env bash
# What N nodes' drivers cost one control plane: the example GPU driver's pool
# published on N simulated nodes by dra-cpp's resourceslice::Publisher
# (bench/slice_publisher.cc --nodes N) and by the Go resourceslice controller
# (k8s.io/dynamic-resource-allocation v0.37.2; bench/gosdk/cmd/publisher
# --nodes N), one implementation at a time, each against a fresh control plane
# of the e2e suite (real etcd and kube-apiserver, tests/e2e/cluster.sh; the
# scheduler is stopped, nothing else runs).
#
#   bench/scale/scale.sh [--nodes 100,500,1000] [--impl go,cpp]
#                        [--partitions 0] [--gpus 8] [--steady 60]
#                        [--steady-at N] [--disruptions LIST] [--out DIR]
#                        [--binding-reconciler node|central --claims M]
#                        [--check] [--prebuilt BUILD_DIR] [--apiserver-profile]
#
# Every simulated node has a client of its own (its own connections, rate
# limiter and watches, each library's defaults: client-go 5 qps / burst 10,
# dra-cpp 10 / 64) and a publisher of its own, all in one process per
# implementation; the pool is what the example GPU driver publishes with
# --gpus mock GPUs and --gpu-partitions (bench/scale/gpu_slices.cc prints
# it), the same on every node. For each implementation and N, the steps:
#   start             the process starts every node's publisher (lists and
#                     watches, no slices yet)
#   first publish     every node's pool, at once: until the server holds every
#                     pool (the harness's watch) and every publisher is idle
#   steady            --steady seconds with nothing to do (--steady-at N: only
#                     at that N; the others hold still for 60 s)
#   disruptions, each until the server holds every pool and every publisher is
#   idle again (the Go controller's idle includes its delayed re-syncs):
#     apiserver-restart  kube-apiserver stopped and started again
#     etcd-compaction    etcd's history compacted past every client's version,
#                        then kube-apiserver restarted: every watch gets 410
#     wipe               every slice of the driver deleted at once (one DELETE
#                        collection: what a kubelet upgrade does to its node's)
#     rollout            the process stopped and started again: every driver
#                        restarts at once (the worst rollout) with its devices
#     change-one         one device's attribute changed on every node
# --binding-reconciler (dra-cpp only; the Go SDK has none): the simulator also
# runs the binding-condition reconciler, on every node (node: kThisNode, as a
# node plugin does) or once for the cluster (central: kAllNodes, as a
# Deployment does); a step "claim churn" then creates and deletes M
# ResourceClaims and counts the watch events kube-apiserver sends for them.
# Measured per step: requests on resourceslices by verb and per second, when
# each arrived (kube-apiserver's audit log, policy `scale.py policy`: it
# survives restarts, which reset /metrics; the harness's and kube-apiserver's
# own requests are left out; client-go's lists, streamed as watches with
# sendInitialEvents, count as "watchlist"), watch events and bytes sent
# (apiserver_watch_events_total and _sizes, read at the step's start and end
# only: the scrape is most of an idle kube-apiserver's work), the simulator's
# bytes on the wire (TLS included: /proc/PID/io rchar/wchar), the CPU seconds
# of kube-apiserver and etcd (/proc/PID/stat five times a second, across a
# restart; kube-apiserver's while it serves the step, until 3 s after the
# nodes' last request, and above its idle rate, which the steady step
# measures), kube-apiserver's page faults, CPU in the kernel, bytes its Go
# runtime allocated and GC cycles (go_memstats_alloc_bytes_total,
# go_gc_duration_seconds_count), its peak RSS (VmHWM), the TCP connections
# the machine accepted (/proc/net/snmp PassiveOpens: the nodes' connections,
# each a TLS handshake, and a few of the harness's), and how long the
# simulator's loop took to give every node its change (last Update returned).
# --apiserver-profile: also kube-apiserver's CPU profile through every step
# (its /debug/pprof/profile, in back-to-back 5-second pieces, into
# DIR/profiles/<impl>-<N>-<step>-<k>.pb.gz); `bench/scale/profile_report.py
# DIR/profiles` prints each step's CPU by kind of work, dra-cpp's nodes beside
# the Go controller's, and the functions that differ most.
#
# --check: exit 1 naming each target missed that does not depend on time:
# exactly ceil(devices/128) creates per pool on the first publish and after the
# wipe, one update per pool for the change, no other write, no request at all
# in steady state, at most one list per node in any step (the suite's CI runs
# `--impl cpp --nodes 20 --check`: ctest e2e_scale_small). --prebuilt: use the
# benchmark binaries of that build tree as they are instead of building the
# Release tree.
#
# Writes DIR/<impl>-<N>-p<partitions>[-binding-<mode>].json (default
# bench/scale/results) and prints the tables of docs/performance.md
# (bench/scale/report.py) for every result in DIR, with SVG plots in DIR.
# Builds what it needs (bench_slice_publisher and bench_gpu_slices in the
# Release tree, the Go publisher and the control plane with build-k8s.sh).
# Progress on stderr. About 4 minutes per implementation and N at the default
# --steady, plus the Go controller's delayed re-syncs.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
cmdline="bench/scale/scale.sh${*:+ $*}"

nodes=100,500,1000
impls=go,cpp
partitions=0
gpus=8
steady=60
steady_at=""
disruptions=apiserver-restart,etcd-compaction,wipe,rollout,change-one
out=bench/scale/results
binding=none
claims=0
check=()
prebuilt=""
link=shared
profile=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --impl) impls="$2"; shift 2 ;;
    --partitions) partitions="$2"; shift 2 ;;
    --gpus) gpus="$2"; shift 2 ;;
    --steady) steady="$2"; shift 2 ;;
    --steady-at) steady_at="$2"; shift 2 ;;
    --disruptions) disruptions="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --link) link="$2"; shift 2 ;;
    --binding-reconciler) binding="$2"; shift 2 ;;
    --claims) claims="$2"; shift 2 ;;
    --check) check=(--check); shift ;;
    --prebuilt) prebuilt="$2"; shift 2 ;;
    --apiserver-profile) profile=1; shift ;;
    -h|--help) sed -n '2,76p' "$0"; exit 0 ;;
    *) echo "scale: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
log() { echo "scale: $*" >&2; }

if [ -n "$prebuilt" ]; then
  build="$prebuilt"
else
  . bench/tree.sh
  dra_bench_tree scale "$link"
  dra_bench_build bench_slice_publisher bench_gpu_slices
fi
components=(etcd kube-apiserver kube-scheduler)
if [[ ",$impls," == *,go,* ]]; then components+=(gosdk-publisher); fi
bin_dir="$(tests/e2e/build-k8s.sh --print-dir "${components[@]}")"
build="$(cd "$build" && pwd)"

mkdir -p "$out"
work="$(mktemp -d /tmp/dra-scale-XXXXXX)"
cleanup() {
  DRA_K8S_BIN="$bin_dir" tests/e2e/cluster.sh stop "$work/cluster" >/dev/null 2>&1 || true
  log "logs in $work"
}
trap cleanup EXIT
"$build/bench/scale/bench_gpu_slices" --gpus "$gpus" --partitions "$partitions" > "$work/slices.json"
python3 bench/scale/scale.py policy > "$work/audit-policy.yaml"

for n in ${nodes//,/ }; do
  for impl in ${impls//,/ }; do
    case "$impl" in
      go) bin="$bin_dir/gosdk-publisher" ;;
      cpp) bin="$build/bench/bench_slice_publisher" ;;
      *) echo "scale: --impl is go and/or cpp, not '$impl'" >&2; exit 2 ;;
    esac
    extra=()
    if [ -n "$profile" ]; then mkdir -p "$out/profiles"; extra+=(--profile-dir "$out/profiles"); fi
    name="$impl-$n-p$partitions"
    if [ "$binding" != none ]; then
      [ "$impl" = cpp ] || { echo "scale: --binding-reconciler is for --impl cpp" >&2; exit 2; }
      extra+=(--binding-reconciler "$binding" --claims "$claims")
      name="$name-binding-$binding"
    fi
    hold=$steady
    if [ -n "$steady_at" ] && [ "$steady_at" != "$n" ]; then hold=60; fi
    log "=== $impl, $n nodes ==="
    audit="$work/audit-$name.log"
    export DRA_E2E_APISERVER_ARGS="--audit-policy-file=$work/audit-policy.yaml --audit-log-path=$audit --audit-log-format=json --audit-log-maxsize=100000${profile:+ --profiling=true}"
    DRA_K8S_BIN="$bin_dir" tests/e2e/cluster.sh start "$work/cluster" >&2
    read -r sched_pid _ < "$work/cluster/pids/kube-scheduler.pid"
    kill -TERM "$sched_pid" 2>/dev/null || true
    python3 bench/scale/scale.py run --cluster "$work/cluster" --work "$work" --repo "$repo" --k8s-bin "$bin_dir" \
      --impl "$impl" --bin "$bin" --nodes "$n" --slices "$work/slices.json" --steady "$hold" \
      --disruptions "$disruptions" --out "$out/$name.json" --cmdline "$cmdline" --audit-log "$audit" \
      "${extra[@]}" "${check[@]}"
    DRA_K8S_BIN="$bin_dir" tests/e2e/cluster.sh stop "$work/cluster" >&2
  done
done
python3 bench/scale/scale.py report "$out"/*.json --plots "$out"
