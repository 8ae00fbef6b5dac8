#!/bin/sh
# The include rule of docs/architecture.md: a component's private headers
# (src/<component>/) are its own. Another component may include only the
# shared internal libraries (src/base, src/crashpoint, src/fileutil) and
# public headers (include/dra/...); a public header includes no private one.
# Prints each violation as file:line and exits 1 if there is any.
#
#   scripts/check-layering.sh [repository root]
set -eu
root="${1:-$(dirname "$0")/..}"
cd "$root"
shared="base crashpoint fileutil"
components="$(find src -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)"
violations="$(
  for file in $(find src include -name '*.h' -o -name '*.cc' | sort); do
    case "$file" in
      src/*) own="$(echo "$file" | cut -d/ -f2)" ;;
      *) own="" ;;
    esac
    grep -n '^#include "[a-z0-9_]*/' "$file" | while IFS= read -r hit; do
      line="${hit%%:*}"
      dir="$(echo "$hit" | sed 's/^[0-9]*:#include "\([a-z0-9_]*\)\/.*/\1/')"
      echo "$components" | grep -qx "$dir" || continue  # dra/..., absl/..., a library's
      [ "$dir" = "$own" ] && continue
      if [ -n "$own" ] && echo " $shared " | grep -q " $dir "; then continue; fi
      echo "$file:$line: includes the private header ${hit#*#include } of component $dir"
    done
  done
)"
if [ -n "$violations" ]; then
  echo "$violations"
  exit 1
fi
echo "check-layering: no component includes another's private header"
