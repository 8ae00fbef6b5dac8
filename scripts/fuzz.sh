#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/) for SECONDS_PER_TARGET seconds
# (default 30), DRA_FUZZ_JOBS at a time (default: one per CPU; each target is
# one process on one CPU), and prints a row per target: executions,
# coverage (libFuzzer's cov:), corpus reached and the result. Builds
# nothing: it takes the fuzz_* binaries of a tree configured with
# -DDRA_BUILD_FUZZERS=ON (clang), DRA_FUZZ_BUILD_DIR, default build-clang.
#
# Each target starts from a copy of its seed corpus (fuzz/corpus/<target>)
# in a temp dir, so the committed corpus never grows. A crash, a hang
# (-timeout) or running out of memory (-rss_limit_mb) fails the target: its
# input is kept in <build dir>/fuzz-artifacts/<target>/, the path is
# printed, and the script exits 1. See docs/reliability.md, "Fuzzing".
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
build=${DRA_FUZZ_BUILD_DIR:-build-clang}
if ! compgen -G "$build/fuzz/fuzz_*" >/dev/null; then
  echo "fuzz.sh: no fuzz_* binaries in $build/fuzz; configure with -DDRA_BUILD_FUZZERS=ON and build" >&2
  exit 2
fi
artifacts="$(cd "$build" && pwd)/fuzz-artifacts"

# The targets that write files (checkpoint, kubeconfig, the DRA service)
# fsync: on a tmpfs that costs nothing.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
work="$(mktemp -d "${TMPDIR:-/tmp}/dra-fuzz-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Inputs longer than this are not tried: a little above the largest useful
# document, so that the fuzzer's time goes into structure, not bulk.
max_len() {
  case "$1" in
    quantity) echo 64 ;;
    cpulist) echo 256 ;;
    gpu_config | dra_service) echo 1024 ;;
    exec_credential) echo 2048 ;;
    kubeconfig | checkpoint | k8s_protobuf) echo 4096 ;;
    *) echo 8192 ;;  # ResourceClaim, ResourceSlice, CDI spec
  esac
}

# fuzz_one <binary>: runs one target; its row goes to $work/<name>.row and
# the end of its log to $work/<name>.failed when it fails.
fuzz_one() {
  local binary="$1" name="${1##*/fuzz_}"
  local corpus="$work/$name" log="$work/$name.log" status=0 dict=()
  mkdir -p "$corpus" "$artifacts/$name"
  if [ -d "fuzz/corpus/$name" ]; then cp -R "fuzz/corpus/$name/." "$corpus/"; fi
  if [ -f "fuzz/$name.dict" ]; then dict=(-dict="fuzz/$name.dict"); fi
  "$binary" "$corpus" "${dict[@]}" -max_total_time="$seconds" -max_len="$(max_len "$name")" \
    -rss_limit_mb=2048 -timeout=60 -print_final_stats=1 -artifact_prefix="$artifacts/$name/" \
    >"$log" 2>&1 || status=$?
  local runs last cov corp result
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
  if [ "$status" -eq 0 ]; then
    result=ok
  else
    local crash
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="FAILED (exit $status): ${crash:-no input written}"
    { echo "---- $name: the end of its log"; tail -40 "$log"; } >"$work/$name.failed"
  fi
  printf '%-22s %12s %8s %18s  %s\n' "$name" "${runs:-?}" "${cov:-?}" "${corp:-?}" "$result" >"$work/$name.row"
}

parallel=${DRA_FUZZ_JOBS:-$(nproc)}
start=$SECONDS
targets=()
for binary in "$build"/fuzz/fuzz_*; do
  [ -x "$binary" ] || continue
  targets+=("$binary")
  fuzz_one "$binary" &
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
done
wait

failed=0
printf '%-22s %12s %8s %18s  %s\n' target runs cov corpus result
for binary in "${targets[@]}"; do
  name="${binary##*/fuzz_}"
  if [ -f "$work/$name.failed" ]; then
    failed=1
    cat "$work/$name.failed" >&2
  fi
  cat "$work/$name.row" 2>/dev/null || printf '%-22s  %s\n' "$name" "FAILED: no result (the script's run of it died)"
  [ -f "$work/$name.row" ] || failed=1
done
echo "fuzz.sh: ${seconds}s per target, $parallel at a time, $((SECONDS - start))s in all"
exit "$failed"
