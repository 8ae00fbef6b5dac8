#!/usr/bin/env bash
# Builds bench_prepare and runs it; prints one Markdown table on stdout.
# Arguments go to bench_prepare (e.g. --calls 20000; --help lists them).
# DRA_BENCH_BUILD_DIR picks the build directory (default: build); it is
# configured as Release only when it does not exist yet.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${DRA_BENCH_BUILD_DIR:-build}
jobs=${DRA_JOBS:-2}

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
else
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
  case "$type" in
    Release|RelWithDebInfo) ;;
    *) echo "warning: $build is a '${type:-no type}' build; numbers from it are not representative." \
            "Use DRA_BENCH_BUILD_DIR=build-bench for a Release build." >&2 ;;
  esac
  if ! grep -q '^DRA_BUILD_BENCHMARKS:BOOL=ON' "$build/CMakeCache.txt"; then
    cmake "$build" -DDRA_BUILD_BENCHMARKS=ON >&2
  fi
fi
cmake --build "$build" --target bench_prepare -j"$jobs" >&2

exec "$build/bench/bench_prepare" "$@"
