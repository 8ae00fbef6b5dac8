#!/bin/sh
# The release version has one source, project(dra VERSION ...) in
# CMakeLists.txt; scripts read it from here. What cannot (Helm charts,
# manifests, the Dockerfile's example, a test's constant, two READMEs'
# examples) repeats it, and
# --check verifies that each does, that CHANGELOG.md's newest entry is that
# version, and that a release tag on HEAD (vX.Y.Z) names it; it prints each
# mismatch as file:line and exits 1 if there is any.
#
#   scripts/version.sh            the version
#   scripts/version.sh --check    the check (ctest: version)
set -eu
cd "$(dirname "$0")/.."
version="$(sed -n 's/^project(dra VERSION \([0-9][0-9.]*\) .*/\1/p' CMakeLists.txt)"
if [ -z "$version" ]; then
  echo "CMakeLists.txt: no 'project(dra VERSION X.Y.Z ...)' line" >&2
  exit 1
fi
case "${1:-}" in
  "")
    echo "$version"
    exit 0
    ;;
  --check) ;;
  *)
    echo "usage: scripts/version.sh [--check]" >&2
    exit 2
    ;;
esac

failed=0
# expect FILE PATTERN: every line of FILE matching the extended regular
# expression PATTERN (whose first group is the version) names $version, and
# at least one does.
expect() {
  found=0
  while IFS= read -r hit; do
    found=1
    line="${hit%%:*}"
    got="$(printf '%s\n' "${hit#*:}" | sed -E "s|.*$2.*|\\1|")"
    if [ "$got" != "$version" ]; then
      echo "$1:$line: $got, not $version (CMakeLists.txt)"
      failed=1
    fi
  done <<EOF
$(grep -nE "$2" "$1" || true)
EOF
  if [ "$found" = 0 ]; then
    echo "$1: no line matches /$2/ (the version's place moved: update scripts/check-version.sh)"
    failed=1
  fi
}

image='registry\.example\.com/dra-cpp/[a-z]+-driver:([0-9][0-9.]*)'
for driver in gpu cpu; do
  chart="examples/$driver/deploy/helm/$driver-example-driver"
  expect "$chart/Chart.yaml" '^version: ([0-9][0-9.]*)$'
  expect "$chart/Chart.yaml" '^appVersion: "([0-9][0-9.]*)"$'
  expect "$chart/values.yaml" '^  tag: ([0-9][0-9.]*)$'
  expect "examples/$driver/deploy/daemonset.yaml" "$image"
done
expect examples/gpu/deploy/fabric-controller.yaml "$image"
expect examples/gpu/README.md '`image\.tag`.*`([0-9][0-9.]*)`'
expect tests/e2e/README.md "$image"
expect tests/e2e/README.md 'images/[a-z]+-driver-([0-9][0-9.]*)\.tar'
expect examples/Dockerfile "$image"
expect tests/e2e/runtime_node.h 'kImageTag\[\] = "([0-9][0-9.]*)"'
newest="$(sed -nE 's/^## \[([0-9][0-9.]*)\].*/\1/p' CHANGELOG.md | head -n 1)"
if [ "$newest" != "$version" ]; then
  echo "CHANGELOG.md: the newest entry is '${newest:-none}', not $version (CMakeLists.txt)"
  failed=1
fi

# A release tag on HEAD must be this version.
if git rev-parse --git-dir >/dev/null 2>&1; then
  for tag in $(git tag --points-at HEAD 'v[0-9]*'); do
    if [ "$tag" != "v$version" ]; then
      echo "git tag $tag on HEAD: the version is $version (CMakeLists.txt)"
      failed=1
    fi
  done
fi
exit "$failed"
