#!/usr/bin/env bash
# Cuts the release of the version in CMakeLists.txt, in one command:
#
#   scripts/release.sh [--dry-run]
#
# 1. Checks: a clean work tree; CHANGELOG.md's newest entry is this version
#    and says "unreleased"; no tag vX.Y.Z yet; scripts/version.sh --check.
# 2. Builds a release tree, build-release/ (RelWithDebInfo; no tests, so no
#    crash points; no benchmarks): the SDK, dractl, the example drivers.
# 3. The ABI: checks it against the last release's (scripts/abi.sh check,
#    the promise of docs/compatibility.md) and writes this one's to
#    abi/dra-X.Y.Z.abi.gz, which the suite's `abi` test compares with from
#    then on.
# 4. The Debian packages (cpack -G DEB): build-release/packages/*.deb.
# 5. The API reference: build-release/api-docs/html.
# 6. Dates the CHANGELOG.md entry, commits it with the ABI file ("Release
#    X.Y.Z") and tags that commit vX.Y.Z (annotated, with the entry's text).
#
# --dry-run does 1 to 5 and leaves the repository as it was. Pushing the
# commit and the tag, and publishing the packages and the reference, are
# the maintainer's. Environment: DRA_JOBS (build jobs, default 2).
set -euo pipefail

dry_run=0
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=1 ;;
  *) echo "usage: scripts/release.sh [--dry-run]" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: scripts/release.sh [--dry-run]" >&2; exit 2; }
cd "$(dirname "$0")/.."
version="$(scripts/version.sh)"
tag="v$version"
jobs="${DRA_JOBS:-2}"
build=build-release
step() { echo "== release $version: $*"; }
fail() { echo "release: $*" >&2; exit 1; }

step "checks"
[ -z "$(git status --porcelain)" ] || fail "the work tree has changes; commit or stash them first"
! git rev-parse -q --verify "refs/tags/$tag" >/dev/null || fail "tag $tag exists: raise the version in CMakeLists.txt"
entry="$(grep -m1 -n '^## \[' CHANGELOG.md)"
case "$entry" in
  *"## [$version] - unreleased"*) ;;
  *) fail "CHANGELOG.md's newest entry is '${entry#*:}', not '## [$version] - unreleased'" ;;
esac
scripts/version.sh --check || fail "scripts/version.sh --check: the places above do not say $version"

step "build ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDRA_BUILD_TESTS=OFF \
  -DDRA_BUILD_BENCHMARKS=OFF -DDRA_BUILD_EXAMPLES=ON -DDRA_BUILD_TOOLS=ON >/dev/null
cmake --build "$build" -j"$jobs"

step "ABI"
scripts/abi.sh check "$build"
abi_file="abi/dra-$version.abi.gz"
mkdir -p abi
scripts/abi.sh dump "$build" "$build/dra-$version.abi"
gzip -9 -n -c "$build/dra-$version.abi" >"$build/dra-$version.abi.gz"

step "Debian packages"
rm -rf "$build/packages"
(cd "$build" && cpack -G DEB -B "$PWD/packages" >/dev/null)
ls "$build"/packages/*.deb

step "API reference"
scripts/api-docs.sh "$build/api-docs"

if [ "$dry_run" = 1 ]; then
  step "dry run: nothing committed or tagged (the ABI would go to $abi_file)"
  exit 0
fi

step "commit and tag $tag"
cp "$build/dra-$version.abi.gz" "$abi_file"
today="$(date -u +%Y-%m-%d)"
sed -i "0,/^## \[$version\] - unreleased$/s//## [$version] - $today/" CHANGELOG.md
# The entry's text, for the tag's message.
notes="$(awk -v v="## [$version]" 'index($0, v) == 1 {on = 1; next} /^## \[/ {on = 0} on' CHANGELOG.md)"
git add CHANGELOG.md "$abi_file"
git commit -q -m "Release $version" -m "The ABI of the public API is $abi_file (scripts/abi.sh); the suite's abi test compares with it from now on."
git tag -a "$tag" -m "dra-cpp $version" -m "$notes"
scripts/version.sh --check
step "done: commit $(git rev-parse --short HEAD), tag $tag; packages in $build/packages, the reference in $build/api-docs/html"
