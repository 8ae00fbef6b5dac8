#!/bin/bash
# Makes the root file system of an example driver's image (examples/Dockerfile)
# from the Debian system it runs in: no shell, no package manager, only
#
#   /usr/bin/dra-example-driver   the driver (and, for the GPU example, the
#                                 names dra-example-driver's chart runs it by)
#   the shared libraries it needs, as the dynamic loader resolves them here
#   (ldd), and those of libcurl.so.4, which dra::k8s loads with dlopen
#   /etc/ssl/certs/ca-certificates.crt   for API servers with public CAs
#   /etc/ld.so.conf{,.d} and ld.so.cache  where NVIDIA's container toolkit
#                                 adds libnvidia-ml.so.1 (it runs ldconfig)
#   /etc/passwd, /etc/group       root and nobody
#   /usr/share/doc/*/copyright    the licences of the packages copied from
#   /tmp
#
# Usage: image-root.sh DRIVER ROOT   (DRIVER: gpu, cpu or minimal; the driver
# is /usr/bin/dra-example-driver here)
set -euo pipefail

driver="$1" root="$2"
bin=/usr/bin/dra-example-driver
curl_library=libcurl.so.4

# ldd's two line shapes: "libx.so.1 => /path (0x...)" and "/path (0x...)".
resolved() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'; }
# Copies package $1's copyright file, when it has one.
licence() {
  [ -f "/usr/share/doc/$1/copyright" ] || return 0
  mkdir -p "$root/usr/share/doc/$1"
  cp "/usr/share/doc/$1/copyright" "$root/usr/share/doc/$1/"
}

mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/etc/ssl/certs" "$root/usr/share/doc"
mkdir -m 1777 "$root/tmp"
# Debian's merged /usr, so that paths under /lib and /lib64 (the loader's
# own, PT_INTERP) resolve as on the build system.
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
ln -s usr/bin "$root/bin"

cp "$bin" "$root$bin"
if [ "$driver" = gpu ]; then
  for name in dra-example-kubeletplugin dra-example-controller dra-example-webhook; do
    ln -s dra-example-driver "$root/usr/bin/$name"
  done
fi

curl_path="$(ldconfig -p | awk -v l="$curl_library" '$1 == l {print $NF; exit}')"
[ -n "$curl_path" ] || { echo "image-root: $curl_library is not installed" >&2; exit 1; }
# Each library under the name the loader looks for (the file, not its
# link chain), at its path with /lib* moved under /usr.
for path in $( (resolved "$bin"; echo "$curl_path"; resolved "$curl_path") | sort -u); do
  target="$root/usr/${path#/usr/}"
  mkdir -p "$(dirname "$target")"
  cp -L "$path" "$target"
  package="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)"
  [ -z "$package" ] || licence "${package%%:*}"
done
licence libcurl4  # the lean libcurl is no package's: the Dockerfile put its copyright there

cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
licence ca-certificates
cp -r /etc/ld.so.conf /etc/ld.so.conf.d "$root/etc/"
ldconfig -r "$root"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
