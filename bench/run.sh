#!/usr/bin/env bash
# Builds bench_prepare in a Release tree (build-bench) and runs it; prints one
# Markdown table on stdout. Arguments go to bench_prepare (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."

build=${DRA_BENCH_BUILD_DIR:-build-bench}
scripts/install-deps.sh >&2
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDRA_BUILD_BENCHMARKS=ON >&2
cmake --build "$build" --target bench_prepare -j"${DRA_JOBS:-2}" >&2
exec "$build/bench/bench_prepare" "$@"
