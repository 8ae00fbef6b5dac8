#!/usr/bin/env bash
# The example GPU and CPU drivers as an operator runs them, on a real node:
# a Kubernetes v1.37.2 control plane and a node whose kubelet runs on
# containerd 2.x with runc and a CNI bridge (tests/e2e/cluster.sh with
# DRA_E2E_RUNTIME=containerd), everything built from source and started in a
# temp dir. The drivers' images are built from examples/Dockerfile without a
# registry or a Docker engine (tests/e2e/build-images.sh: a Debian base from
# Debian's packages, buildah), imported into the node's containerd and
# installed with their Helm charts; workloads from the GPU example's demo
# specs run in real containers and print what they got; the GPU driver is
# upgraded to a new image tag under them, then killed and restarted by the
# kubelet. Called by scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
version="$(scripts/version.sh)"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

step "building dra-cpp and the example drivers"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${DRA_JOBS:-2}" --target gpu-driver cpu-driver >/dev/null

step "Kubernetes, containerd, runc's shim, crictl, the CNI plugins, helm and kubectl: built from source on the first run only (about 30 minutes on 2 cores), then cached"
bin=$(tests/e2e/build-k8s.sh --print-dir etcd kube-apiserver kube-scheduler kube-controller-manager kubelet \
  runtime helm kubectl 2>/dev/null)

step "the images, without a registry or a Docker engine: pause and busybox (umoci), the drivers (examples/Dockerfile, buildah)"
tests/e2e/build-images.sh --build-dir build pause busybox gpu-driver cpu-driver 2>&1 | sed 's/^build-images: //'

work=$(mktemp -d /tmp/dra-node-demo-XXXXXX)
cluster="$work/cluster"
cleanup() {
  [ -n "${DRA_DEMO_KEEP:-}" ] && { echo "kept: $cluster (tests/e2e/cluster.sh stop $cluster when done)"; return; }
  tests/e2e/cluster.sh stop "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step "a control plane and a node on containerd"
tests/e2e/cluster.sh start "$cluster" 2>&1 | tail -1
DRA_E2E_RUNTIME=containerd tests/e2e/cluster.sh node-start "$cluster" 2>&1 | tail -3
eval "$(tests/e2e/cluster.sh env "$cluster")"
node_dir=$DRA_E2E_NODE_DIR
kubectl() { "$bin/kubectl" "$@"; }
helm() { "$bin/helm" "$@"; }
crictl() { tests/e2e/cluster.sh crictl "$cluster" "$@" 2>/dev/null; }
run kubectl get nodes -o wide

step "the GPU driver's image in the node's containerd, installed with its chart"
tests/e2e/cluster.sh image-import "$cluster" "$root/build/images/gpu-driver-$version.tar" \
  registry.example.com/dra-cpp/gpu-driver:$version
run helm install gpu-example-driver examples/gpu/deploy/helm/gpu-example-driver \
  --namespace dra-gpu-example --create-namespace \
  --set kubeletDir="$node_dir/kubelet" --set cdiRoot="$DRA_E2E_CDI_DIR" --set fabricController.enabled=false \
  --set-json 'nodePlugin.args=["--device-metadata"]' | sed -n '1,4p'
run kubectl -n dra-gpu-example rollout status daemonset/gpu-example-driver --timeout=180s
run kubectl -n dra-gpu-example get pods -o wide
echo "its container, as containerd runs it:"
crictl ps --name plugin
run kubectl -n dra-gpu-example logs daemonset/gpu-example-driver | sed -n '1,6p'

step "the ResourceSlice it published with its pod's service account token"
for _ in $(seq 1 60); do
  [ "$(kubectl get resourceslices --field-selector spec.driver=gpu.example.com -o name | wc -l)" -gt 0 ] && break
  sleep 1
done
run kubectl get resourceslices -o custom-columns='NAME:.metadata.name,NODE:.spec.nodeName,DRIVER:.spec.driver,DEVICES:.spec.devices[*].name'

step "the GPU example's demo specs as they are, their containers on the suite's busybox image"
kubectl create namespace gpu-demo >/dev/null
for spec in single-gpu time-slicing; do
  sed 's|^\( *\)image: debian:12-slim|\1image: localhost/dra-e2e/busybox:1\n\1imagePullPolicy: Never|' \
    "examples/gpu/deploy/demo/$spec.yaml" | kubectl -n gpu-demo apply -f - >/dev/null
done
run kubectl -n gpu-demo wait --for=condition=Ready pod --all --timeout=180s
run kubectl -n gpu-demo get pods -o wide
run kubectl -n gpu-demo logs single-gpu
run kubectl -n gpu-demo logs time-sliced -c first
run kubectl -n gpu-demo exec single-gpu -- sh -c 'ls -l /dev | grep mock-gpu; find /var/run/kubernetes.io -name "*.json" -exec cat {} \;'
echo
echo "the CDI spec files containerd applied ($DRA_E2E_CDI_DIR):"
ls "$DRA_E2E_CDI_DIR"

step "the CPU driver's chart on the same node, and a pod with an exclusive CPU, pinned to it through containerd's NRI"
tests/e2e/cluster.sh image-import "$cluster" "$root/build/images/cpu-driver-$version.tar" \
  registry.example.com/dra-cpp/cpu-driver:$version
helm install cpu-example-driver examples/cpu/deploy/helm/cpu-example-driver --namespace dra-cpu-example \
  --create-namespace --set kubeletDir="$node_dir/kubelet" --set cdiRoot="$DRA_E2E_CDI_DIR" >/dev/null
run kubectl -n dra-cpu-example rollout status daemonset/cpu-example-driver --timeout=180s
kubectl -n gpu-demo apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-cpu
spec:
  spec:
    devices:
      requests:
      - name: cpus
        exactly:
          deviceClassName: cpu.example.com
          capacity:
            requests:
              cpu.example.com/cpu: "1"
---
apiVersion: v1
kind: Pod
metadata:
  name: pinned
spec:
  containers:
  - name: app
    image: localhost/dra-e2e/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "env | grep ^DRA_ && grep Cpus_allowed_list /proc/self/status && sleep infinity"]
    resources:
      claims:
      - name: cpus
  resourceClaims:
  - name: cpus
    resourceClaimTemplateName: one-cpu
EOF
run kubectl -n gpu-demo wait --for=condition=Ready pod/pinned --timeout=180s
run kubectl -n gpu-demo logs pinned
run kubectl -n dra-cpu-example logs daemonset/cpu-example-driver | grep -E "runtime.s NRI|Pinned container.*gpu-demo/pinned"

step "helm upgrade of the GPU driver to a new image tag under the running workloads: the DaemonSet rolls (maxSurge 1)"
tests/e2e/cluster.sh image-import "$cluster" "$root/build/images/gpu-driver-$version.tar" \
  registry.example.com/dra-cpp/gpu-driver:$version-upgrade
driver_pod() { kubectl -n dra-gpu-example get pods -l app.kubernetes.io/name=gpu-example-driver -o name; }
old_pod=$(driver_pod)
run helm upgrade gpu-example-driver examples/gpu/deploy/helm/gpu-example-driver --namespace dra-gpu-example \
  --reuse-values --set "image.tag=$version-upgrade" >/dev/null
run kubectl -n dra-gpu-example rollout status daemonset/gpu-example-driver --timeout=180s
run kubectl -n dra-gpu-example wait --for=delete "$old_pod" --timeout=180s
new_pod=$(driver_pod)
run kubectl -n dra-gpu-example get "$new_pod" -o custom-columns='NAME:.metadata.name,IMAGE:.spec.containers[0].image,READY:.status.containerStatuses[0].ready'
echo "the workloads ran on through it:"
run kubectl -n gpu-demo get pods

step "the GPU driver's process killed (SIGKILL) in its container: the kubelet starts it again"
plugin=$(crictl ps --name plugin --label "io.kubernetes.pod.name=${new_pod#pod/}" -q)
pid=$(crictl inspect "$plugin" | python3 -c 'import json, sys; print(json.load(sys.stdin)["info"]["pid"])')
run kill -9 "$pid"
run kubectl -n dra-gpu-example wait "$new_pod" --for=jsonpath='{.status.containerStatuses[0].restartCount}'=1 \
  --timeout=180s
run kubectl -n dra-gpu-example wait "$new_pod" --for=condition=Ready --timeout=180s
run kubectl -n dra-gpu-example get pods

step "clean-up: the workloads go (each claim unprepared), then the drivers (helm uninstall)"
run kubectl -n gpu-demo delete pods --all --grace-period=1
run kubectl delete namespace gpu-demo --timeout=180s
run helm uninstall gpu-example-driver --namespace dra-gpu-example --wait
run helm uninstall cpu-example-driver --namespace dra-cpu-example --wait
echo "the CDI spec dir now: $(ls "$DRA_E2E_CDI_DIR" | wc -l) files"
