#!/usr/bin/env bash
# The main demo. Installs what is missing, then:
#   scripts/demo.sh             the example GPU and CPU drivers as an operator
#                               runs them: their images (built without a
#                               registry or Docker), installed with their Helm
#                               charts on a real control plane and a node on
#                               containerd, workloads in real containers
#                               (scripts/demo-node.sh; the first run builds
#                               Kubernetes and containerd from source, about 30
#                               minutes on 2 cores; needs root or sudo)
#   scripts/demo.sh --stand-in  the drivers run by hand on a node whose runtime
#                               is the suite's CRI stand-in: fabric binding
#                               conditions, a GPU going bad and its pod evicted,
#                               the CPU driver's node-allocatable accounting
#                               (scripts/demo-drivers.sh)
#   scripts/demo.sh --quick     the GPU driver against the local API server
#                               fixture, driven by dractl as the kubelet would,
#                               in seconds (scripts/demo-quick.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
. scripts/go-env.sh
dra_use_go
case "${1:-}" in
  "") exec scripts/demo-node.sh ;;
  --stand-in) exec scripts/demo-drivers.sh ;;
  --quick) exec scripts/demo-quick.sh ;;
  *) echo "usage: scripts/demo.sh [--stand-in | --quick]" >&2; exit 2 ;;
esac
