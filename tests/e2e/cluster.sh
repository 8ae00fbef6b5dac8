#!/usr/bin/env bash
# A throwaway Kubernetes control plane for the e2e tests: etcd, kube-apiserver
# (HTTPS, RBAC, the DRA feature gates on) and kube-scheduler, all on 127.0.0.1
# with free ports, everything (certificates, tokens, kubeconfigs, data, logs,
# pid files) inside one directory. Two clusters in two directories never
# collide.
#
#   cluster.sh start DIR   build the binaries if needed (build-k8s.sh), start
#                          the cluster, wait until it is ready; a cluster still
#                          running from an earlier start in DIR is stopped first
#   cluster.sh stop DIR    stop everything started in DIR (SIGTERM, then SIGKILL
#                          after 10 s), remove the etcd data; logs are kept
#   cluster.sh env DIR     print shell exports for the running cluster:
#                          eval "$(tests/e2e/cluster.sh env DIR)"
#   cluster.sh status DIR  exit 0 when every process of DIR is alive and
#                          /readyz answers ok
#   cluster.sh apiserver-stop DIR   stop the kube-apiserver alone (an outage)
#   cluster.sh apiserver-start DIR  start it again, same port and flags; waits
#                                   until /readyz is ok
#   cluster.sh etcd-compact DIR     move etcd's revision on and compact its
#                                   history (watches resuming from before get 410)
#
# A node, on request (the tests that need none stay fast), on the cluster of DIR:
#   cluster.sh node-start DIR       kube-controller-manager, a container runtime
#                                   and a real kubelet (node $DRA_E2E_NODE_NAME,
#                                   default e2e-node) in a mount namespace of the
#                                   node's own, root dir NODE/kubelet (NODE:
#                                   /tmp/dn.*, named in DIR/node-dir); waits
#                                   until the Node is Ready. Needs root (or sudo
#                                   without a password). The runtime is
#                                   $DRA_E2E_RUNTIME:
#                                   stand-in (default) the CRI stand-in
#                                     (tests/e2e/cri): no container runs, it
#                                     records what CRI asked for
#                                   containerd  containerd 2.x with runc and a CNI
#                                     bridge network (dra-e2e<N>, 10.244.<7+N>.0/24,
#                                     N the cluster's network slot, below),
#                                     the pause, busybox and debian:12-slim images of
#                                     build-images.sh imported; pods reach the
#                                     kube-apiserver as the kubernetes Service
#                                     (10.0.<N>.1:443 on lo, service_proxy.py)
#                                   crio  CRI-O with conmon and runc (Debian's),
#                                     the same network, images and Service
#                                   (containerd and crio: "a real runtime" below)
#   cluster.sh kubelet-restart DIR  stop the kubelet and start it again (same
#                                   root dir, checkpoints kept)
#   cluster.sh runtime-restart DIR  a real runtime: stop the kubelet and the
#                                   runtime, empty the CDI spec dir (what a
#                                   reboot does to /var/run/cdi), start both again
#   cluster.sh runtime-upgrade DIR  a real runtime: restart the runtime alone
#                                   (an upgrade; containers keep running)
#   cluster.sh image-import DIR TAR NAME
#                                   a real runtime: import the OCI archive TAR
#                                   as image NAME (build-images.sh makes them)
#   cluster.sh crictl DIR ARGS...   a real runtime: crictl ARGS against it, in
#                                   the node's mount namespace
#   cluster.sh node-stop DIR        stop them, remove every pod, network device,
#                                   address and mount of the node; the last node
#                                   of the machine to stop restores the sysctls,
#                                   iptables chains and mount points the kubelet,
#                                   CNI and the node made (`stop` does this too)
#
# Two clusters in two directories run side by side on one machine: each
# stops only the processes it started (pid files; a containerd node's shims
# by its own containerd socket, a CRI-O node's conmons by its directory), and `start` claims a network slot N, free
# or left by a cluster whose directory no longer holds it, which names the
# node's bridge, pod subnet and Service range (/tmp/dra-e2e-net, 64 slots).
#   `env` then also prints DRA_E2E_NODE_NAME, DRA_E2E_NODE_DIR,
#   DRA_E2E_RUNTIME, DRA_E2E_PLUGINS_REGISTRY, DRA_E2E_PLUGINS_DIR,
#   DRA_E2E_CDI_DIR (the runtime's CDI spec dir), DRA_E2E_CRI_RECORD (stand-in:
#   what the runtime saw, tests/e2e/cri/README.md), DRA_E2E_CRI_ENDPOINT
#   (a real runtime: its CRI socket, for crictl), DRA_E2E_KUBELET_URL (its HTTPS
#   API: /metrics with pki/admin.crt), DRA_E2E_NODE_BIN (the kubelet's and
#   kube-controller-manager's release) and DRA_E2E_NODE_TOOLS (the runtime's
#   binaries, crictl among them with a real runtime).
#
# What DIR holds after start:
#   admin.kubeconfig           user "admin" (group system:masters)
#   scheduler.kubeconfig       user system:kube-scheduler (bootstrap RBAC roles)
#   driver-<name>.kubeconfig   user system:serviceaccount:dra-system:<name> (no
#                              RBAC rights: tests grant what they need)
#   unprivileged.kubeconfig    user system:serviceaccount:dra-system:unprivileged
#                              (no rights, and no test may grant it any)
#   kubelet.kubeconfig         user system:node:<node>, group system:nodes (the
#                              apiserver runs the Node authorizer and NodeRestriction)
#   controller-manager.kubeconfig  user system:kube-controller-manager (system:masters)
#   pki/ca.crt                 the CA of the serving certificate
#   pki/other-ca.crt           an unrelated CA (for "wrong CA" tests)
#   pki/admin.crt, admin.key   an admin client certificate (system:masters)
#   tokens.csv                 the apiserver's --token-auth-file
#   cluster.env                the values `env` prints
#   logs/*.log, pids/*.pid
#
# Environment:
#   DRA_E2E_DRIVERS        driver service accounts to make tokens for
#                          (default "gpu-driver cpu-driver minimal-driver")
#   DRA_K8S_VERSION        the Kubernetes release of the control plane and
#                          node (build-k8s.sh: v1.35.4, v1.36.3, or the default
#                          v1.37.2); `start` records it in cluster.env and
#                          node-start runs the same release's kubelet and
#                          kube-controller-manager
#   DRA_E2E_FEATURE_GATES  replaces the release's feature gate list below
#   DRA_E2E_RUNTIME_CONFIG replaces the release's --runtime-config below
#   DRA_E2E_WORKLOAD_API=1 adds the gates and API version of the workload
#                          API where a release has them only as alpha (1.36:
#                          release_workload_api below); start fails on others
#   DRA_E2E_APISERVER_ARGS, DRA_E2E_SCHEDULER_ARGS  extra flags
#   DRA_K8S_BIN            use the binaries in this directory instead of
#                          running build-k8s.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# release_feature_gates VERSION: the gates the SDK's objects need on a server
# of that release, only gates the release knows (a component refuses to start
# on an unknown one). They are all named, defaults too, so the list says what
# the suite runs with whatever the defaults become.
# v1.37: off by default DRANodeAllocatableResources, DRAListTypeAttributes,
#   DRAPartitionableDevicesType, DRAResourcePoolStatus, DRAOptionalNodeOperations,
#   DRADeviceCompatibilityGroups, DRADerivedAttributes (alpha); beta and on:
#   DRADeviceBindingConditions, DRAConsumableCapacity, DRAPartitionableDevices,
#   DRAFractionalCapacityRange, ResourceHealthStatus (device health in the pod
#   status, read by the kubelet); GA: DRADeviceTaints, DRADeviceTaintRules,
#   DRAResourceClaimDeviceStatus (locked on; naming them only logs a warning).
# v1.36: the alpha DRANodeAllocatableResources (the 1.36 shape, which the SDK
#   does not publish), DRAListTypeAttributes, DRAResourcePoolStatus; the rest
#   beta, on by default.
# v1.35: DRAExtendedResource, DRADeviceBindingConditions, DRAConsumableCapacity,
#   DRAPartitionableDevices, DRADeviceTaints, DRADeviceTaintRules and
#   ResourceHealthStatus alpha, DRAResourceClaimDeviceStatus beta.
release_feature_gates() {
  case "$1" in
    v1.35.*)
      echo "ResourceHealthStatus=true,DRAResourceClaimDeviceStatus=true,DRADeviceBindingConditions=true,DRAConsumableCapacity=true,DRAPartitionableDevices=true,DRADeviceTaints=true,DRADeviceTaintRules=true,DRAExtendedResource=true" ;;
    v1.36.*)
      echo "ResourceHealthStatus=true,DRAResourceClaimDeviceStatus=true,DRADeviceBindingConditions=true,DRAConsumableCapacity=true,DRAPartitionableDevices=true,DRADeviceTaints=true,DRADeviceTaintRules=true,DRANodeAllocatableResources=true,DRAListTypeAttributes=true,DRAResourcePoolStatus=true,DRAExtendedResource=true" ;;
    *)
      echo "ResourceHealthStatus=true,DRAResourceClaimDeviceStatus=true,DRADeviceBindingConditions=true,DRAConsumableCapacity=true,DRAPartitionableDevices=true,DRADeviceTaints=true,DRADeviceTaintRules=true,DRANodeAllocatableResources=true,DRAListTypeAttributes=true,DRAPartitionableDevicesType=true,DRAResourcePoolStatus=true,DRAOptionalNodeOperations=true,DRADeviceCompatibilityGroups=true,DRADerivedAttributes=true,DRAFractionalCapacityRange=true" ;;
  esac
}
# release_runtime_config VERSION: resource.k8s.io/v1 is on by default;
# v1alpha3 serves ResourcePoolStatusRequest (DRAResourcePoolStatus) and, before
# 1.36, DeviceTaintRule; the beta v1beta1 and v1beta2, off by default but
# still in every release here, are served as clusters that upgraded with
# them keep them (clients and webhooks of drivers still send v1beta1; a 1.36
# scheduler watches DeviceTaintRules in v1beta2 and without it never syncs).
release_runtime_config() {
  echo "resource.k8s.io/v1=true,resource.k8s.io/v1alpha3=true,resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true"
}
# release_workload_api VERSION: "GATES API" that serve the workload API as
# dra-example-driver's PodGroup demo uses it (scheduling.k8s.io/v1alpha2
# PodGroups, gang scheduling, claims of a PodGroup), for
# DRA_E2E_WORKLOAD_API=1; empty for a release that has no such version
# (1.35: v1alpha1 Workloads; 1.37 and 1.38: v1beta1 and v1alpha3). In 1.36
# all three gates are alpha, off by default.
release_workload_api() {
  case "$1" in
    v1.36.*) echo "GenericWorkload=true,GangScheduling=true,DRAWorkloadResourceClaims=true scheduling.k8s.io/v1alpha2=true" ;;
  esac
}
DRIVERS="${DRA_E2E_DRIVERS:-gpu-driver cpu-driver minimal-driver}"
# The one node `node-start` runs (the kubelet's --hostname-override).
NODE_NAME="${DRA_E2E_NODE_NAME:-e2e-node}"
# What the node's flows need of kube-controller-manager: claims from
# templates, pod claim status, deallocation and deletion of generated claims;
# evictions for device taints; the default ServiceAccount of new namespaces.
# Nothing that acts on every Node or object (node-lifecycle-controller,
# garbage-collector-controller): the tests that run beside the node's keep
# objects of their own that such a controller would change (the deploy
# tests' DaemonSets, say, whose pods would take the node's CPUs).
CONTROLLERS="${DRA_E2E_CONTROLLERS:-resourceclaim-controller,device-taint-eviction-controller,serviceaccount-controller}"
# Written by the kubelet's container manager at start (setupKernelTunables),
# and by the CNI bridge plugin (a gateway turns on forwarding); node-start
# saves them and node-stop puts them back.
NODE_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward"
# What nodes change on the machine itself, for all of them (two clusters'
# nodes may overlap): the sysctls' values, the iptables chains that exist and
# the mount points the node namespaces need are saved by the first node to
# start; the last to stop puts them back. holders/ has a file per running
# node, named after its directory.
MACHINE_STATE=/tmp/dra-e2e-machine
NODE_MOUNT_POINTS="/run/containerd /run/crio /run/cdi /run/nri /var/lib/containers"
# Network slots: file N holds the directory of the cluster that claimed it.
NET_SLOTS=/tmp/dra-e2e-net
RUNTIME="${DRA_E2E_RUNTIME:-stand-in}"
case "$RUNTIME" in stand-in|containerd|crio) ;; *) echo "cluster: DRA_E2E_RUNTIME=$RUNTIME: use stand-in, containerd or crio" >&2; exit 2 ;; esac
# Where pods really run, kube-controller-manager runs what it runs on a
# user's cluster (kubeadm's: every controller on by default, the
# service-account token and CSR signing ones with their keys): Deployments
# get pods (charts start controllers and webhooks as Deployments), the
# drivers run as DaemonSets, namespaces and what owns pods are collected,
# the node lifecycle is watched. The cluster of a real runtime's node runs
# only its own tests.
if [ "$RUNTIME" != stand-in ] && [ -z "${DRA_E2E_CONTROLLERS:-}" ]; then
  CONTROLLERS="*,$CONTROLLERS"
fi
# use_net_slot N: a real runtime's pod network and the Service range
# (its first address is the one pods use) of network slot N.
use_net_slot() {
  NET_SLOT="$1"
  POD_BRIDGE="dra-e2e$1"
  POD_SUBNET="10.244.$((7 + $1)).0/24"
  SERVICE_RANGE="10.0.$1.0/24"
  SERVICE_IP="10.0.$1.1"
}
# Images of build-images.sh, under these names in the node's runtime.
PAUSE_IMAGE=localhost/dra-e2e/pause:1
BUSYBOX_IMAGE=localhost/dra-e2e/busybox:1
DEBIAN_IMAGE=docker.io/library/debian:12-slim

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" >&2; exit 2; }

[ $# -ge 1 ] || usage
case "$1" in
  image-import) [ $# -eq 4 ] || usage ;;
  crictl) [ $# -ge 2 ] || usage ;;
  *) [ $# -eq 2 ] || usage ;;
esac
cmd="$1"
mkdir -p "$2"
dir="$(cd "$2" && pwd)"

# --- processes -----------------------------------------------------------

# Whether pid file $1 names a live process of ours (its command line holds
# the binary we started, so a recycled pid is never signalled).
pid_alive() {
  local f="$1" pid bin
  [ -f "$f" ] || return 1
  read -r pid bin < "$f" || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$bin"
}

# Whether process $1 exists and has not exited: a zombie whose parent is gone
# is reaped by init soon. Unlike pid_alive, true also right after the fork,
# before the child has exec'd the binary.
running() {
  [ -d "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# signal SIG PID: the kubelet of a non-root user runs under sudo.
signal() {
  kill "$1" "$2" 2>/dev/null || { [ ${#as_root[@]} -gt 0 ] && "${as_root[@]}" kill "$1" "$2" 2>/dev/null; } || true
}

stop_one() {
  local name="$1" f="$dir/pids/$1.pid" pid bin i
  [ -f "$f" ] || return 0
  if pid_alive "$f"; then
    read -r pid bin < "$f"
    signal -TERM "$pid"
    for i in $(seq 1 100); do
      running "$pid" || break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ] && pid_alive "$f"; then
      log "$name (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
      signal -KILL "$pid"
      sleep 0.2
    fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$f"
}

stop_all() {
  local n
  node_stop_all
  for n in kube-scheduler kube-apiserver etcd; do stop_one "$n"; done
  release_net_slot
  rm -rf "$dir/etcd-data" "$dir/cluster.env"
}

# claim_net_slot: the lowest network slot that is free, or whose cluster's
# directory no longer names it (a run that was killed, its directory gone).
claim_net_slot() {
  local slot
  mkdir -p "$NET_SLOTS"
  slot="$(flock "$NET_SLOTS/lock" /bin/sh -c '
    slots="$1"; dir="$2"
    for n in $(seq 0 63); do
      owner="$(cat "$slots/$n" 2>/dev/null)" || owner=""
      if [ -n "$owner" ] && [ "$owner" != "$dir" ] && [ "$(cat "$owner/net-slot" 2>/dev/null)" = "$n" ]; then
        continue
      fi
      echo "$n" > "$dir/net-slot" && echo "$dir" > "$slots/$n" && echo "$n" && exit 0
    done
    exit 1' sh "$NET_SLOTS" "$dir")" || die "all 64 network slots of $NET_SLOTS are taken by running clusters"
  use_net_slot "$slot"
}

release_net_slot() {
  [ -f "$dir/net-slot" ] || return 0
  local slot
  slot="$(cat "$dir/net-slot")"
  flock "$NET_SLOTS/lock" /bin/sh -c '[ "$(cat "$1" 2>/dev/null)" != "$2" ] || rm -f "$1"' sh "$NET_SLOTS/$slot" "$dir"
  rm -f "$dir/net-slot"
}

# start_daemon NAME BIN ARGS...: runs BIN in its own session, detached from
# our stdin/stdout/stderr (so a ctest fixture that starts the cluster does not
# wait for it), logging to logs/NAME.log.
start_daemon() {
  local name="$1" bin="$2"; shift 2
  mkdir -p "$dir/logs" "$dir/pids"
  setsid "$bin" "$@" < /dev/null >> "$dir/logs/$name.log" 2>&1 &
  echo "$! $bin" > "$dir/pids/$name.pid"
}

# wait_for NAME TIMEOUT_S CMD...: polls CMD until it succeeds; fails (showing
# the end of the log) if the process died or the time ran out.
wait_for() {
  local name="$1" timeout="$2"; shift 2
  local deadline=$((SECONDS + timeout))
  local pid
  read -r pid _ < "$dir/pids/$name.pid"
  while ! "$@" >/dev/null 2>&1; do
    if ! running "$pid"; then
      log "$name exited; the end of $dir/logs/$name.log:"
      tail -n 30 "$dir/logs/$name.log" >&2 || true
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      log "$name not ready after $timeout s; the end of $dir/logs/$name.log:"
      tail -n 30 "$dir/logs/$name.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

free_ports() {  # free_ports N: N distinct free TCP ports on 127.0.0.1
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# binaries NAME...: the directory that holds the binaries NAME...:
# DRA_K8S_BIN, or build-k8s.sh's cache (built there if missing) of release
# $DRA_K8S_VERSION. Components that are not part of a release (the CRI
# stand-in, the container runtime) come from the default release's directory:
# ask for them with DRA_K8S_VERSION empty.
binaries() {
  local d b
  if [ -n "${DRA_K8S_BIN:-}" ]; then d="$DRA_K8S_BIN"; else d="$("$here/build-k8s.sh" --print-dir "$@")"; fi
  for b in "$@"; do
    case "$b" in cni-*) b="cni/${b#cni-}" ;; esac
    [ -x "$d/$b" ] || die "$d/$b is missing: run tests/e2e/build-k8s.sh $b"
  done
  echo "$d"
}

# --- certificates, tokens, kubeconfigs -----------------------------------

make_pki() {
  local p="$dir/pki"
  rm -rf "$p"; mkdir -p "$p"
  (
    cd "$p"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 \
      -subj "/CN=dra-e2e-ca" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -x509 -newkey rsa:2048 -nodes -keyout other-ca.key -out other-ca.crt -days 30 \
      -subj "/CN=dra-e2e-unrelated-ca" -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null
    cat > serving.ext <<EOF
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
    openssl req -newkey rsa:2048 -nodes -keyout serving.key -out serving.csr -subj "/CN=kube-apiserver" 2>/dev/null
    openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out serving.crt \
      -days 30 -extfile serving.ext 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > client.ext
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=admin-cert" 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt \
      -days 30 -extfile client.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 600 ./*.key
  )
}

new_token() { openssl rand -hex 24; }

# write_kubeconfig FILE USER TOKEN
write_kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $dir/pki/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: e2e
  context:
    cluster: e2e
    user: $2
    namespace: default
current-context: e2e
EOF
  chmod 600 "$1"
}

make_identities() {
  local admin_token scheduler_token d t
  admin_token="$(new_token)"; scheduler_token="$(new_token)"
  {
    echo "$admin_token,admin,admin-uid,\"system:masters\""
    echo "$scheduler_token,system:kube-scheduler,kube-scheduler-uid"
  } > "$dir/tokens.csv"
  write_kubeconfig "$dir/admin.kubeconfig" admin "$admin_token"
  write_kubeconfig "$dir/scheduler.kubeconfig" system:kube-scheduler "$scheduler_token"
  # The node's kubelet (the Node authorizer and NodeRestriction judge it by
  # user and group, as they judge a kubelet's client certificate) and the
  # controller-manager (system:masters: one identity for all its controllers
  # instead of a service account each).
  t="$(new_token)"
  echo "$t,system:node:$NODE_NAME,node-uid,\"system:nodes\"" >> "$dir/tokens.csv"
  write_kubeconfig "$dir/kubelet.kubeconfig" "system:node:$NODE_NAME" "$t"
  t="$(new_token)"
  echo "$t,system:kube-controller-manager,kube-controller-manager-uid,\"system:masters\"" >> "$dir/tokens.csv"
  write_kubeconfig "$dir/controller-manager.kubeconfig" system:kube-controller-manager "$t"
  for d in $DRIVERS; do
    t="$(new_token)"
    echo "$t,system:serviceaccount:dra-system:$d,$d-uid,\"system:serviceaccounts,system:serviceaccounts:dra-system\"" \
      >> "$dir/tokens.csv"
    write_kubeconfig "$dir/driver-$d.kubeconfig" "system:serviceaccount:dra-system:$d" "$t"
  done
  # An identity that nothing may ever grant rights to (permission tests).
  t="$(new_token)"
  echo "$t,system:serviceaccount:dra-system:unprivileged,unprivileged-uid,\"system:serviceaccounts,system:serviceaccounts:dra-system\"" \
    >> "$dir/tokens.csv"
  write_kubeconfig "$dir/unprivileged.kubeconfig" system:serviceaccount:dra-system:unprivileged "$t"
  chmod 600 "$dir/tokens.csv"
  ADMIN_TOKEN="$admin_token"
}

# --- start ---------------------------------------------------------------

# admin_api PATH [CURL ARGS...]: a request to the apiserver as admin.
admin_api() {
  local path="$1"; shift
  curl -sf --max-time 5 --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "$@" \
    "https://127.0.0.1:$APISERVER_PORT$path"
}

readyz() { admin_api /readyz | grep -qx ok; }

# start_apiserver BIN_DIR: kube-apiserver on $APISERVER_PORT with etcd on
# $ETCD_PORT; returns once /readyz is ok. It reaches a Service (a webhook's,
# an aggregated API's) at its endpoints' pod addresses, which this machine
# routes to the node's bridge: there is no kube-proxy for cluster IPs.
start_apiserver() {
  local bin_dir="$1"
  # shellcheck disable=SC2086
  start_daemon kube-apiserver "$bin_dir/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --endpoint-reconciler-type none \
    --cert-dir "$dir/pki" \
    --tls-cert-file "$dir/pki/serving.crt" --tls-private-key-file "$dir/pki/serving.key" \
    --client-ca-file "$dir/pki/ca.crt" \
    --service-account-key-file "$dir/pki/sa.pub" --service-account-signing-key-file "$dir/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --token-auth-file "$dir/tokens.csv" \
    --kubelet-client-certificate "$dir/pki/admin.crt" --kubelet-client-key "$dir/pki/admin.key" \
    --kubelet-preferred-address-types InternalIP \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-cluster-ip-range "$SERVICE_RANGE" \
    --enable-aggregator-routing=true \
    --feature-gates "$FEATURE_GATES" \
    --runtime-config "$RUNTIME_CONFIG" \
    --profiling=false --v=1 \
    ${DRA_E2E_APISERVER_ARGS:-}
  wait_for kube-apiserver 180 readyz
}

# apiserver-stop / apiserver-start: the kube-apiserver alone, for outages.
apiserver_stop() {
  load_cluster_env
  stop_one kube-apiserver
}
apiserver_start() {
  load_cluster_env
  ETCD_PORT="${DRA_E2E_ETCD##*:}"
  pid_alive "$dir/pids/kube-apiserver.pid" && die "kube-apiserver is running"
  start_apiserver "$DRA_E2E_K8S_BIN"
  log "kube-apiserver started again"
}

# etcd-compact: moves etcd's revision on (puts outside /registry) and
# compacts its history up to the new revision, so that a watch resuming from
# an older resourceVersion gets 410 Gone once the kube-apiserver (re)starts.
etcd_compact() {
  load_cluster_env
  local key rev i
  key="$(printf '/dra-e2e/compaction' | base64 -w0)"
  for i in 1 2 3 4 5 6 7 8 9 10; do
    curl -sf --max-time 5 -X POST "$DRA_E2E_ETCD/v3/kv/put" \
      -d "{\"key\":\"$key\",\"value\":\"$(printf '%s' "$i" | base64 -w0)\"}" >/dev/null ||
      die "etcd put failed"
  done
  rev="$(curl -sf --max-time 5 -X POST "$DRA_E2E_ETCD/v3/kv/range" -d "{\"key\":\"$key\"}" |
    sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p')"
  [ -n "$rev" ] || die "no etcd revision"
  curl -sf --max-time 30 -X POST "$DRA_E2E_ETCD/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" \
    >/dev/null || die "etcd compaction failed"
  log "etcd compacted at revision $rev"
}

start() {
  local t0=$SECONDS bin_dir
  if pid_alive "$dir/pids/etcd.pid" || pid_alive "$dir/pids/kube-apiserver.pid" ||
     pid_alive "$dir/pids/kube-scheduler.pid"; then
    log "a cluster from an earlier start is still running in $dir: stopping it first"
  fi
  stop_all

  bin_dir="$(binaries etcd kube-apiserver kube-scheduler)"
  # The release as its own binary says it (DRA_K8S_BIN may hold any).
  K8S_VERSION="$("$bin_dir/kube-apiserver" --version | awk '{print $2}')"
  FEATURE_GATES="${DRA_E2E_FEATURE_GATES:-$(release_feature_gates "$K8S_VERSION")}"
  RUNTIME_CONFIG="${DRA_E2E_RUNTIME_CONFIG:-$(release_runtime_config "$K8S_VERSION")}"
  if [ "${DRA_E2E_WORKLOAD_API:-0}" = 1 ]; then
    local workload
    workload="$(release_workload_api "$K8S_VERSION")"
    [ -n "$workload" ] || die "DRA_E2E_WORKLOAD_API=1: Kubernetes $K8S_VERSION serves no scheduling.k8s.io/v1alpha2 (1.36 does)"
    FEATURE_GATES="$FEATURE_GATES,${workload% *}"
    RUNTIME_CONFIG="$RUNTIME_CONFIG,${workload#* }"
  fi

  rm -rf "$dir/logs" "$dir/pids"; mkdir -p "$dir/logs" "$dir/pids"
  # If anything below fails, leave nothing running.
  trap 'status=$?; if [ $status -ne 0 ]; then log "start failed: stopping what was started"; stop_all; fi' EXIT

  local ports
  read -r ETCD_PORT ETCD_PEER_PORT APISERVER_PORT SCHEDULER_PORT <<< "$(free_ports 4)"
  claim_net_slot
  make_pki
  make_identities

  log "etcd on 127.0.0.1:$ETCD_PORT (data $dir/etcd-data)"
  start_daemon etcd "$bin_dir/etcd" \
    --name e2e --data-dir "$dir/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --quota-backend-bytes 2147483648 --log-level warn
  wait_for etcd 60 curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

  log "kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
  start_apiserver "$bin_dir"

  # No --authentication/authorization-kubeconfig: the scheduler's own endpoint
  # then serves only /healthz, /readyz and /livez (to anyone), which is all the
  # suite reads, and it does not need the apiserver's front-proxy CA.
  log "kube-scheduler (health on https://127.0.0.1:$SCHEDULER_PORT)"
  # shellcheck disable=SC2086
  start_daemon kube-scheduler "$bin_dir/kube-scheduler" \
    --kubeconfig "$dir/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" \
    --cert-dir "$dir/pki/scheduler" \
    --leader-elect=false \
    --feature-gates "$FEATURE_GATES" \
    --profiling=false --v=1 \
    ${DRA_E2E_SCHEDULER_ARGS:-}
  wait_for kube-scheduler 60 curl -sfk --max-time 2 "https://127.0.0.1:$SCHEDULER_PORT/healthz"

  cat > "$dir/cluster.env" <<EOF
DRA_E2E_DIR=$dir
DRA_E2E_KUBECONFIG=$dir/admin.kubeconfig
DRA_E2E_SERVER=https://127.0.0.1:$APISERVER_PORT
DRA_E2E_CA_FILE=$dir/pki/ca.crt
DRA_E2E_ETCD=http://127.0.0.1:$ETCD_PORT
DRA_E2E_SCHEDULER_HEALTHZ=https://127.0.0.1:$SCHEDULER_PORT/healthz
DRA_E2E_K8S_BIN=$bin_dir
DRA_E2E_K8S_VERSION=$K8S_VERSION
DRA_E2E_FEATURE_GATES=$FEATURE_GATES
DRA_E2E_RUNTIME_CONFIG=$RUNTIME_CONFIG
DRA_E2E_NET_SLOT=$NET_SLOT
EOF
  trap - EXIT
  log "Kubernetes $K8S_VERSION ready in $((SECONDS - t0)) s: KUBECONFIG=$dir/admin.kubeconfig"
}


# --- the node: container runtime, kubelet, kube-controller-manager -------

# The node's files (the kubelet's root dir, CDI specs, the runtime's state)
# live in a short directory of their own, named in DIR/node-dir: a driver's
# registration socket is <root dir>/plugins_registry/<driver>-reg.sock (a
# driver of the Go helper before 0.37 adds -<pod UID>), and a Unix socket
# path may not exceed 107 bytes, which DIR (in a build tree, say) can use up
# alone. /tmp/dn.XXXX/kubelet/plugins_registry is 37 bytes, a real node's
# /var/lib/kubelet/plugins_registry 33: dra-example-driver v0.4.0's suite
# names its drivers dra-<6 letters>.example.com, whose
# <driver>-<pod UID>-reg.sock is 68 bytes.
node=""
[ ! -f "$dir/node-dir" ] || node="$(cat "$dir/node-dir")"

# The node needs root (a mount namespace of its own, the sysctls the kubelet
# writes, containers); a user with sudo gets it through sudo. An array, not
# a function: `function &` would record the pid of a subshell.
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo -n)

# The node's mount namespace: a process that holds it (its pid in
# NODE/node-ns.pid), with NODE/var-log over /var/log (the kubelet creates
# /var/log/containers) and, for a real runtime, NODE/run-<runtime> over
# /run/<runtime> (containerd's shims put their sockets there, whatever its
# state dir; CRI-O keeps what it has no setting for there), NODE/cdi over
# /run/cdi (=/var/run/cdi), so that a chart that mounts the CDI dir at its
# usual host path, as dra-example-driver's does, writes where the runtime
# reads, and NODE/nri over /run/nri, where NRI plugins find the runtime's
# NRI socket (/var/run/nri/nri.sock), and for CRI-O NODE/var-lib-containers
# over /var/lib/containers (its image library keeps a blob cache there, which
# no setting moves). The kubelet and the runtime run inside it, so that
# they see each other's mounts (the kubelet's volumes, the runtime's network
# namespaces) and none of them outlives the node.
start_node_namespace() {
  mkdir -p "$node/var-log" "$node/run-$NODE_RUNTIME" "$node/var-lib-containers" "$node/cdi" "$node/nri" "$node/cwd" "$dir/pids"
  "${as_root[@]}" setsid unshare --mount --propagation private -- /bin/sh -c '
    node="$1"
    mount --bind "$node/var-log" /var/log || exit 1
    if [ "$2" != stand-in ]; then
      mkdir -p "/run/$2" && mount --bind "$node/run-$2" "/run/$2" || exit 1
      mkdir -p /run/cdi && mount --bind "$node/cdi" /run/cdi || exit 1
      mkdir -p /run/nri && mount --bind "$node/nri" /run/nri || exit 1
    fi
    if [ "$2" = crio ]; then
      mkdir -p /var/lib/containers && mount --bind "$node/var-lib-containers" /var/lib/containers || exit 1
    fi
    echo $$ > "$node/node-ns.pid.tmp" && mv "$node/node-ns.pid.tmp" "$node/node-ns.pid" && exec sleep infinity' \
    sh "$node" "$NODE_RUNTIME" < /dev/null >> "$dir/logs/node-ns.log" 2>&1 &
  echo "$! sleep infinity" > "$dir/pids/node-ns.pid"
  wait_for node-ns 30 test -s "$node/node-ns.pid"
}

# in_node_namespace CMD...: CMD in the node's mount namespace, as root, in
# NODE/cwd: entering a mount namespace moves a process to its "/", and the
# kubelet removes what a glob of a container's log path matches, relative to
# its working directory when the path is (the CRI stand-in reports an empty
# one): run from "/", it deleted the machine's /bin symlink.
in_node_namespace() {
  "${as_root[@]}" nsenter --mount="/proc/$(cat "$node/node-ns.pid")/ns/mnt" --wd="$node/cwd" -- "$@"
}

# Stops the node and removes its directory; the CRI stand-in's record stays
# beside the logs (DIR/logs/cri-containers.json).
node_stop_all() {
  local n
  [ -z "$node" ] || load_node_env_if_any
  [ ! -f "$dir/net-slot" ] || use_net_slot "$(cat "$dir/net-slot")"
  stop_one kubelet
  [ "${NODE_RUNTIME:-stand-in}" = stand-in ] || stop_real_runtime_node
  for n in kube-controller-manager cri node-ns; do stop_one "$n"; done
  [ -n "$node" ] || return 0
  machine_state_leave
  if [ -f "$node/cri-containers.json" ]; then mkdir -p "$dir/logs" && cp "$node/cri-containers.json" "$dir/logs/"; fi
  "${as_root[@]}" rm -rf "$node"
  rm -f "$dir/node.env" "$dir/node-dir"
  node=""
}

# machine_state_enter: this node holds the machine state; the first holder
# saves it: the sysctls' values, the iptables chains of each table, which of
# the node namespaces' mount points exist.
machine_state_enter() {
  "${as_root[@]}" mkdir -p "$MACHINE_STATE/holders"
  "${as_root[@]}" flock "$MACHINE_STATE/lock" /bin/sh -c '
    state="$1"; holder="$2"; mount_points="$3"; shift 3
    if [ ! -f "$state/saved" ]; then
      for ipt in iptables ip6tables; do
        rm -f "$state/$ipt-chains"
        command -v "$ipt-save" >/dev/null 2>&1 || continue
        "$ipt-save" 2>/dev/null | awk "/^\\*/ {t = substr(\$0, 2)} /^:/ {print t, substr(\$1, 2)}" > "$state/$ipt-chains"
      done
      for m in $mount_points; do [ ! -e "$m" ] || echo "$m"; done > "$state/mount-points"
      for k in "$@"; do echo "$k=$(sysctl -n "$k")"; done > "$state/saved.tmp" && mv "$state/saved.tmp" "$state/saved"
    fi
    touch "$state/holders/$holder"' sh "$MACHINE_STATE" "$(basename "$node")" "$NODE_MOUNT_POINTS" $NODE_SYSCTLS
}

# machine_state_leave: the last node to stop puts the machine back: the
# sysctls, no iptables chain named KUBE-* that was not there (the kubelet's
# KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT, with the rules
# that jump to them), no mount point that was not there. Nodes whose
# directory is gone (a run that was killed) no longer count.
machine_state_leave() {
  [ -f "$MACHINE_STATE/holders/$(basename "$node")" ] || return 0
  local changed
  changed="$("${as_root[@]}" flock "$MACHINE_STATE/lock" /bin/sh -c '
    state="$1"; rm -f "$state/holders/$2"; mount_points="$3"
    for h in "$state"/holders/*; do [ ! -e "$h" ] || [ -d "/tmp/${h##*/}" ] || rm -f "$h"; done
    [ -z "$(ls -A "$state/holders")" ] && [ -f "$state/saved" ] || exit 0
    while read -r kv; do
      [ "$(sysctl -n "${kv%%=*}")" != "${kv#*=}" ] || continue
      sysctl -q -w "$kv" >/dev/null && printf " %s" "${kv%%=*}"
    done < "$state/saved"
    for ipt in iptables ip6tables; do
      [ -f "$state/$ipt-chains" ] || continue
      made="$("$ipt-save" 2>/dev/null | awk "/^\\*/ {t = substr(\$0, 2)} /^:KUBE-/ {print t, substr(\$1, 2)}" |
        grep -vxF -f "$state/$ipt-chains")" || true
      [ -n "$made" ] || continue
      echo "$made" | while read -r table chain; do
        "$ipt" -t "$table" -S | grep -E -- "^-A .* -j $chain( |\$)" | while read -r rule; do
          eval "\"\$ipt\" -t \"\$table\" -D ${rule#-A }"
        done
      done
      echo "$made" | while read -r table chain; do "$ipt" -t "$table" -F "$chain"; done
      echo "$made" | while read -r table chain; do "$ipt" -t "$table" -X "$chain" && printf " %s:%s/%s" "$ipt" "$table" "$chain"; done
    done
    for m in $mount_points; do
      grep -qxF "$m" "$state/mount-points" || ! rmdir "$m" 2>/dev/null || printf " %s" "$m"
    done
    rm -f "$state/saved"' sh "$MACHINE_STATE" "$(basename "$node")" "$NODE_MOUNT_POINTS")"
  [ -z "$changed" ] || log "put back what the nodes changed on the machine:$changed"
}

# The node's address: the first global IPv4 address of a device other than
# lo, as on a real node (127.0.0.1 is every machine's own; a containerd
# node's Service address is on lo).
node_ip() {
  ip -4 -o addr show scope global | awk '$2 != "lo" {sub("/.*", "", $4); print $4; exit}'
}

runtime_endpoint() {
  case "$NODE_RUNTIME" in
    containerd) echo "unix://$node/containerd/containerd.sock" ;;
    crio) echo "unix://$node/crio/crio.sock" ;;
    *) echo "unix://$node/cri.sock" ;;
  esac
}

write_kubelet_config() {
  local gates_yaml="" kv
  for kv in ${FEATURE_GATES//,/ }; do
    gates_yaml="$gates_yaml  ${kv%%=*}: ${kv#*=}"$'\n'
  done
  cat > "$node/kubelet-config.yaml" <<EOF
# A kubelet on a machine whose cgroup tree it does not own: no QoS or
# node-allocatable cgroups; no refusal of swap or cgroup v1; free ports and
# no read-only port; nothing outside NODE but the sysctls (restored by
# node-stop) and what the node's mount namespace covers. It listens on every
# address: the kube-apiserver reaches it at the node's IP (logs, exec).
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $dir/pki/ca.crt
authorization:
  mode: AlwaysAllow
tlsCertFile: $node/kubelet.crt
tlsPrivateKeyFile: $node/kubelet.key
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: $(runtime_endpoint)
imageServiceEndpoint: $(runtime_endpoint)
podLogsDir: $node/pod-logs
resolvConf: ""
syncFrequency: 10s
nodeStatusUpdateFrequency: 2s
evictionHard:
  memory.available: "1Mi"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
featureGates:
$gates_yaml
EOF
}

make_kubelet_cert() {
  (
    cd "$node"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:%s,DNS:%s\n' \
      "$NODE_IP" "$NODE_NAME" > kubelet.ext
    openssl req -newkey rsa:2048 -nodes -keyout kubelet.key -out kubelet.csr -subj "/CN=$NODE_NAME" 2>/dev/null
    openssl x509 -req -in kubelet.csr -CA "$dir/pki/ca.crt" -CAkey "$dir/pki/ca.key" -CAcreateserial \
      -out kubelet.crt -days 30 -extfile kubelet.ext 2>/dev/null
    rm -f kubelet.csr kubelet.ext "$dir/pki/ca.srl"
    chmod 600 kubelet.key
  )
}

kubelet_healthz() { curl -sf --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" | grep -qx ok; }

start_kubelet() {
  mkdir -p "$dir/logs" "$dir/pids"
  "${as_root[@]}" setsid nsenter --mount="/proc/$(cat "$node/node-ns.pid")/ns/mnt" --wd="$node/cwd" -- \
    "$NODE_BIN/kubelet" \
    --config "$node/kubelet-config.yaml" \
    --kubeconfig "$dir/kubelet.kubeconfig" \
    --root-dir "$node/kubelet" \
    --cert-dir "$node/kubelet/pki" \
    --hostname-override "$NODE_NAME" \
    --node-ip "$NODE_IP" \
    --v="${DRA_E2E_KUBELET_V:-2}" \
    < /dev/null >> "$dir/logs/kubelet.log" 2>&1 &
  echo "$! $NODE_BIN/kubelet" > "$dir/pids/kubelet.pid"
  wait_for kubelet 60 kubelet_healthz
}

# --- the containerd node -------------------------------------------------

write_containerd_config() {
  mkdir -p "$node/containerd"
  cat > "$node/containerd/config.toml" <<EOF
# containerd for the suite's node: everything it keeps under NODE/containerd;
# CDI specs from NODE/cdi; pods on the CNI bridge $POD_BRIDGE; NRI on, its
# socket inside NODE.
version = 3
root = "$node/containerd/root"
state = "$node/containerd/state"
[grpc]
  address = "$node/containerd/containerd.sock"
[ttrpc]
  address = "$node/containerd/containerd.sock.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "$node/containerd/opt"
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = "$node/nri/nri.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  # Root without CAP_SYS_RESOURCE (a sandboxed machine) may not lower a
  # process's oom_score_adj; sandboxes ask for -998.
  restrict_oom_score_adj = true
  cdi_spec_dirs = ["$node/cdi"]
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$NODE_TOOLS/cni"]
    conf_dir = "$node/cni/net.d"
    use_internal_loopback = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    BinaryName = "$(command -v runc)"
    Root = "$node/containerd/runc"
EOF
}

# The pods' network, the same for every real runtime. No masquerade and no
# port maps: nothing of the network leaves the machine, and no iptables rule
# is made. The gateway lets the kubelet reach pod IPs (probes) and pods reach
# the Service address on lo.
write_cni_config() {
  mkdir -p "$node/cni/net.d"
  cat > "$node/cni/net.d/10-dra-e2e.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "dra-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$POD_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$node/cni/ipam"
      }
    }
  ]
}
EOF
}

node_ctr() { in_node_namespace "$NODE_TOOLS/ctr" --address "$node/containerd/containerd.sock" -n k8s.io "$@"; }
node_crictl() { in_node_namespace "$NODE_TOOLS/crictl" --runtime-endpoint "$(runtime_endpoint)" "$@"; }

start_containerd() {
  # PATH: containerd finds containerd-shim-runc-v2 there.
  "${as_root[@]}" setsid nsenter --mount="/proc/$(cat "$node/node-ns.pid")/ns/mnt" --wd="$node/cwd" -- env PATH="$NODE_TOOLS:$PATH" \
    "$NODE_TOOLS/containerd" --config "$node/containerd/config.toml" \
    < /dev/null >> "$dir/logs/containerd.log" 2>&1 &
  echo "$! $NODE_TOOLS/containerd" > "$dir/pids/containerd.pid"
  wait_for containerd 60 node_crictl info
}

# image_import TAR NAME: the OCI archive TAR as image NAME of the node's
# runtime.
image_import() {
  case "$NODE_RUNTIME" in
    containerd) containerd_image_import "$@" ;;
    crio) crio_image_import "$@" ;;
  esac
}

# containerd_image_import TAR NAME: into containerd's CRI namespace. The
# archive names its image (the index's ref.name: a whole reference, or a tag
# of NAME's repository); under another tag, NAME is added as a second name.
containerd_image_import() {
  local repository="${2%:*}" ref
  ref="$(tar -xOf "$1" index.json | python3 -c 'import json, sys
print(json.load(sys.stdin)["manifests"][0].get("annotations", {}).get("org.opencontainers.image.ref.name", ""))')"
  [ -n "$ref" ] || die "$1 names no image (org.opencontainers.image.ref.name)"
  case "$ref" in */*|*:*) ;; *) ref="$repository:$ref" ;; esac
  # ctr warns on every call that cgroup v1 is deprecated: its stderr is
  # shown only when it fails.
  node_ctr images import --base-name "$repository" "$1" >/dev/null 2>"$node/ctr.err" ||
    { cat "$node/ctr.err" >&2; die "cannot import $1 into the node's containerd"; }
  [ "$ref" = "$2" ] || node_ctr images tag --force "$ref" "$2" >/dev/null 2>"$node/ctr.err" ||
    { cat "$node/ctr.err" >&2; die "cannot name $ref $2"; }
}

# The kubernetes Service (KUBERNETES_SERVICE_HOST/PORT in every container)
# at its cluster IP, on lo.
start_service_proxy() {
  "${as_root[@]}" ip addr replace "$SERVICE_IP/32" dev lo
  # Root, for port 443.
  "${as_root[@]}" setsid "$here/service_proxy.py" "$SERVICE_IP" 443 127.0.0.1 "$APISERVER_PORT" \
    < /dev/null >> "$dir/logs/service-proxy.log" 2>&1 &
  echo "$! $here/service_proxy.py" > "$dir/pids/service-proxy.pid"
  wait_for service-proxy 30 grep -qx ready "$dir/logs/service-proxy.log"
}

# A real runtime's node: the runtime, the images every flow needs, the
# kubernetes Service.
start_real_runtime_node() {
  local images
  images="$("$here/build-images.sh" --print-dir pause busybox debian-base)"
  write_cni_config
  case "$NODE_RUNTIME" in
    containerd)
      write_containerd_config
      log "containerd $("$NODE_TOOLS/containerd" --version | awk '{print $3}') on $node/containerd/containerd.sock, runc $(runc --version | awk 'NR == 1 {print $3}'), pods on $POD_BRIDGE ($POD_SUBNET)"
      ;;
    crio)
      write_crio_config
      log "CRI-O $("$NODE_TOOLS/crio" --version 2>/dev/null | awk 'NR == 1 {print $3}') on $node/crio/crio.sock, conmon $(conmon --version | awk 'NR == 1 {print $3}'), runc $(runc --version | awk 'NR == 1 {print $3}'), pods on $POD_BRIDGE ($POD_SUBNET)"
      ;;
  esac
  start_runtime
  image_import "$images/pause.tar" "$PAUSE_IMAGE"
  image_import "$images/busybox.tar" "$BUSYBOX_IMAGE"
  image_import "$images/debian-12-slim.oci.tar" "$DEBIAN_IMAGE"
  log "the kubernetes Service: $SERVICE_IP:443 -> 127.0.0.1:$APISERVER_PORT"
  start_service_proxy
}

# Every pod gone through CRI (their networks torn down by CNI), then the
# runtime, what it left running of this node's containers (containerd's
# shims, CRI-O's conmons; another node's run beside), the bridge, the Service
# address. What is left of mounts goes with the node's mount namespace.
stop_real_runtime_node() {
  if pid_alive "$dir/pids/$NODE_RUNTIME.pid"; then
    node_crictl rmp --all --force >/dev/null 2>&1 || log "crictl rmp failed; $NODE_RUNTIME's state goes with NODE"
  fi
  stop_one "$NODE_RUNTIME"
  local monitors pid
  case "$NODE_RUNTIME" in
    containerd) monitors="^$NODE_TOOLS/containerd-shim-runc-v2 .*-address $node/containerd/containerd.sock( |\$)" ;;
    crio) monitors="^$(command -v conmon) .* --exit-dir $node/crio/" ;;
  esac
  for pid in $(pgrep -f "$monitors" || true); do
    signal -KILL "$pid"
  done
  stop_one service-proxy
  ! ip link show "$POD_BRIDGE" >/dev/null 2>&1 || "${as_root[@]}" ip link del "$POD_BRIDGE"
  ! ip -4 addr show dev lo | grep -q " $SERVICE_IP/32 " || "${as_root[@]}" ip addr del "$SERVICE_IP/32" dev lo
}

# --- the CRI-O node -------------------------------------------------------

# CRI-O for the suite's node, as containerd's above: everything under
# NODE/crio, CDI specs from NODE/cdi, the same CNI network, NRI on with its
# socket inside NODE and its default validator rejecting every adjustment it
# can (hooks, seccomp, namespaces: the strictest a cluster may run; the CPU
# example adjusts only cpusets), images in a containers/storage of its own. Its OCI
# runtime is Debian's runc through tests/e2e/crio-runc (which takes the
# limits this machine cannot apply as containerd does), its monitor
# Debian's conmon, its cgroup manager cgroupfs as the kubelet's.
write_crio_config() {
  mkdir -p "$node/crio/conf.d"
  cat > "$node/crio/policy.json" <<EOF
{"default": [{"type": "insecureAcceptAnything"}]}
EOF
  cat > "$node/crio/crio.conf" <<EOF
[crio]
root = "$node/crio/storage"
runroot = "$node/crio/run/storage"
storage_driver = "overlay"
log_dir = "$node/crio/pods"
version_file = "$node/crio/run/version"
version_file_persist = "$node/crio/version"
clean_shutdown_file = "$node/crio/clean.shutdown"
[crio.api]
listen = "$node/crio/crio.sock"
stream_address = "127.0.0.1"
stream_port = "0"
[crio.runtime]
default_runtime = "runc"
cgroup_manager = "cgroupfs"
selinux = false
cdi_spec_dirs = ["$node/cdi"]
hooks_dir = []
container_exits_dir = "$node/crio/run/exits"
container_attach_socket_dir = "$node/crio/run"
namespaces_dir = "$node/crio/run/ns"
pinns_path = "$NODE_TOOLS/crio-pinns"
[crio.runtime.runtimes.runc]
runtime_path = "$here/crio-runc"
runtime_type = "oci"
runtime_root = "$node/crio/runc-state"
monitor_path = "$(command -v conmon)"
monitor_cgroup = "pod"
[crio.image]
pause_image = "$PAUSE_IMAGE"
pinned_images = ["$PAUSE_IMAGE"]
signature_policy = "$node/crio/policy.json"
[crio.network]
network_dir = "$node/cni/net.d"
plugin_dirs = ["$NODE_TOOLS/cni"]
[crio.nri]
enable_nri = true
nri_listen = "$node/nri/nri.sock"
nri_plugin_dir = "$node/crio/nri-plugins"
nri_plugin_config_dir = "$node/crio/nri-conf"
[crio.nri.default_validator]
nri_enable_default_validator = true
nri_validator_reject_oci_hook_adjustment = true
nri_validator_reject_runtime_default_seccomp_adjustment = true
nri_validator_reject_unconfined_seccomp_adjustment = true
nri_validator_reject_custom_seccomp_adjustment = true
nri_validator_reject_namespace_adjustment = true
[crio.metrics]
enable_metrics = false
EOF
}

start_crio() {
  "${as_root[@]}" setsid nsenter --mount="/proc/$(cat "$node/node-ns.pid")/ns/mnt" --wd="$node/cwd" -- \
    "$NODE_TOOLS/crio" --config "$node/crio/crio.conf" --config-dir "$node/crio/conf.d" \
    < /dev/null >> "$dir/logs/crio.log" 2>&1 &
  echo "$! $NODE_TOOLS/crio" > "$dir/pids/crio.pid"
  wait_for crio 60 node_crictl info
}

# crio_image_import TAR NAME: into CRI-O's containers/storage, by the copy
# tool of CRI-O's own module (its storage code, so the layout is the one
# crio reads; it takes the store's locks, so crio may run meanwhile).
crio_image_import() {
  in_node_namespace "$NODE_TOOLS/crio-copyimg" --root "$node/crio/storage" --runroot "$node/crio/run/storage" \
    --storage-driver overlay --signature-policy "$node/crio/policy.json" \
    --import-from "oci-archive:$1" --image-name "$2" >/dev/null 2>"$node/copyimg.err" ||
    { cat "$node/copyimg.err" >&2; die "cannot import $1 into the node's CRI-O"; }
}

start_runtime() {
  case "$NODE_RUNTIME" in
    containerd) start_containerd ;;
    crio) start_crio ;;
  esac
}

# runtime-restart: what a reboot does to the runtime side of a node: the
# kubelet and the runtime stop, /var/run/cdi (tmpfs) comes back empty, both
# start again.
runtime_restart() {
  load_cluster_env
  load_node_env
  [ "$NODE_RUNTIME" != stand-in ] || die "runtime-restart: the node runs the CRI stand-in"
  stop_one kubelet
  stop_one "$NODE_RUNTIME"
  "${as_root[@]}" find "$node/cdi" -mindepth 1 -delete
  start_runtime
  start_kubelet
  log "$NODE_RUNTIME and the kubelet restarted, the CDI spec dir emptied"
}

# runtime-upgrade: what an upgrade of the runtime does: it stops and starts;
# the containers (containerd's shims, CRI-O's conmons) and the kubelet keep
# running.
runtime_upgrade() {
  load_cluster_env
  load_node_env
  [ "$NODE_RUNTIME" != stand-in ] || die "runtime-upgrade: the node runs the CRI stand-in"
  stop_one "$NODE_RUNTIME"
  start_runtime
  log "$NODE_RUNTIME restarted"
}

# --- kube-controller-manager and the Node object -------------------------

# The TaintNodesByCondition admission plugin taints every new Node
# node.kubernetes.io/not-ready:NoSchedule; with no node-lifecycle-controller
# running, node-start lifts it once the kubelet reports Ready.
lift_not_ready_taint() {
  local patch
  patch="$(admin_api "/api/v1/nodes/$NODE_NAME" |
    python3 -c 'import json, sys
taints = json.load(sys.stdin)["spec"].get("taints", [])
print(json.dumps({"spec": {"taints": [t for t in taints if t["key"] != "node.kubernetes.io/not-ready"] or None}}))')"
  admin_api "/api/v1/nodes/$NODE_NAME" -X PATCH -H "Content-Type: application/merge-patch+json" \
    --data "$patch" >/dev/null
}

node_ready() {
  admin_api "/api/v1/nodes/$NODE_NAME" |
    python3 -c 'import json, sys
ready = [c for c in json.load(sys.stdin)["status"].get("conditions", []) if c["type"] == "Ready"]
sys.exit(0 if ready and ready[0]["status"] == "True" else 1)'
}

load_cluster_env() {
  [ -f "$dir/cluster.env" ] || die "no cluster started in $dir: run 'cluster.sh start $dir' first"
  # shellcheck disable=SC1091
  . "$dir/cluster.env"
  ADMIN_TOKEN="$(awk -F, '$2 == "admin" {print $1}' "$dir/tokens.csv")"
  APISERVER_PORT="${DRA_E2E_SERVER##*:}"
  FEATURE_GATES="$DRA_E2E_FEATURE_GATES"
  RUNTIME_CONFIG="$DRA_E2E_RUNTIME_CONFIG"
  use_net_slot "$DRA_E2E_NET_SLOT"
}

load_node_env() {
  [ -f "$node/node-ports.env" ] || die "no node started in $dir: run 'cluster.sh node-start $dir' first"
  # shellcheck disable=SC1091
  . "$node/node-ports.env"
}
load_node_env_if_any() { [ ! -f "$node/node-ports.env" ] || load_node_env; }

node_start() {
  local t0=$SECONDS
  load_cluster_env
  node_stop_all
  NODE_RUNTIME="$RUNTIME"
  # The control plane's release; the runtime from the default release's directory.
  NODE_BIN="$(DRA_K8S_VERSION="${DRA_E2E_K8S_VERSION:-}" binaries kube-controller-manager kubelet)"
  case "$NODE_RUNTIME" in
    containerd)
      NODE_TOOLS="$(DRA_K8S_VERSION='' binaries containerd containerd-shim-runc-v2 ctr crictl cni-bridge cni-host-local)"
      command -v runc >/dev/null || die "runc is missing: run scripts/install-deps.sh"
      ;;
    crio)
      NODE_TOOLS="$(DRA_K8S_VERSION='' binaries crio crio-pinns crio-copyimg crictl cni-bridge cni-host-local)"
      command -v runc >/dev/null || die "runc is missing: run scripts/install-deps.sh"
      command -v conmon >/dev/null || die "conmon is missing: run scripts/install-deps.sh"
      ;;
    *) NODE_TOOLS="$(DRA_K8S_VERSION='' binaries cri)" ;;
  esac
  NODE_IP="$(node_ip)"
  [ -n "$NODE_IP" ] || die "no global IPv4 address for the node's IP (ip -4 addr show scope global)"

  # A new directory: nothing of an earlier node (the kubelet's checkpoints,
  # CDI specs, records) stays.
  node="$(mktemp -d /tmp/dn.XXXX)"
  echo "$node" > "$dir/node-dir"
  mkdir -p "$node/kubelet" "$node/cdi" "$node/pod-logs" "$dir/logs"
  trap 'status=$?; if [ $status -ne 0 ]; then log "node-start failed: stopping what was started"; node_stop_all; fi' EXIT

  local kcm_port
  read -r KUBELET_PORT KUBELET_HEALTHZ_PORT kcm_port <<< "$(free_ports 3)"
  printf 'KUBELET_PORT=%s\nKUBELET_HEALTHZ_PORT=%s\nNODE_BIN=%s\nNODE_TOOLS=%s\nNODE_IP=%s\nNODE_RUNTIME=%s\n' \
    "$KUBELET_PORT" "$KUBELET_HEALTHZ_PORT" "$NODE_BIN" "$NODE_TOOLS" "$NODE_IP" "$NODE_RUNTIME" > "$node/node-ports.env"
  make_kubelet_cert
  write_kubelet_config
  machine_state_enter
  start_node_namespace

  log "kube-controller-manager (health on https://127.0.0.1:$kcm_port)"
  start_daemon kube-controller-manager "$NODE_BIN/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$kcm_port" \
    --cert-dir "$dir/pki/controller-manager" \
    --root-ca-file "$dir/pki/ca.crt" \
    --leader-elect=false \
    --controllers "$CONTROLLERS" \
    --service-account-private-key-file "$dir/pki/sa.key" \
    --cluster-signing-cert-file "$dir/pki/ca.crt" --cluster-signing-key-file "$dir/pki/ca.key" \
    --feature-gates "$FEATURE_GATES" \
    --profiling=false --v=1
  wait_for kube-controller-manager 60 curl -sfk --max-time 2 "https://127.0.0.1:$kcm_port/healthz"

  local cri_env
  case "$NODE_RUNTIME" in
    containerd|crio)
      start_real_runtime_node
      cri_env="DRA_E2E_CRI_ENDPOINT=$(runtime_endpoint)"
      ;;
    *)
      log "CRI stand-in on $node/cri.sock (CDI specs from $node/cdi)"
      start_daemon cri "$NODE_TOOLS/cri" --endpoint "$node/cri.sock" --cdi-spec-dir "$node/cdi" \
        --record "$node/cri-containers.json"
      wait_for cri 30 test -S "$node/cri.sock"
      cri_env="DRA_E2E_CRI_RECORD=$node/cri-containers.json"
      ;;
  esac

  log "kubelet $NODE_NAME ($NODE_IP), root dir $node/kubelet"
  start_kubelet
  wait_for kubelet 120 node_ready
  lift_not_ready_taint || die "cannot lift the not-ready taint of Node $NODE_NAME"

  cat > "$dir/node.env" <<EOF
DRA_E2E_NODE_NAME=$NODE_NAME
DRA_E2E_NODE_DIR=$node
DRA_E2E_RUNTIME=$NODE_RUNTIME
DRA_E2E_PLUGINS_REGISTRY=$node/kubelet/plugins_registry
DRA_E2E_PLUGINS_DIR=$node/kubelet/plugins
DRA_E2E_CDI_DIR=$node/cdi
$cri_env
DRA_E2E_KUBELET_URL=https://127.0.0.1:$KUBELET_PORT
DRA_E2E_NODE_BIN=$NODE_BIN
DRA_E2E_NODE_TOOLS=$NODE_TOOLS
EOF
  trap - EXIT
  log "node $NODE_NAME ($NODE_RUNTIME) ready in $((SECONDS - t0)) s"
}

kubelet_restart() {
  load_cluster_env
  load_node_env
  stop_one kubelet
  start_kubelet
  log "kubelet restarted"
}

case "$cmd" in
  start) start ;;
  stop) stop_all ;;
  node-start) node_start ;;
  node-stop) node_stop_all ;;
  kubelet-restart) kubelet_restart ;;
  runtime-restart) runtime_restart ;;
  runtime-upgrade) runtime_upgrade ;;
  crictl)
    load_cluster_env
    load_node_env
    [ "$NODE_RUNTIME" != stand-in ] || die "crictl: the node runs the CRI stand-in"
    shift 2
    node_crictl "$@"
    ;;
  image-import)
    load_cluster_env
    load_node_env
    [ "$NODE_RUNTIME" != stand-in ] || die "image-import: the node runs the CRI stand-in"
    image_import "$(cd "$(dirname "$3")" && pwd)/$(basename "$3")" "$4"
    ;;
  apiserver-stop) apiserver_stop ;;
  apiserver-start) apiserver_start ;;
  etcd-compact) etcd_compact ;;
  env)
    [ -f "$dir/cluster.env" ] || die "no cluster started in $dir"
    sed 's/^/export /' "$dir/cluster.env"
    [ ! -f "$dir/node.env" ] || sed 's/^/export /' "$dir/node.env"
    echo "export KUBECONFIG=$dir/admin.kubeconfig"
    ;;
  status)
    load_cluster_env
    for n in etcd kube-apiserver kube-scheduler; do
      pid_alive "$dir/pids/$n.pid" || die "$n is not running"
    done
    readyz || die "kube-apiserver /readyz is not ok"
    echo "running"
    ;;
  *) usage ;;
esac
