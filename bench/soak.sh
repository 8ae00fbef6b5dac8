#!/usr/bin/env bash
# The soak: the load harness (tests/crash/load_harness.cc) for --duration per
# example driver instead of CI's 10,000 cycles: --callers concurrent kubelet
# callers (the kubelet peer's bench step, one gRPC connection) prepare and
# unprepare their own claims in a closed loop against the GPU and CPU
# example drivers with serialization off; the drivers' work dirs are on the
# real disk ($TMPDIR, else /tmp), so the checkpoint's and CDI files' fsyncs
# count. Prints the harness's Markdown table (cycles/s, prepare and unprepare
# p50/p99, the driver's RSS, open files and threads when the timed run starts
# and ends) and exits 1 if a call failed, RSS grew more than
# --max-rss-growth-kb (default 8192) or open files grew.
#
#   bench/soak.sh [--duration 1h] [--callers 16] [--drivers gpu,cpu] [--link static|shared] [HARNESS FLAGS...]
set -euo pipefail
cd "$(dirname "$0")/.."

duration=1h
callers=16
drivers=gpu,cpu
link=static
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --callers) callers="$2"; shift 2 ;;
    --drivers) drivers="$2"; shift 2 ;;
    --link) link="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) extra+=("$1"); shift ;;
  esac
done

. bench/tree.sh
dra_bench_tree soak "$link"
dra_bench_build load_harness gpu-driver cpu-driver
tests/e2e/build-k8s.sh kubeletpeer >&2
peer="$(tests/e2e/build-k8s.sh --print-dir kubeletpeer 2>/dev/null)/kubeletpeer"

exec "$build/tests/crash/load_harness" --drivers="$drivers" --callers="$callers" --duration="$duration" \
  --peer="$peer" "${extra[@]}"
