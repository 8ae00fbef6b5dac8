#!/usr/bin/env bash
# What the example GPU driver's image is made of, beside dra-example-driver's:
# builds both images as the suite's node runs them (tests/e2e/build-images.sh:
# gpu-driver from the bench tree, as examples/Dockerfile ships it; the
# reference with the programs its chart runs) and prints two Markdown tables:
#
#   image       each file group of the gpu-driver image's layer, bytes as
#               stored and gzip -6 compressed (what a node pulls), and the
#               two OCI archives side by side
#   binary      where the driver binary's bytes come from: the linker map of
#               its link (re-run with -Wl,-Map), summed by the archive each
#               section came from (gRPC core with its xDS part apart,
#               gRPC++, protobuf, abseil, re2/upb/c-ares, the SDK's
#               libraries, the example's code) and by output section
#
#   bench/image_size.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

case "${1:-}" in
  -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
  "") ;;
  *) echo "image_size: unknown argument '$1'" >&2; exit 2 ;;
esac

. bench/tree.sh
dra_bench_tree image_size static
dra_bench_build gpu-driver
tests/e2e/build-k8s.sh dra-example-kubeletplugin dra-example-controller dra-example-webhook >&2
tests/e2e/build-images.sh --build-dir "$repo/$build" gpu-driver dra-example-driver >&2
image="$(ls -t "$repo/$build"/images/gpu-driver-*.tar | grep -v -- -full | head -1)"
reference="$(ls -t "${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}"/images/dra-example-driver-*.tar | head -1)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The driver's link once more, with a map of where each section came from.
link="$(cd "$build" && ninja -t commands examples/gpu/gpu-driver | tail -1)"
[[ "$link" == *"-o examples/gpu/gpu-driver "* ]] || { echo "image_size: cannot find the driver's link command" >&2; exit 1; }
(cd "$build" && eval "${link/-o examples\/gpu\/gpu-driver /-Wl,-Map=$work/gpu-driver.map -o $work/gpu-driver }")

python3 bench/image_size.py "$image" "$reference" "$work/gpu-driver.map" "$work/gpu-driver"
