#!/usr/bin/env bash
# The main demo. Installs what is missing, then:
#   scripts/demo.sh          the example GPU and CPU drivers on a real Kubernetes
#                            control plane and node (scripts/demo-drivers.sh; the
#                            first run builds Kubernetes from source, about 20
#                            minutes on 2 cores; needs root or sudo for the node)
#   scripts/demo.sh --quick  the GPU driver against the local API server
#                            fixture, driven by dractl as the kubelet would,
#                            in seconds (scripts/demo-quick.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
. scripts/go-env.sh
dra_use_go
case "${1:-}" in
  "") exec scripts/demo-drivers.sh ;;
  --quick) exec scripts/demo-quick.sh ;;
  *) echo "usage: scripts/demo.sh [--quick]" >&2; exit 2 ;;
esac
