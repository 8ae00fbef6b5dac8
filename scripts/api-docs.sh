#!/usr/bin/env bash
# Builds the API reference of the public headers (include/dra) with Doxygen
# and docs/Doxyfile: HTML in OUTPUT_DIR/html (default build/api-docs, a
# relative OUTPUT_DIR is taken from the current directory), and prints where
# index.html is. Every public name must have a /// comment: any Doxygen
# warning (an undocumented name, a malformed comment) is printed on stderr
# and fails the run with exit 1, as does a missing doxygen, which
# scripts/install-deps.sh installs (ctest: api_reference).
#
#   scripts/api-docs.sh [OUTPUT_DIR]
set -euo pipefail

if [ $# -gt 1 ]; then
  echo "usage: scripts/api-docs.sh [OUTPUT_DIR]" >&2
  exit 2
fi
out="$(realpath -m "${1:-$(dirname "$0")/../build/api-docs}")"
cd "$(dirname "$0")/.."
root="$(pwd)"

if ! command -v doxygen >/dev/null 2>&1; then
  echo "api-docs: doxygen not found; scripts/install-deps.sh installs it" >&2
  exit 1
fi

mkdir -p "$out"
warnings="$(mktemp)"
trap 'rm -f "$warnings"' EXIT
# The variables docs/Doxyfile reads.
export DRA_API_DOCS_DIR="$out"
DRA_VERSION="$(scripts/version.sh)"
export DRA_VERSION
export DRA_SOURCE_URL="file://$root"

status=0
doxygen docs/Doxyfile 2>"$warnings" || status=$?
if [ "$status" -ne 0 ] || [ -s "$warnings" ]; then
  cat "$warnings" >&2
  # With WARN_AS_ERROR Doxygen words its warnings "error:".
  count="$(grep -cE '(warning|error):' "$warnings" || true)"
  echo "api-docs: doxygen exited $status with $count warnings; every public name in include/dra needs a /// comment" >&2
  exit 1
fi
echo "api-docs: $out/html/index.html"
