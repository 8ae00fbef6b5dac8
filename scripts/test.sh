#!/usr/bin/env bash
# Installs what is missing, builds dra-cpp and runs the whole test suite:
# unit, integration, packaging and e2e tests (the e2e ones against a real
# etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubelet,
# and a real node on containerd running the example drivers' images, all
# built from the Go module proxy on first use and cached in ~/.cache/dra-cpp:
# that first build takes 25-35 minutes). Then, with clang: the suite again
# under AddressSanitizer + UndefinedBehaviorSanitizer, but for the packaging
# and the e2e tests (labels e2e, e2e-node, e2e-runtime, not even built: the
# SDK's side of them runs under the sanitizers in the integration tests, the
# example drivers in the crash, load and example tests), in a build that also
# checks the locking annotations (-Wthread-safety) and holds the
# libFuzzer targets, each fuzzed for DRA_FUZZ_SECONDS (default 10); and the
# multi-threaded tests under ThreadSanitizer. DRA_SKIP_SANITIZERS=1 stops
# after the first pass. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
. scripts/go-env.sh
dra_use_go

jobs=${DRA_JOBS:-2}

echo "== build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDRA_LINE_TABLES_ONLY=ON >/dev/null
cmake --build build -j"$jobs"

# The sanitizer trees build in the background at the lowest CPU priority
# while the tests before them run: those tests wait on clusters and
# containers much of the time (the main tree's left 2 CPUs 54-56% idle).
background_build() {  # log_file command...
  local log=$1
  shift
  setsid nice -n 19 "$@" >"$log" 2>&1 &
  background_pid=$!
}
finish_background_build() {  # log_file
  if ! wait "$background_pid"; then
    tail -n 100 "$1"
    echo "build failed; its whole log: $1" >&2
    exit 1
  fi
  background_pid=
  tail -n 1 "$1"
}
background_pid=
trap '[ -z "$background_pid" ] || kill -- -"$background_pid" 2>/dev/null || true' EXIT

clang=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
if [ "${DRA_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== build (clang: thread-safety analysis, ASan + UBSan, fuzz targets), in the background"
  cmake -S . -B build-clang -G Ninja "${clang[@]}" -DCMAKE_BUILD_TYPE=Debug -DDRA_LINE_TABLES_ONLY=ON -DDRA_SANITIZE=ON \
    -DDRA_BUILD_FUZZERS=ON -DDRA_BUILD_BENCHMARKS=OFF -DDRA_BUILD_E2E_TESTS=OFF >/dev/null
  background_build build-clang/build.log cmake --build build-clang -j"$jobs"
fi

echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${DRA_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== waiting for the clang build"
  finish_background_build build-clang/build.log
  echo "== build (ThreadSanitizer), in the background"
  cmake -S . -B build-tsan -G Ninja "${clang[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDRA_LINE_TABLES_ONLY=ON -DDRA_THREAD_SANITIZER=ON \
    -DDRA_BUILD_EXAMPLES=ON -DDRA_BUILD_BENCHMARKS=OFF -DDRA_BUILD_E2E_TESTS=OFF >/dev/null
  background_build build-tsan/build.log cmake --build build-tsan -j"$jobs" --target tsan_tests
  echo "== tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-clang --output-on-failure -j"$jobs" -LE '^(packaging|e2e|e2e-node|e2e-runtime)$'
  echo "== fuzzing"
  DRA_FUZZ_BUILD_DIR=build-clang DRA_FUZZ_JOBS="$jobs" scripts/fuzz.sh "${DRA_FUZZ_SECONDS:-10}"

  echo "== waiting for the ThreadSanitizer build"
  finish_background_build build-tsan/build.log
  echo "== multi-threaded tests under ThreadSanitizer"
  TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan --output-on-failure -j"$jobs" -L tsan
fi
