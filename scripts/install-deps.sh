#!/usr/bin/env bash
# Installs the Debian 12 packages dra-cpp needs to build and test, and only
# those that are missing. Safe to run again; needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev nlohmann-json3-dev libyaml-cpp-dev catch2
  libcurl4-openssl-dev libssl-dev
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

# Go builds the test fixtures (tests/support/fakeapiserver) only; the SDK is
# pure C++. The machines this project runs on ship Go in /usr/local/go.
export PATH="$PATH:/usr/local/go/bin"
go_minor() { go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
if [ "$(go_minor || true)" = "" ] || [ "$(go_minor)" -lt 22 ]; then
  echo "install-deps: Go >= 1.22 not found; trying Debian's golang-go"
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends golang-go
  if [ "$(go_minor || true)" = "" ] || [ "$(go_minor)" -lt 22 ]; then
    echo "install-deps: the test fixtures need Go >= 1.22 (Debian 12 ships 1.19); install it in /usr/local/go" >&2
    exit 1
  fi
fi
