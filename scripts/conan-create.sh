#!/usr/bin/env bash
# Builds dra-cpp as a Conan 2 package (packaging/conan) against Debian 12's
# libraries and tools, which the debian12 profile takes from the system, then
# builds and runs its test_package:
#
#   scripts/conan-create.sh [--only-if-installed]
#
# Conan (pinned below) is installed with pip into a virtual environment in
# $DRA_CONAN_CACHE/conan-venv, and Conan's home (its package cache, settings
# and remotes) is $DRA_CONAN_CACHE/conan-home, not ~/.conan2; DRA_CONAN_CACHE
# defaults to ~/.cache/dra-cpp. That home has no remote: nothing is
# downloaded but Conan itself. The SDK is built again only when its sources
# changed since the last run; otherwise only the test_package is. DRA_JOBS
# (default 2): parallel compile jobs. --only-if-installed: exit 77 (ctest's
# "skipped") instead of installing Conan when it is not there yet.
set -euo pipefail

conan_version=2.34.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
only_if_installed=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only-if-installed) only_if_installed=1; shift ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {print; next} {exit}' "$0"; exit 0 ;;
    *) echo "conan-create: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

cache="${DRA_CONAN_CACHE:-$HOME/.cache/dra-cpp}"
venv="$cache/conan-venv"
conan="$venv/bin/conan"
export CONAN_HOME="$cache/conan-home"
start=$SECONDS

if ! "$conan" --version 2>/dev/null | grep -qx "Conan version $conan_version"; then
  if [ "$only_if_installed" = 1 ]; then
    echo "conan-create: Conan $conan_version is not installed in $venv: skipped (run scripts/conan-create.sh once)"
    exit 77
  fi
  echo "== installing Conan $conan_version into $venv"
  mkdir -p "$cache"
  python3 -m venv "$venv" || {
    echo "conan-create: python3 -m venv $venv failed (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  "$venv/bin/pip" install --quiet --disable-pip-version-check "conan==$conan_version" || {
    echo "conan-create: pip install conan==$conan_version into $venv failed" >&2
    exit 1
  }
fi

# A new home gets Conan Center as its remote; the profile's platform
# requirements need none, and none means that nothing can be fetched.
if "$conan" remote list --format=json | grep -q '"name": "conancenter"'; then
  "$conan" remote remove conancenter
fi

echo "== conan create packaging/conan"
"$conan" create "$root/packaging/conan" \
  --profile:all "$root/packaging/conan/profiles/debian12" \
  --build=missing \
  -c tools.build:jobs="${DRA_JOBS:-2}" \
  -c tools.cmake.cmake_layout:test_folder="$cache/conan-test-package" \
  -c tools.cmake.cmaketoolchain:user_presets=
# Each change to the SDK's sources is a new recipe revision: keep the newest.
"$conan" remove 'dra-cpp/*#!latest' --confirm

echo "== conan-create: done in $((SECONDS - start)) s"
