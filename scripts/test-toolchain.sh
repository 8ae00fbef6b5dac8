#!/usr/bin/env bash
# Builds and tests dra-cpp with Debian 13 (trixie)'s compilers and libraries:
# GCC 14 and Clang 19 against trixie's gRPC, protobuf, abseil and Catch2 v3,
# in a Debian 13 root made with mmdebstrap from deb.debian.org:
#
#   scripts/test-toolchain.sh [--compiler gcc|clang|both] [--jobs N] [--keep-going]
#
# The root is made once (a few minutes) in $DRA_TOOLCHAIN_CACHE/debian13-root
# (default ~/.cache/dra-cpp) and made anew when the package list below
# changes. Each compiler gets a build tree in .../debian13-build/<compiler>,
# configured as the suite's (RelWithDebInfo, line tables only, -Werror) with
# neither the e2e tests nor the benchmarks; its `ctest -L "unit|integration"`
# runs there (the fake API server built with trixie's Go) but for
# integration_helper_cdi_fs, which needs a user namespace, and the kernel
# gives none to a chrooted process. The repository is
# mounted read-only at /src, in a mount namespace of its own that goes away
# with the script. --jobs: build and test jobs (default 2). --keep-going: a
# failed build goes on with what it can build (ninja -k 0), its tests run and
# so does the next compiler's build; without it the first failure stops.
# Prints a line per compiler and the root's versions of the toolchain, as
# the table in docs/compatibility.md ("Toolchain") takes them; exit status 1
# if a build or a test failed. Needs root (chroot, mount) and mmdebstrap.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
args=("$@")
compilers=(gcc clang)
jobs=2
keep_going=0
while [ $# -gt 0 ]; do
  case "$1" in
    --compiler)
      case "${2:-}" in
        gcc|clang) compilers=("$2") ;;
        both) compilers=(gcc clang) ;;
        *) echo "test-toolchain: --compiler takes gcc, clang or both, not '${2:-}'" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --jobs) jobs="${2:-}"; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {print; next} {exit}' "$0"; exit 0 ;;
    *) echo "test-toolchain: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$jobs" in ''|*[!0-9]*|0) echo "test-toolchain: --jobs takes a positive number, not '$jobs'" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "test-toolchain: needs root (mmdebstrap, chroot, mount)" >&2; exit 1; }

# The mounts below live in a mount namespace of this script's own, so that
# none is left behind however it ends.
if [ -z "${DRA_TOOLCHAIN_UNSHARED:-}" ]; then
  DRA_TOOLCHAIN_UNSHARED=1 exec unshare --mount --propagation private "$0" "${args[@]}"
fi

# What scripts/install-deps.sh installs to build and run the unit and
# integration tests, in trixie's names: g++ is GCC 14, clang is Clang 19,
# catch2 is Catch2 v3. golang-go (1.24) builds the fake API server; git: the
# tests that list the tracked files (docs_excerpts) and read the tags
# (version); doxygen: api_reference.
packages=(
  build-essential cmake ninja-build pkg-config g++ clang
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev nlohmann-json3-dev libyaml-cpp-dev catch2
  libcurl4-openssl-dev libssl-dev zlib1g-dev
  python3 openssl curl ca-certificates git golang-go doxygen
)

cache="${DRA_TOOLCHAIN_CACHE:-$HOME/.cache/dra-cpp}"
root="$cache/debian13-root"
builds="$cache/debian13-build"
stamp="$root/.dra-packages"
want="$(printf '%s\n' "${packages[@]}" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if findmnt -rn -o TARGET | grep -q "^$root/"; then
    echo "test-toolchain: something is mounted under $root; unmount it before the root is made anew" >&2
    exit 1
  fi
  echo "test-toolchain: making the Debian 13 root in $root" >&2
  t0=$SECONDS
  rm -rf "$root" "$root.new"
  mkdir -p "$cache"
  mmdebstrap --mode=root --variant=apt --include="$(IFS=,; echo "${packages[*]}")" \
    trixie "$root.new" http://deb.debian.org/debian ||
    { echo "test-toolchain: mmdebstrap failed to make the Debian 13 root" >&2; exit 1; }
  echo "$want" >"$root.new/.dra-packages"
  mv "$root.new" "$root"
  # The build trees were configured against the old root.
  rm -rf "$builds"
  echo "test-toolchain: root made in $((SECONDS - t0)) s" >&2
fi

# The worktree's .git may point into another checkout's git directory: that
# goes in too, read-only, at its own path.
git_common="$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
mount --bind "$root" "$root"
trap 'umount -R "$root"' EXIT
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount --bind /sys "$root/sys"
# /tmp on disk, as on the host: the checkpoint's group-commit test needs its
# fdatasync to take long enough for commits to overlap, which they did not
# on a tmpfs here (128 commits, 128 writes).
rm -rf "$builds/tmp"
mkdir -p "$root/src" "$root/build" "$builds/tmp" && chmod 1777 "$builds/tmp"
mount --bind "$builds/tmp" "$root/tmp"
mount --bind -o ro "$repo" "$root/src"
mount --bind "$builds" "$root/build"
case "$git_common" in
  "$repo"/*|"") ;;
  *) mkdir -p "$root$git_common"; mount --bind -o ro "$git_common" "$root$git_common" ;;
esac

in_root() {
  chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM=dumb "$@"
}

versions="$(in_root sh -c '
  v() { dpkg-query -W -f="\${Version}" "$1" | sed "s/-[^-]*$//; s/^[0-9]*://"; }
  echo "gcc $(v gcc-14), clang $(v clang-19), gRPC $(v libgrpc++-dev), protobuf $(v libprotobuf-dev)," \
    "abseil $(v libabsl-dev), Catch2 $(v catch2), cmake $(v cmake)"')"
echo "test-toolchain: Debian $(cat "$root/etc/debian_version"): $versions" >&2

# Tests left out ('|' between them): the kernel refuses what they need in a
# chroot (above).
excluded=integration_helper_cdi_fs

declare -A summary
ninja_args=()
[ $keep_going = 0 ] || ninja_args=(-- -k 0)
failed=0
for c in "${compilers[@]}"; do
  case "$c" in
    gcc) cc=gcc cxx=g++ ;;
    clang) cc=clang cxx=clang++ ;;
  esac
  log="$builds/$c.log"
  t0=$SECONDS
  build=ok
  echo "test-toolchain: $c: building in $builds/$c (log: $log)" >&2
  if ! in_root env CC="$cc" CXX="$cxx" cmake -S /src -B "/build/$c" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DDRA_LINE_TABLES_ONLY=ON -DDRA_BUILD_E2E_TESTS=OFF -DDRA_BUILD_BENCHMARKS=OFF >"$log" 2>&1; then
    build="failed (configure)"
  elif ! in_root cmake --build "/build/$c" -j "$jobs" "${ninja_args[@]}" >>"$log" 2>&1; then
    build=failed
  fi
  build_s=$((SECONDS - t0))
  tests="not run"
  test_s=0
  if [ "$build" = ok ] || { [ $keep_going = 1 ] && [ "$build" = failed ]; }; then
    t0=$SECONDS
    in_root ctest --test-dir "/build/$c" -L "unit|integration" -E "^($excluded)\$" -j "$jobs" --output-on-failure \
      >"$builds/$c-test.log" 2>&1 || failed=1
    test_s=$((SECONDS - t0))
    tests="$(sed -n 's/^[0-9]*% tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\)$/\1 \2/p' \
      "$builds/$c-test.log" | awk '{print $2 - $1 "/" $2 " passed"}')"
    tests="${tests:-no result (see $builds/$c-test.log)} in $test_s s, $excluded left out"
    sed -n '/^The following tests FAILED:/,$ s/^\s*[0-9]* - /  failed: /p' "$builds/$c-test.log" >&2
  fi
  [ "$build" = ok ] || { failed=1; tail -n 30 "$log" >&2; }
  summary[$c]="$c: build $build in $build_s s; tests $tests"
  echo "test-toolchain: ${summary[$c]}" >&2
  if [ "$build" != ok ] && [ $keep_going = 0 ]; then break; fi
done

echo "== Debian $(cat "$root/etc/debian_version") toolchain: $versions"
for c in "${compilers[@]}"; do
  [ -z "${summary[$c]:-}" ] || echo "== ${summary[$c]}"
done
exit $failed
