#!/usr/bin/env bash
# Upgrade and downgrade between dra-cpp releases with pods running: the GPU
# example of a previous release, built from its commit by that release's own
# scripts, is installed from that release's chart on the suite's containerd
# node, upgraded to this tree's image and chart by `helm upgrade`, then
# rolled back by `helm rollback`; every claim is kept both ways (the e2e test
# "upgrade from the previous release and back", tests/e2e/upgrade_e2e_test.cc).
#
#   scripts/test-upgrade.sh [--build-dir DIR] [VERSION]
#
# VERSION: the previous release (default 0.1.0), found as the tag v<VERSION>
# or else the commit "Release <VERSION>". Its tree and build are cached in
# ${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}/releases/<VERSION> (the first time:
# about 10 minutes on 2 cores for its GPU driver, then its image). DIR: this
# tree's configured and built build dir (default build/). A release matrix:
# not part of scripts/test.sh, whose CI budget it would exceed. Needs what
# the e2e-runtime tests need (root or sudo).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build"
version=0.1.0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {print; next} {exit}' "$0"; exit 0 ;;
    [0-9]*) version="$1"; shift ;;
    *) echo "test-upgrade: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
log() { echo "test-upgrade: $*" >&2; }

commit="$(git -C "$root" rev-parse -q --verify "v$version^{commit}" ||
  git -C "$root" log --format=%H -1 --grep="^Release $version\$")"
[ -n "$commit" ] || { log "no tag v$version and no commit \"Release $version\""; exit 1; }
release="${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}/releases/$version"
if [ "$(cat "$release/.commit" 2>/dev/null)" != "$commit" ]; then
  log "release $version is commit $commit: its tree in $release"
  rm -rf "$release"
  mkdir -p "$release"
  git -C "$root" archive "$commit" | tar -x -C "$release"
  echo "$commit" > "$release/.commit"
fi
if [ ! -x "$release/build/examples/gpu/gpu-driver" ]; then
  log "building its GPU driver"
  cmake -S "$release" -B "$release/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDRA_BUILD_TESTS=OFF >/dev/null
  cmake --build "$release/build" -j"$(nproc)" --target gpu-driver
fi
log "its image, by its own build-images.sh"
"$release/tests/e2e/build-images.sh" --build-dir "$release/build" gpu-driver

cmake -S "$root" -B "$build_dir" -DDRA_E2E_PREVIOUS_RELEASE="$release" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -R "^e2e_upgrade:"
