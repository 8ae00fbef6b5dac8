#!/usr/bin/env bash
# Downloads the reference files of this directory again from their upstream
# repositories at a given commit (or tag), replaces them in place and prints
# their sizes and sha256 sums, for README.md. A maintainer's tool: it needs
# access to raw.githubusercontent.com; the tests never run it.
#
#   tests/data/reference/refresh.sh [--k8s-ref REF] [--cdi-ref REF] [--dry-run]
#
#   --k8s-ref REF  commit or tag of github.com/kubernetes/kubernetes
#                  (default $K8S_REF, else the commit in README.md)
#   --cdi-ref REF  commit or tag of github.com/cncf-tags/container-device-interface
#                  (default $CDI_REF, else the commit in README.md)
#   --dry-run      print the URLs and where each file goes; download nothing
#   -h, --help     this text
#
# Every file is downloaded into a temporary directory here first and checked
# to be JSON; only when all downloads succeeded is each file renamed over
# the old one (an atomic rename on the same file system), so a failure
# leaves the directory as it was.
set -euo pipefail

# The commits the files in this directory come from (see README.md).
DEFAULT_K8S_REF=1fc91aea117466e86aeaee86fe155180ac4f9431
DEFAULT_CDI_REF=05ae4b5bb730a036cb3f79477bd6676eea4a8c83

K8S_RAW=https://raw.githubusercontent.com/kubernetes/kubernetes
CDI_RAW=https://raw.githubusercontent.com/cncf-tags/container-device-interface

# local path (relative to this directory) | upstream repository | upstream path
FILES=(
  "openapi/apis__resource.k8s.io__v1_openapi.json|k8s|api/openapi-spec/v3/apis__resource.k8s.io__v1_openapi.json"
  "cdi/schema.json|cdi|schema/schema.json"
  "cdi/defs.json|cdi|schema/defs.json"
  "cdi/testdata/good/minimal.json|cdi|schema/testdata/good/minimal.json"
  "cdi/testdata/good/spec-example.json|cdi|schema/testdata/good/spec-example.json"
  "cdi/testdata/bad/explicit-empty.json|cdi|schema/testdata/bad/explicit-empty.json"
)

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "refresh: $*" >&2; exit 1; }

k8s_ref="${K8S_REF:-$DEFAULT_K8S_REF}"
cdi_ref="${CDI_REF:-$DEFAULT_CDI_REF}"
dry_run=0
while [ $# -gt 0 ]; do
  case "$1" in
    --k8s-ref) [ $# -ge 2 ] || die "--k8s-ref needs a value"; k8s_ref="$2"; shift 2 ;;
    --k8s-ref=*) k8s_ref="${1#*=}"; shift ;;
    --cdi-ref) [ $# -ge 2 ] || die "--cdi-ref needs a value"; cdi_ref="$2"; shift 2 ;;
    --cdi-ref=*) cdi_ref="${1#*=}"; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
[ -n "$k8s_ref" ] || die "empty --k8s-ref"
[ -n "$cdi_ref" ] || die "empty --cdi-ref"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

url_of() {  # url_of REPO UPSTREAM_PATH
  case "$1" in
    k8s) echo "$K8S_RAW/$k8s_ref/$2" ;;
    cdi) echo "$CDI_RAW/$cdi_ref/$2" ;;
    *) die "unknown repository $1" ;;
  esac
}

if [ "$dry_run" = 1 ]; then
  for entry in "${FILES[@]}"; do
    IFS='|' read -r dest repo upstream <<< "$entry"
    echo "$(url_of "$repo" "$upstream") -> $here/$dest"
  done
  exit 0
fi

command -v curl >/dev/null || die "curl is needed"
command -v sha256sum >/dev/null || die "sha256sum is needed"

tmp="$(mktemp -d "$here/.refresh.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# Download everything first.
for entry in "${FILES[@]}"; do
  IFS='|' read -r dest repo upstream <<< "$entry"
  url="$(url_of "$repo" "$upstream")"
  mkdir -p "$tmp/$(dirname "$dest")"
  echo "refresh: $url" >&2
  curl -fsSL --retry 3 --proto '=https' -o "$tmp/$dest" "$url" || die "download failed: $url"
  if command -v python3 >/dev/null; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1], "rb"))' "$tmp/$dest" 2>/dev/null ||
      die "not JSON: $url"
  fi
done

# Then replace the files, each by one rename.
for entry in "${FILES[@]}"; do
  IFS='|' read -r dest _ _ <<< "$entry"
  mkdir -p "$here/$(dirname "$dest")"
  chmod 0644 "$tmp/$dest"
  mv -f "$tmp/$dest" "$here/$dest"
done

echo "kubernetes/kubernetes:                  $k8s_ref"
echo "cncf-tags/container-device-interface:   $cdi_ref"
echo "size (bytes)  sha256                                                            file"
for entry in "${FILES[@]}"; do
  IFS='|' read -r dest _ _ <<< "$entry"
  size="$(wc -c < "$here/$dest" | tr -d ' ')"
  sum="$(sha256sum "$here/$dest" | cut -d' ' -f1)"
  printf '%12s  %s  %s\n' "$size" "$sum" "$dest"
done
echo "refresh: update the commits, sizes and sha256 sums in $here/README.md, then run the tests" >&2
