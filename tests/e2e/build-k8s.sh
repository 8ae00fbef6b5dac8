#!/usr/bin/env bash
# Builds the pinned Kubernetes components and etcd the e2e suite runs, from the
# Go module proxy, into a cache outside the repository, one directory per
# Kubernetes release:
#
#   ${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}/k8s-<version>/{etcd,kube-apiserver,kube-scheduler}
#
# and, on request, the kubelet peer (tests/e2e/kubeletpeer, built from this
# repository's sources against the same Kubernetes modules), the CRI stand-in
# (tests/e2e/cri, the fake runtime of k8s.io/cri-client with CDI injection, that
# the kubelet runs on) and the Go SDK benchmark driver (bench/gosdk, the trivial
# driver of bench/go_vs_cpp.sh on k8s.io/dynamic-resource-allocation/kubeletplugin,
# pinned by bench/gosdk/go.mod), the Go resourceslice controller publisher of
# bench/publisher_go_vs_cpp.sh (bench/gosdk/cmd/publisher, same module),
# helm (pinned by tests/e2e/helm/go.mod) for the example drivers' charts, and
# the real node's container runtime (pinned by tests/e2e/runtime/go.mod):
# containerd, ctr, containerd-shim-runc-v2, crictl and the CNI plugins bridge
# and host-local (into cni/ beside the binaries); the second node runtime
# (pinned by tests/e2e/crio/go.mod): crio (cgo: Debian's libseccomp-dev), its
# pinns helper (C, from the module's pinns/ sources) and crio-copyimg (its
# test tool that imports an OCI archive into crio's containers/storage); and
# the reference driver the
# GPU example stands in for, dra-example-driver (pinned by
# tests/e2e/reference/go.mod): its kubelet plugin, and a copy of its demo specs
# and Helm chart in dra-example-driver/ beside the binaries, and on request its
# chart's other two programs (its claim controller and its admission webhook);
# Kubernetes' own DRA test driver (test/e2e/dra/test-driver of
# k8s.io/kubernetes, built on the Go kubeletplugin helper), which `dractl
# sanity` is run against; and cert-manager (tests/e2e/cert-manager: a main of
# ours wiring the controllers of its root module, the only one the proxy
# serves; pinned by its go.mod), with its CRDs and chart in cert-manager-deploy/ beside it.
#
# The versions are pinned by tests/e2e/k8s/go.mod (the default Kubernetes
# release), tests/e2e/k8s-<version>/go.mod (the other supported releases) and
# tests/e2e/etcd/go.mod (and their go.sum files, so every machine downloads
# exactly the same modules). All releases share one Go build and module cache.
# A release whose module needs a newer Go than the local one (1.38 needs Go
# 1.27) is built with the toolchain scripts/go-env.sh pins for that Go, which
# the go command fetches from the module proxy (GOTOOLCHAIN) into the module
# cache, the first time (76 MB, seconds).
# Only the first run of a release compiles (about 15-25 minutes on 2 cores);
# later runs find the binaries, check that each answers --version, and return
# at once.
#
# Usage: build-k8s.sh [--print-dir | --go-test | --print-versions] [component...]
#   component: etcd kube-apiserver kube-scheduler kube-controller-manager kubelet
#              kubectl kubeletpeer cri gosdk-driver gosdk-publisher gosdk-minimal helm
#              containerd ctr containerd-shim-runc-v2 crictl cni-bridge
#              cni-host-local (runtime: all six) crio crio-pinns crio-copyimg
#              (runtime-crio: those three, crictl, cni-bridge, cni-host-local)
#              dra-example-kubeletplugin
#              dra-example-controller dra-example-webhook dra-test-driver
#              cert-manager
#              (default: etcd kube-apiserver kube-scheduler)
#   --print-versions: print the supported Kubernetes releases, oldest
#                first, one per line, and build nothing.
#   --print-dir: print only the binary directory on stdout, after building the
#                components asked for (progress goes to stderr in every case).
#   --go-test: instead of building, run `go test ./...` in the modules of our
#              own components (kubeletpeer, cri, gosdk-driver, gosdk-publisher, gosdk-minimal),
#              same caches.
# Environment: DRA_K8S_VERSION (the Kubernetes release: the pin of
#              tests/e2e/k8s/go.mod by default, or one of tests/e2e/k8s-<version>;
#              for another than the default, only the release's own binaries,
#              kube-apiserver kube-scheduler kube-controller-manager kubelet
#              kubectl, and etcd, which every cluster needs, are built, into
#              that release's directory; the other components are pinned by
#              their own modules and live in the default release's directory),
#              DRA_K8S_CACHE (cache root), DRA_GO_JOBS (go build -p, default 2),
#              GO (the go command; default: go on PATH, else /usr/local/go/bin/go).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The pinned version of module $2 in go.mod $1 (single-line or block require).
pinned() {
  awk -v m="$2" '$1 == "require" && $2 == m {print $3; exit} $1 == m && $2 ~ /^v/ {print $2; exit}' "$1"
}
K8S_DEFAULT_VERSION="$(pinned "$here/k8s/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(pinned "$here/etcd/go.mod" go.etcd.io/etcd/server/v3)"
HELM_VERSION="$(pinned "$here/helm/go.mod" helm.sh/helm/v3)"
CONTAINERD_VERSION="$(pinned "$here/runtime/go.mod" github.com/containerd/containerd/v2)"
CNI_VERSION="$(pinned "$here/runtime/go.mod" github.com/containernetworking/plugins)"
CRICTL_VERSION="$(pinned "$here/runtime/go.mod" sigs.k8s.io/cri-tools)"
CRIO_VERSION="$(pinned "$here/crio/go.mod" github.com/cri-o/cri-o)"
REFERENCE_VERSION="$(pinned "$here/reference/go.mod" sigs.k8s.io/dra-example-driver)"
CERT_MANAGER_VERSION="$(pinned "$here/cert-manager/go.mod" github.com/cert-manager/cert-manager)"
if [ -z "$K8S_DEFAULT_VERSION" ] || [ -z "$ETCD_VERSION" ] || [ -z "$HELM_VERSION" ] || [ -z "$CONTAINERD_VERSION" ] ||
   [ -z "$CNI_VERSION" ] || [ -z "$CRICTL_VERSION" ] || [ -z "$CRIO_VERSION" ] || [ -z "$REFERENCE_VERSION" ] || [ -z "$CERT_MANAGER_VERSION" ]; then
  echo "build-k8s: cannot read the pinned versions from tests/e2e/{k8s,etcd,helm,runtime,crio,reference,cert-manager}/go.mod" >&2
  exit 1
fi

print_dir=0
print_versions=0
go_test=0
components=()
for arg in "$@"; do
  case "$arg" in
    --print-dir) print_dir=1 ;;
    --print-versions) print_versions=1 ;;
    --go-test) go_test=1 ;;
    etcd|kube-apiserver|kube-scheduler|kube-controller-manager|kubelet|kubectl|kubeletpeer|cri|gosdk-driver|gosdk-publisher|gosdk-minimal|helm|\
    containerd|ctr|containerd-shim-runc-v2|crictl|cni-bridge|cni-host-local|crio|crio-pinns|crio-copyimg|dra-example-kubeletplugin|\
    dra-example-controller|dra-example-webhook|dra-test-driver|cert-manager)
      components+=("$arg") ;;
    runtime) components+=(containerd ctr containerd-shim-runc-v2 crictl cni-bridge cni-host-local) ;;
    runtime-crio) components+=(crio crio-pinns crio-copyimg crictl cni-bridge cni-host-local) ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {print; next} {exit}' "$0"; exit 0 ;;
    *) echo "build-k8s: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
[ ${#components[@]} -gt 0 ] || components=(etcd kube-apiserver kube-scheduler)

# The supported Kubernetes releases: the default pin (tests/e2e/k8s) and each
# tests/e2e/k8s-<version> whose go.mod pins k8s.io/kubernetes at <version>.
k8s_versions="$K8S_DEFAULT_VERSION"
for d in "$here"/k8s-v*/; do
  [ -f "$d/go.mod" ] || continue
  v="$(basename "$d")"; v="${v#k8s-}"
  if [ "$v" != "$K8S_DEFAULT_VERSION" ] && [ "$(pinned "$d/go.mod" k8s.io/kubernetes)" = "$v" ]; then
    k8s_versions="$k8s_versions $v"
  fi
done
k8s_versions="$(echo "$k8s_versions" | tr ' ' '\n' | sort -V | tr '\n' ' ')"
k8s_versions="${k8s_versions% }"
if [ "$print_versions" = 1 ]; then tr ' ' '\n' <<<"$k8s_versions"; exit 0; fi
K8S_VERSION="${DRA_K8S_VERSION:-$K8S_DEFAULT_VERSION}"
if [[ " $k8s_versions " != *" $K8S_VERSION "* ]]; then
  echo "build-k8s: DRA_K8S_VERSION=$K8S_VERSION is not a supported Kubernetes release;" \
    "supported: $k8s_versions (default $K8S_DEFAULT_VERSION)" >&2
  exit 2
fi
# The module the release's own binaries are built from.
if [ "$K8S_VERSION" = "$K8S_DEFAULT_VERSION" ]; then k8s_dir="$here/k8s"; else k8s_dir="$here/k8s-$K8S_VERSION"; fi
cache_root="${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}"
bin_dir="$cache_root/k8s-$K8S_VERSION"

log() { echo "build-k8s: $*" >&2; }

# Another release than the default builds only its own binaries, and etcd
# (every cluster needs one; the same pinned etcd, relinked from the shared Go
# build cache), into its own directory: the other components are pinned by
# their own modules, not by the release, and are built for the default one.
if [ "$K8S_VERSION" != "$K8S_DEFAULT_VERSION" ] && [ "$go_test" = 0 ]; then
  for c in "${components[@]}"; do
    case "$c" in
      etcd|kube-apiserver|kube-scheduler|kube-controller-manager|kubelet|kubectl) ;;
      *)
        log "$c is not part of a Kubernetes release: with DRA_K8S_VERSION=$K8S_VERSION only etcd" \
          "kube-apiserver kube-scheduler kube-controller-manager kubelet kubectl are built;" \
          "build $c for the default release $K8S_DEFAULT_VERSION (without DRA_K8S_VERSION)" \
          "and take it from that directory"
        exit 2
        ;;
    esac
  done
fi

if [ -z "${GO:-}" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"; else GO=/usr/local/go/bin/go; fi
fi
[ -x "$GO" ] || { log "no Go toolchain (looked for go on PATH and /usr/local/go/bin/go)"; exit 1; }

# Builds run beside other work on a 2-core machine: be nice, and bounded.
jobs="${DRA_GO_JOBS:-2}"
export GOMAXPROCS="$jobs"
# A release whose module needs a newer Go than this one (1.38 needs Go 1.27)
# is built with the toolchain pinned in scripts/go-env.sh for that Go, which
# the go command takes from the module proxy for GOTOOLCHAIN, checks against
# the checksum database and keeps in GOMODCACHE; every other build uses the
# local Go.
. "$here/../../scripts/go-env.sh"
go_minor() { sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
needed_minor="$(awk '$1 == "go" {print $2; exit}' "$k8s_dir/go.mod" | sed 's/^/go/' | go_minor)"
local_minor="$("$GO" env GOVERSION | go_minor)"
if [ "$go_test" = 0 ] && [ "$needed_minor" -gt "$local_minor" ]; then
  toolchain="$(dra_go_toolchain_for "1.$needed_minor")" ||
    { log "tests/e2e/${k8s_dir#"$here"/} needs Go 1.$needed_minor and scripts/go-env.sh pins no toolchain for it"; exit 1; }
  export GOTOOLCHAIN="$toolchain"
else
  export GOTOOLCHAIN=local
fi
export GOFLAGS=-mod=mod
export CGO_ENABLED=0
export GOCACHE="$cache_root/go-build"
export GOMODCACHE="$cache_root/go-mod"
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"

mkdir -p "$bin_dir"

# Where component $1 is built to: CNI plugins go by their own names into cni/,
# the directory the node's containerd is given.
output_of() { case "$1" in cni-*) echo "$bin_dir/cni/${1#cni-}" ;; *) echo "$bin_dir/$1" ;; esac; }
# A binary counts as built when it exists and answers --version (the runtime's
# with its pinned version); the kubelet peer, the CRI stand-in and the Go SDK
# driver and publisher (our own sources) when they answer -h and are newer than
# their sources, cert-manager (our main) when it is newer than its sources and
# names its version; a CNI plugin when it answers CNI's VERSION command.
# (grep without -q reads all of the output: with -q it may exit first, and
# the binary's SIGPIPE then fails the pipeline under pipefail.)
binary_ok() {
  local bin; bin="$(output_of "$1")"
  [ -x "$bin" ] || return 1
  case "$1" in
    kubeletpeer|cri|gosdk-driver|gosdk-publisher|gosdk-minimal)
      [ -z "$(find "$(module_dir "$1")" -newer "$bin" -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \))" ] || return 1
      "$bin" -h >/dev/null 2>&1
      return
      ;;
    helm) "$bin" version --short 2>/dev/null | grep -x "$HELM_VERSION" >/dev/null; return ;;
    kubectl) "$bin" version --client 2>/dev/null | grep "$K8S_VERSION" >/dev/null; return ;;
    cni-*) CNI_COMMAND=VERSION "$bin" </dev/null 2>/dev/null | grep cniVersion >/dev/null; return ;;
    containerd-shim-runc-v2) "$bin" -v 2>/dev/null | grep "$CONTAINERD_VERSION" >/dev/null; return ;;
    containerd|ctr) "$bin" --version 2>/dev/null | grep "$CONTAINERD_VERSION" >/dev/null; return ;;
    crictl) "$bin" --version 2>/dev/null | grep "$CRICTL_VERSION" >/dev/null; return ;;
    crio) "$bin" --version 2>/dev/null | grep -x "crio version ${CRIO_VERSION#v}" >/dev/null; return ;;
    crio-copyimg) [ "$(cat "$bin.version" 2>/dev/null)" = "$CRIO_VERSION" ] && "$bin" --help >/dev/null 2>&1; return ;;
    # pinns has no --help (it exits 1 on any option it does not take).
    crio-pinns) [ "$(cat "$bin.version" 2>/dev/null)" = "$CRIO_VERSION" ]; return ;;
    # They have no --version: a stamp names the version they were built from.
    dra-example-kubeletplugin)
      [ "$(cat "$bin.version" 2>/dev/null)" = "$REFERENCE_VERSION" ] && [ -d "$bin_dir/dra-example-driver/demo" ] &&
        "$bin" --help >/dev/null 2>&1
      return ;;
    dra-example-controller|dra-example-webhook)
      [ "$(cat "$bin.version" 2>/dev/null)" = "$REFERENCE_VERSION" ] && "$bin" --help >/dev/null 2>&1
      return ;;
    cert-manager)
      [ -d "$bin_dir/cert-manager-deploy/charts/cert-manager" ] || return 1
      [ -z "$(find "$(module_dir "$1")" -newer "$bin" -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \))" ] || return 1
      "$bin" --version 2>/dev/null | grep "$CERT_MANAGER_VERSION" >/dev/null
      return ;;
    dra-test-driver) [ "$(cat "$bin.version" 2>/dev/null)" = "$K8S_VERSION" ] && "$bin" --help >/dev/null 2>&1; return ;;
  esac
  "$bin" --version >/dev/null 2>&1
}
version_line() {
  case "$1" in
    kubeletpeer) echo "kubelet peer on Kubernetes $K8S_VERSION" ;;
    cri) echo "CRI stand-in on k8s.io/cri-client $(pinned "$(module_dir cri)/go.mod" k8s.io/cri-client)" ;;
    gosdk-driver) echo "trivial driver on k8s.io/dynamic-resource-allocation $(pinned "$(module_dir gosdk-driver)/go.mod" k8s.io/dynamic-resource-allocation)" ;;
    gosdk-publisher) echo "resourceslice controller publisher on k8s.io/dynamic-resource-allocation $(pinned "$(module_dir gosdk-publisher)/go.mod" k8s.io/dynamic-resource-allocation)" ;;
    gosdk-minimal) echo "examples/minimal's twin on k8s.io/dynamic-resource-allocation $(pinned "$(module_dir gosdk-minimal)/go.mod" k8s.io/dynamic-resource-allocation)" ;;
    helm) echo "helm $("$bin_dir/helm" version --short)" ;;
    kubectl) "$bin_dir/kubectl" version --client 2>&1 | head -1 ;;
    cni-*) echo "CNI plugins $CNI_VERSION" ;;
    crio|crio-pinns|crio-copyimg) echo "CRI-O $CRIO_VERSION" ;;
    dra-example-kubeletplugin|dra-example-controller|dra-example-webhook) echo "dra-example-driver $REFERENCE_VERSION" ;;
    dra-test-driver) echo "Kubernetes' DRA test driver of $K8S_VERSION" ;;
    containerd-shim-runc-v2) "$bin_dir/$1" -v 2>&1 | head -2 | tr '\n' ' ' ;;
    *) "$bin_dir/$1" --version 2>&1 | head -1 ;;
  esac
}

# component -> module dir, package
module_dir() {
  case "$1" in
    etcd) echo "$here/etcd" ;;
    kubeletpeer) echo "$here/kubeletpeer" ;;
    cri) echo "$here/cri" ;;
    gosdk-driver|gosdk-publisher|gosdk-minimal) echo "$here/../../bench/gosdk" ;;
    helm) echo "$here/helm" ;;
    containerd|ctr|containerd-shim-runc-v2|crictl|cni-*) echo "$here/runtime" ;;
    crio|crio-pinns|crio-copyimg) echo "$here/crio" ;;
    dra-example-*) echo "$here/reference" ;;
    cert-manager) echo "$here/cert-manager" ;;
    *) echo "$k8s_dir" ;;
  esac
}
package_of() {
  case "$1" in
    etcd) echo "go.etcd.io/etcd/server/v3" ;;
    kubeletpeer|cri|gosdk-driver|cert-manager) echo "." ;;
    gosdk-publisher) echo "./cmd/publisher" ;;
    gosdk-minimal) echo "./cmd/minimal" ;;
    helm) echo "helm.sh/helm/v3/cmd/helm" ;;
    containerd|ctr|containerd-shim-runc-v2) echo "github.com/containerd/containerd/v2/cmd/$1" ;;
    crictl) echo "sigs.k8s.io/cri-tools/cmd/crictl" ;;
    crio) echo "github.com/cri-o/cri-o/cmd/crio" ;;
    crio-copyimg) echo "github.com/cri-o/cri-o/test/copyimg" ;;
    crio-pinns) echo "github.com/cri-o/cri-o/pinns" ;;
    dra-example-*) echo "sigs.k8s.io/dra-example-driver/cmd/$1" ;;
    dra-test-driver) echo "k8s.io/kubernetes/test/e2e/dra/test-driver" ;;
    cni-host-local) echo "github.com/containernetworking/plugins/plugins/ipam/host-local" ;;
    cni-*) echo "github.com/containernetworking/plugins/plugins/main/${1#cni-}" ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}
version_of() {
  case "$1" in
    etcd) echo "$ETCD_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    containerd|ctr|containerd-shim-runc-v2) echo "$CONTAINERD_VERSION" ;;
    cni-*) echo "$CNI_VERSION" ;;
    crictl) echo "$CRICTL_VERSION" ;;
    crio|crio-pinns|crio-copyimg) echo "$CRIO_VERSION" ;;
    dra-example-*) echo "$REFERENCE_VERSION" ;;
    cert-manager) echo "$CERT_MANAGER_VERSION" ;;
    *) echo "$K8S_VERSION" ;;
  esac
}
# containerd without the snapshotters that need cgo or host tools the node
# does not use (overlayfs and native stay).
# CRI-O with seccomp (libseccomp through cgo), without gpgme, btrfs and
# ostree (what its Makefile's hack/*_tag.sh pick on a machine without their
# headers).
tags_of() {
  case "$1" in
    containerd|ctr) echo "no_btrfs no_devmapper no_zfs" ;;
    crio|crio-copyimg) echo "seccomp containers_image_openpgp containers_image_ostree_stub exclude_graphdriver_btrfs btrfs_noversion" ;;
  esac
}
# The components that need cgo (CGO_ENABLED is off for the others).
cgo_of() { case "$1" in crio|crio-copyimg) echo 1 ;; *) echo 0 ;; esac; }

# The Kubernetes build stamps its version through -ldflags (hack/lib/version.sh);
# without it the binaries report v0.0.0 and the apiserver's /version is empty.
ldflags_of() {
  local c="$1"
  case "$c" in
    etcd|cri|gosdk-driver|gosdk-publisher|gosdk-minimal|dra-example-*|cert-manager|crio|crio-copyimg) echo "-s -w" ;;
    helm) echo "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" ;;
    containerd|ctr|containerd-shim-runc-v2)
      echo "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" ;;
    cni-*) echo "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_VERSION" ;;
    crictl) echo "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" ;;
    *)
      local v="$K8S_VERSION" major minor
      major="$(echo "${v#v}" | cut -d. -f1)"; minor="$(echo "${v#v}" | cut -d. -f2)"
      local date; date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
      local p
      for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
        printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean -X %s.buildDate=%s ' \
          "$p" "$v" "$p" "$major" "$p" "$minor" "$p" "$p" "$date"
      done
      echo "-s -w"
      ;;
  esac
}

if [ "$go_test" = 1 ]; then
  for c in "${components[@]}"; do
    case "$c" in kubeletpeer|cri|gosdk-driver|gosdk-publisher) ;; *) log "--go-test: $c has no tests of ours"; exit 2 ;; esac
    log "go test in ${c}: $(module_dir "$c")"
    (cd "$(module_dir "$c")" && nice -n 10 "$GO" test -p "$jobs" -count=1 ./...)
  done
  exit 0
fi

total_start=$SECONDS
log "Go: $("$GO" version | cut -d' ' -f3-), GOMAXPROCS=$GOMAXPROCS, cache $cache_root"
log "Kubernetes $K8S_VERSION (tests/e2e/${k8s_dir#"$here"/}), etcd $ETCD_VERSION -> $bin_dir"

downloaded=""
for c in "${components[@]}"; do
  if binary_ok "$c"; then
    log "$c: cached ($(version_line "$c"))"
    continue
  fi
  dir="$(module_dir "$c")"
  if [[ " $downloaded " != *" $dir "* ]]; then
    t=$SECONDS
    log "downloading the modules pinned by ${dir#"$here"/}/go.sum ..."
    (cd "$dir" && nice -n 10 "$GO" mod download) >&2
    log "  modules ready in $((SECONDS - t)) s"
    downloaded="$downloaded $dir"
  fi
  t=$SECONDS
  log "compiling $c $(version_of "$c") ($(package_of "$c")); the first time this takes minutes ..."
  out="$(output_of "$c")"
  mkdir -p "$(dirname "$out")"
  tmp="$(dirname "$out")/.$c.tmp.$$"
  if [ "$c" = crio-pinns ]; then
    # A small C program that `go build` does not build: compiled as its
    # Makefile does (static, so that it runs in any mount namespace).
    cc -std=c99 -Os -Wall -Wextra -static -o "$tmp" "$GOMODCACHE/github.com/cri-o/cri-o@$CRIO_VERSION"/pinns/src/*.c ||
      { rm -f "$tmp"; log "$c: cc failed"; exit 1; }
  else
    (cd "$dir" && CGO_ENABLED="$(cgo_of "$c")" nice -n 10 "$GO" build -p "$jobs" -trimpath -tags "$(tags_of "$c")" \
        -ldflags "$(ldflags_of "$c")" -o "$tmp" "$(package_of "$c")") >&2 || { rm -f "$tmp"; log "$c: go build failed"; exit 1; }
  fi
  mv -f "$tmp" "$out"
  case "$c" in crio-pinns|crio-copyimg) echo "$CRIO_VERSION" > "$out.version" ;; esac
  if [ "$c" = dra-example-kubeletplugin ]; then
    # Its demo specs and chart, from the module the binary was built from.
    ref_src="$GOMODCACHE/sigs.k8s.io/dra-example-driver@$REFERENCE_VERSION"
    rm -rf "$bin_dir/dra-example-driver"
    mkdir -p "$bin_dir/dra-example-driver"
    cp -r "$ref_src/demo" "$ref_src/deployments" "$bin_dir/dra-example-driver/"
    chmod -R u+w "$bin_dir/dra-example-driver"
  fi
  case "$c" in dra-example-*) echo "$REFERENCE_VERSION" > "$out.version" ;; esac
  if [ "$c" = cert-manager ]; then
    # Its CRDs and Helm chart, from the module it was built from.
    rm -rf "$bin_dir/cert-manager-deploy"
    mkdir -p "$bin_dir/cert-manager-deploy"
    cp -r "$GOMODCACHE/github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION/deploy/crds" \
      "$GOMODCACHE/github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION/deploy/charts" "$bin_dir/cert-manager-deploy/"
    chmod -R u+w "$bin_dir/cert-manager-deploy"
  fi
  if [ "$c" = dra-test-driver ]; then echo "$K8S_VERSION" > "$out.version"; fi
  if ! binary_ok "$c"; then log "$c: built, but it does not run ('$c --version' or '-h' fails)"; exit 1; fi
  log "  $c built in $((SECONDS - t)) s: $(version_line "$c")"
done

log "done in $((SECONDS - total_start)) s"
if [ "$print_dir" = 1 ]; then echo "$bin_dir"; fi
