# Sourced by the bench scripts: the Release tree for a --link choice.
# shellcheck shell=bash

# dra_bench_tree NAME LINK: sets static_grpc and build (DRA_BENCH_BUILD_DIR
# wins) for LINK static (gRPC, protobuf and abseil from their static archives,
# gRPC without its TLS stack, as the example images ship them; tree
# build-bench) or shared (Debian's libraries; tree build-bench-shared); exits
# 2 naming NAME otherwise.
dra_bench_tree() {
  case "$2" in
    static) static_grpc=ON; build=${DRA_BENCH_BUILD_DIR:-build-bench} ;;
    shared) static_grpc=OFF; build=${DRA_BENCH_BUILD_DIR:-build-bench-shared} ;;
    *) echo "$1: --link is static or shared, not '$2'" >&2; exit 2 ;;
  esac
}

# dra_bench_build TARGET...: installs what is missing, configures the tree
# and builds the targets; output on stderr.
dra_bench_build() {
  scripts/install-deps.sh >&2
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDRA_BUILD_BENCHMARKS=ON -DDRA_BUILD_EXAMPLES=ON \
    -DDRA_STATIC_GRPC="$static_grpc" -DDRA_GRPC_UNSECURE="$static_grpc" >&2
  nice cmake --build "$build" --target "$@" -j"${DRA_JOBS:-2}" >&2
}
