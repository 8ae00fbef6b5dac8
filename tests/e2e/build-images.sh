#!/usr/bin/env bash
# Builds the container images the suite's node runs, without a registry or a
# Docker engine, from Debian's packages and this repository, as OCI archives
# that `ctr images import` takes:
#
#   pause        the pod sandbox image (tests/e2e/images/pause.c, static)
#   busybox      the workloads' image: Debian's busybox-static (sh, env, cat,
#                ls, sleep, ...)
#   debian-base  debian:12-slim made with mmdebstrap (minbase, no docs, man
#                pages or locales), loaded into buildah's store as debian:12
#                and debian:12-slim, the Dockerfile's two bases, and written
#                as debian-12-slim.oci.tar (the node's bash workloads)
#   gpu-driver, cpu-driver, minimal-driver
#                examples/Dockerfile built with buildah (vfs store, chroot
#                isolation). By default its target `prebuilt`: the image's
#                root (examples/image-root.sh: no shell or package manager)
#                around the driver binary of BUILD_DIR (the suite's own
#                build), with the Debian packages of the shared libraries
#                `readelf -d` names; with --full, the whole Dockerfile (the
#                driver compiled inside, gRPC linked statically).
#   dra-example-driver
#                the reference driver's kubelet plugin (build-k8s.sh
#                dra-example-kubeletplugin), for the node the GPU example
#                takes over from it, with its chart's claim controller and
#                webhook when build-k8s.sh has built them (dra-example-controller,
#                dra-example-webhook: tests/e2e/reference-suite.sh does)
#   cert-manager the controller and CA injector of build-k8s.sh cert-manager
#                (one static binary, one layer) as two images whose
#                entrypoints name the program, registry.example.com/dra-cpp/
#                cert-manager-{controller,cainjector}:<version>, which
#                cert-manager's chart runs with only its images swapped
#
# pause, busybox, debian-base, dra-example-driver and cert-manager are cached in ${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}/images
# (rebuilt when missing or older than their sources); the driver images go to
# BUILD_DIR/images and are rebuilt when the binary is newer. Needs root (or
# sudo): mmdebstrap and buildah run as root.
#
# Usage: build-images.sh [--build-dir DIR] [--full] [--tag TAG] [--print-dir] image...
#   image: pause busybox debian-base gpu-driver cpu-driver dra-example-driver
#          minimal-driver cert-manager (default: all but minimal-driver and
#          cert-manager)
#   --build-dir: the CMake build tree holding examples/{gpu,cpu,minimal}/*-driver (default: build)
#   --tag: the driver images' tag (default: the SDK's version, scripts/version.sh); named registry.example.com/dra-cpp/<driver>:<tag>
#   --print-dir: print the directory of the OCI archives of the last image named
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}/images"
build_dir="$repo/build"
full=0
tag="$("$repo/scripts/version.sh")"
print_dir=0
images=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$(cd "$2" && pwd)"; shift ;;
    --full) full=1 ;;
    --tag) tag="$2"; shift ;;
    --print-dir) print_dir=1 ;;
    pause|busybox|debian-base|gpu-driver|cpu-driver|minimal-driver|dra-example-driver|cert-manager) images+=("$1") ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {print; next} {exit}' "$0"; exit 0 ;;
    *) echo "build-images: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ ${#images[@]} -gt 0 ] || images=(pause busybox debian-base gpu-driver cpu-driver dra-example-driver)

log() { echo "build-images: $*" >&2; }
die() { log "$*"; exit 1; }
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo -n)
for tool in umoci buildah mmdebstrap readelf; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/install-deps.sh"
done

# buildah's store and run state stay inside the cache, on the vfs driver
# (no overlay mounts to leave behind).
buildah=("${as_root[@]}" buildah --root "$cache/buildah/root" --runroot "$cache/buildah/run" --storage-driver vfs)

mkdir -p "$cache"
work="$(mktemp -d "$cache/.work.XXXXXX")"
trap '"${as_root[@]}" rm -rf "$work"' EXIT

# fresh OUT SOURCE...: whether OUT exists and is newer than every SOURCE.
fresh() {
  local out="$1" src; shift
  [ -s "$out" ] || return 1
  for src in "$@"; do [ "$out" -nt "$src" ] || return 1; done
}

# oci_archive LAYOUT OUT: the OCI layout LAYOUT as a tar.
oci_archive() {
  tar -C "$1" -cf "$2.tmp" oci-layout index.json blobs && mv -f "$2.tmp" "$2"
}

# umoci_image NAME ROOTFS OUT CONFIG...: an image of one layer holding ROOTFS,
# tagged 1 (`ctr images import --base-name <repository>` names it <repository>:1).
umoci_image() {
  local name="$1" rootfs="$2" out="$3"; shift 3
  local layout="$work/oci-$name"
  umoci init --layout "$layout"
  umoci new --image "$layout:1"
  umoci insert --image "$layout:1" "$rootfs" /
  umoci config --image "$layout:1" --author dra-cpp "$@"
  umoci gc --layout "$layout"
  oci_archive "$layout" "$out"
}

build_pause() {
  local out="$cache/pause.tar" src="$here/images/pause.c"
  if fresh "$out" "$src" "$0"; then log "pause: cached ($out)"; return; fi
  local rootfs="$work/pause-rootfs"
  mkdir -p "$rootfs"
  gcc -static -O2 -Wall -Wextra -Werror -o "$rootfs/pause" "$src"
  strip "$rootfs/pause"
  umoci_image pause "$rootfs" "$out" --config.entrypoint=/pause --config.user=65535:65535
  log "pause: $out ($(du -h "$out" | cut -f1))"
}

build_busybox() {
  local out="$cache/busybox.tar" bin=/bin/busybox
  if fresh "$out" "$bin" "$0"; then log "busybox: cached ($out)"; return; fi
  [ -x "$bin" ] && "$bin" --list | grep -x sh >/dev/null || die "$bin is not busybox-static: run scripts/install-deps.sh"
  local rootfs="$work/busybox-rootfs" applet
  mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc"
  cp "$bin" "$rootfs/bin/busybox"
  for applet in $("$bin" --list); do
    [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
  done
  echo 'root:x:0:0:root:/root:/bin/sh' > "$rootfs/etc/passwd"
  umoci_image busybox "$rootfs" "$out" --config.cmd=sh --config.env=PATH=/bin
  log "busybox: $out ($(du -h "$out" | cut -f1))"
}

# debian:12-slim from Debian's packages: minbase without documentation, man
# pages and locales, as the official slim image is made.
build_debian_base() {
  local out="$cache/debian-12-slim.tar"
  if ! fresh "$out" "$0"; then
    local t=$SECONDS
    log "debian-base: mmdebstrap bookworm (minbase) ..."
    "${as_root[@]}" mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      bookworm "$work/rootfs.tar" "${DRA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
    "${as_root[@]}" chown "$(id -u):$(id -g)" "$work/rootfs.tar"
    mv -f "$work/rootfs.tar" "$out"
    log "debian-base: $out ($(du -h "$out" | cut -f1)) in $((SECONDS - t)) s"
  else
    log "debian-base: cached ($out)"
  fi
  # buildah keeps its own copy; load it when the store lacks it or is older.
  local loaded="$cache/buildah/debian-12-slim.loaded"
  if ! fresh "$loaded" "$out"; then
    local ctr
    ctr="$("${buildah[@]}" from --quiet scratch)"
    "${buildah[@]}" add --quiet "$ctr" "$out" / >/dev/null
    "${buildah[@]}" config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
    "${buildah[@]}" commit --quiet --rm "$ctr" docker.io/library/debian:12-slim >/dev/null
    "${buildah[@]}" tag docker.io/library/debian:12-slim docker.io/library/debian:12
    echo "$out" > "$loaded"  # not empty: fresh() wants content
  fi
  # And as an OCI archive, the workload image of the node's bash containers.
  local archive="$cache/debian-12-slim.oci.tar"
  if ! fresh "$archive" "$loaded"; then
    "${buildah[@]}" push --quiet docker.io/library/debian:12-slim \
      "oci-archive:$archive.tmp:docker.io/library/debian:12-slim" >&2
    "${as_root[@]}" chown "$(id -u):$(id -g)" "$archive.tmp"
    mv -f "$archive.tmp" "$archive"
  fi
}

# The Debian package that installed library file $1 (merged /usr: it may be
# registered under /lib or /usr/lib, by its own name or its link target's).
package_of_file() {
  local candidate
  for candidate in "$1" "$(readlink -f "$1")" "/usr${1#/usr}" "${1#/usr}"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
  return 1
}

# The Debian packages that hold the shared libraries binary $1 needs.
runtime_packages() {
  local lib path
  for lib in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path="$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|AArch64/ {print $NF; exit}')"
    [ -n "$path" ] || die "$1 needs $lib, which ldconfig does not know"
    package_of_file "$path" || die "no Debian package holds $path ($lib, needed by $1)"
  done | sort -u | tr '\n' ' '
}

# dra-example-driver's kubelet plugin, the reference the GPU example takes
# over from (build-k8s.sh dra-example-kubeletplugin: static, no cgo), in an
# image with its chart's other programs of the same version where built;
# import it as registry.k8s.io/dra-example-driver/dra-example-driver:<version>.
build_reference() {
  local bin_dir bin program
  bin_dir="$("$here/build-k8s.sh" --print-dir dra-example-kubeletplugin)"
  bin="$bin_dir/dra-example-kubeletplugin"
  local version programs=("$bin")
  version="$(cat "$bin.version")"
  for program in dra-example-controller dra-example-webhook; do
    [ "$(cat "$bin_dir/$program.version" 2>/dev/null)" != "$version" ] || programs+=("$bin_dir/$program")
  done
  local out="$cache/dra-example-driver-$version.tar"
  if fresh "$out" "${programs[@]}" "$0" && [ "$(cat "$out.programs" 2>/dev/null)" = "${#programs[@]}" ]; then
    log "dra-example-driver: cached ($out)"
    return
  fi
  local rootfs="$work/reference-rootfs"
  mkdir -p "$rootfs/usr/bin" "$rootfs/tmp" "$rootfs/etc"
  cp "${programs[@]}" "$rootfs/usr/bin/"
  echo 'root:x:0:0:root:/root:/bin/sh' > "$rootfs/etc/passwd"
  umoci_image dra-example-driver "$rootfs" "$out" --config.cmd=dra-example-kubeletplugin --config.env=PATH=/usr/bin
  echo "${#programs[@]}" > "$out.programs"
  log "dra-example-driver: $out ($(du -h "$out" | cut -f1); ${programs[*]##*/})"
}

# cert-manager (build-k8s.sh cert-manager: static, no cgo) as two images of
# the same layer, one per program; the chart runs them as a non-root user.
build_cert_manager() {
  local bin_dir bin version program
  bin_dir="$("$here/build-k8s.sh" --print-dir cert-manager)"
  bin="$bin_dir/cert-manager"
  version="$("$bin" --version | awk '{print $2}')"
  local rootfs="$work/cert-manager-rootfs"
  for program in controller cainjector; do
    local out="$cache/cert-manager-$program-$version.tar"
    if fresh "$out" "$bin" "$0"; then log "cert-manager-$program: cached ($out)"; continue; fi
    if [ ! -d "$rootfs" ]; then
      mkdir -p "$rootfs/usr/bin" "$rootfs/tmp" "$rootfs/etc"
      cp "$bin" "$rootfs/usr/bin/"
      printf 'root:x:0:0:root:/root:/sbin/nologin\ncert-manager:x:1000:1000::/:/sbin/nologin\n' > "$rootfs/etc/passwd"
    fi
    umoci_image "cert-manager-$program" "$rootfs" "$out" --config.entrypoint=/usr/bin/cert-manager \
      --config.entrypoint="$program" --config.user=1000:1000 --config.env=PATH=/usr/bin
    log "cert-manager-$program: $out ($(du -h "$out" | cut -f1))"
  done
}

# The Dockerfile's lean libcurl stage (a minute), named so that the pruning
# after each driver image keeps it: later builds find it in the layer cache.
build_libcurl_stage() {
  "${buildah[@]}" bud --quiet --layers --isolation chroot -f "$repo/examples/Dockerfile" --target libcurl \
    -t localhost/dra-cpp/libcurl-build "$work" >/dev/null
}

build_driver() {
  local driver="${1%-driver}" image="registry.example.com/dra-cpp/$1:$tag"
  local out_dir="$build_dir/images" out
  out="$out_dir/$1-$tag.tar"
  local args=(--quiet --layers --isolation chroot -f "$repo/examples/Dockerfile" --build-arg "DRIVER=$driver" -t "$image")
  local t=$SECONDS
  if [ "$full" = 1 ]; then
    out="$out_dir/$1-$tag-full.tar"
    log "$1: the whole Dockerfile (the driver compiled inside; many minutes) ..."
    build_libcurl_stage
    "${buildah[@]}" bud "${args[@]}" "$repo" >&2
  else
    local bin="$build_dir/examples/$driver/$1"
    [ -x "$bin" ] || die "$bin is missing: build it first (cmake --build $build_dir --target $1)"
    if fresh "$out" "$bin" "$repo/examples/Dockerfile" "$repo/examples/image-root.sh" "$0"; then
      log "$1: cached ($out)"
      return
    fi
    local context="$work/context-$1" packages
    packages="$(runtime_packages "$bin")" || die "$1: cannot tell which Debian packages it needs"
    mkdir -p "$context/examples"
    strip -o "$context/$1" "$bin"
    cp "$repo/examples/image-root.sh" "$context/examples/"
    build_libcurl_stage
    "${buildah[@]}" bud "${args[@]}" --target prebuilt --build-arg "RUNTIME_PACKAGES=$packages" "$context" >&2
  fi
  # Layers no image names any more (an earlier build's) only take disk.
  "${buildah[@]}" rmi --prune >/dev/null 2>&1 || true
  mkdir -p "$out_dir"
  "${buildah[@]}" push --quiet "$image" "oci-archive:$out.tmp:$image" >&2
  "${as_root[@]}" chown "$(id -u):$(id -g)" "$out.tmp"
  mv -f "$out.tmp" "$out"
  log "$1: $image -> $out ($(du -h "$out" | cut -f1)) in $((SECONDS - t)) s"
}

last_dir="$cache"
for image in "${images[@]}"; do
  case "$image" in
    pause) build_pause; last_dir="$cache" ;;
    busybox) build_busybox; last_dir="$cache" ;;
    debian-base) build_debian_base; last_dir="$cache" ;;
    dra-example-driver) build_reference; last_dir="$cache" ;;
    cert-manager) build_cert_manager; last_dir="$cache" ;;
    gpu-driver|cpu-driver|minimal-driver) build_debian_base; build_driver "$image"; last_dir="$build_dir/images" ;;
  esac
done
if [ "$print_dir" = 1 ]; then echo "$last_dir"; fi
