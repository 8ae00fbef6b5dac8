#!/usr/bin/env bash
# Installs cert-manager into a cluster of cluster.sh with a containerd node,
# as a user's cluster has it: its CRDs, and its own Helm chart's
# ServiceAccounts, RBAC and Deployments of the controller and the CA
# injector, with only the images swapped for the ones build-images.sh makes
# from build-k8s.sh's cert-manager (a main of ours wiring the root module's
# controllers; see main.go for what is left out: ACME and the other
# external issuers, cert-manager's own webhook, leader election). Waits until
# both Deployments are available. Safe to run again.
#
# Usage: tests/e2e/cert-manager/install.sh CLUSTER_DIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
e2e="$(cd "$here/.." && pwd)"
log() { echo "cert-manager: $*" >&2; }
die() { log "$*"; exit 1; }

[ $# -eq 1 ] || die "usage: $0 CLUSTER_DIR"
cluster="$(cd "$1" && pwd)"
cluster_env="$("$e2e/cluster.sh" env "$cluster")"
[ "$(sed -n 's/^export DRA_E2E_RUNTIME=//p' <<<"$cluster_env")" = containerd ] ||
  die "$cluster has no containerd node: run DRA_E2E_RUNTIME=containerd tests/e2e/cluster.sh node-start $cluster"

# cert-manager, helm and kubectl are built for the default release whatever
# the cluster's (DRA_K8S_VERSION names the cluster's).
unset DRA_K8S_VERSION
bin_dir="$("$e2e/build-k8s.sh" --print-dir cert-manager helm kubectl)"
images="$("$e2e/build-images.sh" --print-dir cert-manager)"
version="$("$bin_dir/cert-manager" --version | awk '{print $2}')"
kubectl=("$bin_dir/kubectl" --kubeconfig "$cluster/admin.kubeconfig")
repository=registry.example.com/dra-cpp/cert-manager
for program in controller cainjector; do
  "$e2e/cluster.sh" image-import "$cluster" "$images/cert-manager-$program-$version.tar" \
    "$repository-$program:$version"
done

# Server-side: the Certificate CRD is larger than the last-applied annotation
# of a client-side apply may be.
"${kubectl[@]}" apply --server-side --force-conflicts -f "$bin_dir/cert-manager-deploy/crds" >/dev/null
"${kubectl[@]}" create namespace cert-manager --dry-run=client -o yaml | "${kubectl[@]}" apply -f - >/dev/null
server_version="$("${kubectl[@]}" version -o json | sed -n 's/.*"gitVersion": *"v\([^"]*\)".*/\1/p' | tail -1)"
chart="$bin_dir/cert-manager-deploy/charts/cert-manager"
templates=()
for template in serviceaccount.yaml rbac.yaml deployment.yaml \
  cainjector-serviceaccount.yaml cainjector-rbac.yaml cainjector-deployment.yaml; do
  templates+=(--show-only "templates/$template")
done
"$bin_dir/helm" template cert-manager "$chart" --namespace cert-manager --kube-version "$server_version" \
  "${templates[@]}" \
  --set image.repository="$repository-controller" --set image.tag="$version" --set image.pullPolicy=Never \
  --set cainjector.image.repository="$repository-cainjector" --set cainjector.image.tag="$version" \
  --set cainjector.image.pullPolicy=Never |
  "${kubectl[@]}" apply -f - >/dev/null
"${kubectl[@]}" -n cert-manager rollout status deployment/cert-manager deployment/cert-manager-cainjector \
  --timeout=5m >&2 || {
  "${kubectl[@]}" -n cert-manager get pods -o wide >&2 || true
  die "cert-manager's Deployments did not become available"
}
log "cert-manager $version running in namespace cert-manager"
