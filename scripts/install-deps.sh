#!/usr/bin/env bash
# Installs the Debian 12 packages dra-cpp needs to build and test, and only
# those that are missing. Safe to run again; needs root (or sudo).
set -euo pipefail

# Build: compilers, CMake, Ninja and the libraries the SDK links. Tests and
# scripts: python3 (free ports, JSON checks), openssl (the e2e cluster's
# certificates and tokens), curl (readiness polls, scripts/demo.sh),
# ca-certificates (HTTPS to the Go module proxy for the e2e binaries),
# util-linux and mount (setsid, unshare, mount --bind for the e2e kubelet),
# iproute2 (ip: the node's address), procps (sysctl: the kubelet's sysctls),
# unzip (the Go toolchain, below), file (cpack's Debian packages find the
# binaries whose dependencies dpkg-shlibdeps reads). clang-format-14: the style check (ctest
# `format`). doxygen: the API reference (ctest `api_reference`,
# scripts/api-docs.sh). abigail-tools: the ABI check (ctest `abi`,
# scripts/abi.sh). clang-14 and its runtime libraries: the
# build with clang's thread-safety analysis, ThreadSanitizer and the libFuzzer
# targets (gcc has neither of the first and last). The real node of the e2e
# suite (tests/e2e/cluster.sh with containerd, build-images.sh): runc, and
# what builds images without a registry or a Docker engine: mmdebstrap (the
# Debian base), buildah (examples/Dockerfile), umoci and busybox-static (the
# pause and workload images). The runtime matrix's second runtime
# (scripts/test-runtimes.sh, tests/e2e/cluster.sh with CRI-O): conmon, its
# container monitor, and libseccomp-dev, which crio links (cgo).
packages=(
  build-essential cmake ninja-build pkg-config git clang-14 libclang-rt-14-dev clang-format-14 doxygen abigail-tools
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev nlohmann-json3-dev libyaml-cpp-dev catch2
  libcurl4-openssl-dev libssl-dev
  python3 openssl curl ca-certificates util-linux mount iproute2 procps unzip file
  runc mmdebstrap buildah umoci busybox-static
  conmon libseccomp-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Go builds the test harnesses only (the fake API server, the Kubernetes
# binaries of the e2e suite, the CRI stand-in); the SDK is pure C++. Without a
# Go >= 1.26 at hand, fetch the official toolchain from the Go module proxy
# (the module golang.org/toolchain, which `go` downloads for GOTOOLCHAIN),
# checked against the sha256 pinned here, into DRA_GO_ROOT (scripts/go-env.sh).
. "$(dirname "$0")/go-env.sh"
if go="$(dra_find_go)"; then
  echo "install-deps: $("$go" version | cut -d' ' -f3) at $go"
else
  case "$(uname -m)" in
    x86_64) arch=amd64 sha256=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7 ;;
    aarch64) arch=arm64 sha256=02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99 ;;
    *) echo "install-deps: no pinned Go toolchain for $(uname -m); install Go >= 1.26 in /usr/local/go" >&2; exit 1 ;;
  esac
  module="v0.0.1-go$DRA_GO_VERSION.linux-$arch"
  proxy="${GOPROXY:-https://proxy.golang.org}"
  proxy="${proxy%%,*}"
  echo "install-deps: fetching Go $DRA_GO_VERSION (golang.org/toolchain@$module) from $proxy into $DRA_GO_ROOT"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL --retry 3 -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/$module.zip"
  echo "$sha256  $tmp/go.zip" | sha256sum -c --quiet -
  unzip -q "$tmp/go.zip" -d "$tmp/unpacked"
  root="$tmp/unpacked/golang.org/toolchain@$module"
  # Module zips keep no file modes.
  chmod +x "$root"/bin/* "$root"/pkg/tool/*/*
  mkdir -p "$(dirname "$DRA_GO_ROOT")"
  rm -rf "$DRA_GO_ROOT"
  mv "$root" "$DRA_GO_ROOT"
  dra_go_ok "$DRA_GO_ROOT/bin/go" || { echo "install-deps: $DRA_GO_ROOT/bin/go does not run" >&2; exit 1; }
  echo "install-deps: $("$DRA_GO_ROOT/bin/go" version | cut -d' ' -f3) at $DRA_GO_ROOT/bin/go"
fi
