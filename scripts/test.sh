#!/usr/bin/env bash
# Installs what is missing, builds dra-cpp and runs the whole test suite:
# unit, integration, packaging and e2e tests (the e2e ones against a real
# etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubelet,
# built from the Go module proxy on first use and cached in ~/.cache/dra-cpp:
# that first build takes 20-30 minutes), then the unit and integration tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer (a tree without
# the e2e tests, which never run there). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
. scripts/go-env.sh
dra_use_go

jobs=${DRA_JOBS:-2}

echo "== build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"

echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${DRA_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== build (ASan + UBSan)"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DDRA_SANITIZE=ON \
    -DDRA_BUILD_BENCHMARKS=OFF -DDRA_BUILD_EXAMPLES=OFF -DDRA_BUILD_E2E_TESTS=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  echo "== tests under sanitizers"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "packaging|e2e"
fi
