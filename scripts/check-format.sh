#!/bin/sh
# The style rule of .clang-format: every tracked C++ file is as clang-format-14
# writes it. Prints the files that differ and exits 1 if there is any; exits
# 77 (ctest: skipped) where clang-format-14 is missing, which
# scripts/install-deps.sh installs.
#
#   scripts/check-format.sh [repository root]     check
#   scripts/check-format.sh --fix [root]          rewrite the files in place
set -eu
fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi
root="${1:-$(dirname "$0")/..}"
cd "$root"
if ! command -v clang-format-14 >/dev/null 2>&1; then
  echo "check-format: clang-format-14 not found (scripts/install-deps.sh installs it); skipped"
  exit 77
fi
files="$(git ls-files '*.cc' '*.h')"
if [ "$fix" = 1 ]; then
  echo "$files" | xargs clang-format-14 -i
  exit 0
fi
bad=""
for file in $files; do
  if ! clang-format-14 --dry-run --Werror "$file" >/dev/null 2>&1; then bad="$bad$file
"; fi
done
if [ -n "$bad" ]; then
  printf '%s' "$bad"
  echo "check-format: these files differ from clang-format-14's output; scripts/check-format.sh --fix rewrites them"
  exit 1
fi
echo "check-format: every C++ file is formatted"
