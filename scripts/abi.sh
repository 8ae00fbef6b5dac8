#!/usr/bin/env bash
# The ABI of the SDK's public API, and the check that a change to it is
# announced by the version (docs/compatibility.md).
#
#   scripts/abi.sh dump BUILD_DIR OUT.abi   the ABI of a build tree's libraries
#   scripts/abi.sh check BUILD_DIR          compare it with the last release's
#
# The public API is what Doxygen documents of include/dra (docs/Doxyfile):
# its classes and structs (members, vtables, typeinfo) and the functions of
# its namespaces. The build tree's static libraries (position-independent,
# with debug info) are linked into one shared object that exports exactly
# those symbols, and abidw (Debian's abigail-tools) writes its ABI, types
# limited to the ones reachable from them.
#
# The last release's ABI is abi/dra-X.Y.Z.abi.gz, written by
# scripts/release.sh; `check` compares the tree with the newest one and
# applies the promise: with the version of CMakeLists.txt still that
# release's, or a patch after it, no change but additions; a minor version
# after it may change the API before 1.0 and only add from 1.0; a major may
# change anything. A change it allows is printed, not fatal. Without any
# release yet it only checks that the ABI can be read. Exit 1 when the
# change needs another version (ctest: abi).
set -euo pipefail

usage() {
  echo "usage: scripts/abi.sh dump BUILD_DIR OUT.abi | check BUILD_DIR" >&2
  exit 2
}
[ $# -ge 2 ] || usage
command="$1"
build="$(realpath "$2")"
case "$command" in
  dump) [ $# = 3 ] || usage; out="$(realpath -m "$3")" ;;
  check) [ $# = 2 ] || usage ;;
  *) usage ;;
esac
cd "$(dirname "$0")/.."
root="$(pwd)"
for tool in abidw abidiff doxygen; do
  command -v "$tool" >/dev/null 2>&1 || { echo "abi: $tool not found; scripts/install-deps.sh installs it" >&2; exit 1; }
done

# The libraries of the SDK in link order, as the pkg-config file lists them.
libraries=()
for name in $(sed -n 's/^Libs: .*-L[^ ]* //p' "$build/dra.pc") $(sed -n 's/^Libs: .*-L[^ ]* //p' "$build/dra-cdi.pc"); do
  name="${name#-l}"
  [[ "$name" == dra_* ]] || continue  # -ldl
  library="$(find "$build/src" "$build/proto" -name "lib$name.a" -print -quit)"
  [ -n "$library" ] || { echo "abi: $build has no lib$name.a (build the tree first)" >&2; exit 1; }
  libraries+=("$library")
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

dump() {
  # The public names, from Doxygen's index of what it documents.
  (cat docs/Doxyfile
   echo "OUTPUT_DIRECTORY=$work/doxygen"
   echo "GENERATE_HTML=NO"
   echo "GENERATE_XML=YES"
   echo "WARN_AS_ERROR=NO"
   echo "QUIET=YES"
   echo "WARN_IF_UNDOCUMENTED=NO") |
    DRA_API_DOCS_DIR="$work/doxygen" DRA_VERSION=abi DRA_SOURCE_URL="file://$root" doxygen - >/dev/null 2>&1
  awk '
    /<compound / {
      kind = $0; sub(/.*kind="/, "", kind); sub(/".*/, "", kind)
      name = $0; sub(/.*<name>/, "", name); sub(/<\/name>.*/, "", name)
      if (kind == "class" || kind == "struct") {
        printf "  %s::*;\n  \"typeinfo for %s\";\n  \"typeinfo name for %s\";\n  \"vtable for %s\";\n", name, name, name, name
      }
      next
    }
    /<member .*kind="function"/ && kind == "namespace" {
      f = $0; sub(/.*<name>/, "", f); sub(/<\/name>.*/, "", f); printf "  %s::%s*;\n", name, f
    }
  ' "$work/doxygen/xml/index.xml" | sed 's/&lt;/</g;s/&gt;/>/g;s/&amp;/\&/g' | sort -u >"$work/public.txt"
  [ -s "$work/public.txt" ] || { echo "abi: Doxygen listed no public name" >&2; exit 1; }
  { echo '{ global: extern "C++" {'; cat "$work/public.txt"; echo '}; local: *; };'; } >"$work/public.map"
  c++ -shared -o "$work/libdra.so" -Wl,--version-script="$work/public.map" \
    -Wl,--whole-archive "${libraries[@]}" -Wl,--no-whole-archive
  abidw --headers-dir "$root/include" --drop-private-types --exported-interfaces-only --drop-undefined-syms \
    --no-show-locs --no-comp-dir-path --type-id-style hash "$work/libdra.so" >"$1"
}

if [ "$command" = dump ]; then
  dump "$out"
  echo "abi: $out ($(grep -c '<elf-symbol ' "$out") symbols)"
  exit 0
fi

version="$(scripts/version.sh)"
# The newest release's ABI no newer than this version.
baseline=""
baseline_version=""
for file in abi/dra-*.abi.gz; do
  [ -e "$file" ] || continue
  v="${file#abi/dra-}"
  v="${v%.abi.gz}"
  if [ "$(printf '%s\n%s\n' "$v" "$version" | sort -V | tail -n 1)" = "$version" ] &&
    { [ -z "$baseline_version" ] || [ "$(printf '%s\n%s\n' "$v" "$baseline_version" | sort -V | tail -n 1)" = "$v" ]; }; then
    baseline="$file"
    baseline_version="$v"
  fi
done

dump "$work/current.abi"
if [ -z "$baseline" ]; then
  echo "abi: no release before $version in abi/ to compare with; the ABI of $build reads" \
    "($(grep -c '<elf-symbol ' "$work/current.abi") public symbols)"
  exit 0
fi
gzip -dc "$baseline" >"$work/baseline.abi"

IFS=. read -r major minor _ <<<"$version"
IFS=. read -r base_major base_minor _ <<<"$baseline_version"
if [ "$major" != "$base_major" ]; then
  allowed="any change (major version $major after $baseline_version)"
elif [ "$minor" != "$base_minor" ] && [ "$major" = 0 ]; then
  allowed="any change (minor version $version after $baseline_version, before 1.0)"
else
  allowed=""
fi

status=0
abidiff --no-added-syms "$work/baseline.abi" "$work/current.abi" >"$work/diff.txt" || status=$?
if [ $((status & 3)) != 0 ]; then
  cat "$work/diff.txt" >&2
  echo "abi: abidiff failed (exit $status)" >&2
  exit 1
fi
if [ "$status" = 0 ]; then
  echo "abi: $version keeps the ABI of $baseline_version ($baseline)"
  exit 0
fi
cat "$work/diff.txt"
if [ -n "$allowed" ]; then
  echo "abi: the ABI changed since $baseline_version; allowed: $allowed. Name each change in CHANGELOG.md."
  exit 0
fi
echo "abi: the ABI changed since $baseline_version (above), which version $version does not allow" \
  "(docs/compatibility.md): keep the ABI, or raise the version in CMakeLists.txt and add its CHANGELOG.md entry" >&2
exit 1
