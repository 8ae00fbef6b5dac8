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
#   cluster.sh node-start DIR       kube-controller-manager, the CRI stand-in
#                                   (tests/e2e/cri) and a real kubelet (node
#                                   $DRA_E2E_NODE_NAME, default e2e-node) in its
#                                   own mount namespace, root dir NODE/kubelet
#                                   (NODE: /tmp/dra-node.*, named in DIR/node-dir);
#                                   waits until the Node is Ready. Needs root
#                                   (or sudo without a password)
#   cluster.sh kubelet-restart DIR  stop the kubelet and start it again (same
#                                   root dir, checkpoints kept)
#   cluster.sh node-stop DIR        stop the three, restore the sysctls the
#                                   kubelet changed (`stop` does this too)
#   `env` then also prints DRA_E2E_NODE_NAME, DRA_E2E_PLUGINS_REGISTRY,
#   DRA_E2E_PLUGINS_DIR, DRA_E2E_CDI_DIR (the CRI stand-in's spec dir),
#   DRA_E2E_CRI_RECORD (what the runtime saw, tests/e2e/cri/README.md) and
#   DRA_E2E_KUBELET_URL (its HTTPS API: /metrics with pki/admin.crt).
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
#   DRA_E2E_FEATURE_GATES  replaces the feature gate list below
#   DRA_E2E_APISERVER_ARGS, DRA_E2E_SCHEDULER_ARGS  extra flags
#   DRA_K8S_BIN            use the binaries in this directory instead of
#                          running build-k8s.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The gates the SDK's objects need on a v1.37 server. Off by default in 1.37:
# DRANodeAllocatableResources, DRAListTypeAttributes, DRAPartitionableDevicesType,
# DRAResourcePoolStatus, DRAOptionalNodeOperations, DRADeviceCompatibilityGroups,
# DRADerivedAttributes (alpha). Beta and on by default: DRADeviceBindingConditions,
# DRAConsumableCapacity, DRAPartitionableDevices, DRAFractionalCapacityRange,
# ResourceHealthStatus (device health in the pod status, read by the kubelet).
# GA: DRADeviceTaints, DRADeviceTaintRules, DRAResourceClaimDeviceStatus (locked
# on; naming it only logs a warning). They are all named so the list says what
# the suite runs with, whatever the defaults become.
DEFAULT_FEATURE_GATES="ResourceHealthStatus=true,DRAResourceClaimDeviceStatus=true,DRADeviceBindingConditions=true,DRAConsumableCapacity=true,DRAPartitionableDevices=true,DRADeviceTaints=true,DRADeviceTaintRules=true,DRANodeAllocatableResources=true,DRAListTypeAttributes=true,DRAPartitionableDevicesType=true,DRAResourcePoolStatus=true,DRAOptionalNodeOperations=true,DRADeviceCompatibilityGroups=true,DRADerivedAttributes=true,DRAFractionalCapacityRange=true"
FEATURE_GATES="${DRA_E2E_FEATURE_GATES:-$DEFAULT_FEATURE_GATES}"
# resource.k8s.io/v1 is on by default; v1alpha3 serves ResourcePoolStatusRequest
# (DRAResourcePoolStatus) and the alpha DeviceTaintRule version.
RUNTIME_CONFIG="resource.k8s.io/v1=true,resource.k8s.io/v1alpha3=true"
DRIVERS="${DRA_E2E_DRIVERS:-gpu-driver cpu-driver minimal-driver}"
# The one node `node-start` runs (the kubelet's --hostname-override).
NODE_NAME="${DRA_E2E_NODE_NAME:-e2e-node}"
# What the node's flows need of kube-controller-manager: claims from
# templates, pod claim status, deallocation and deletion of generated claims;
# evictions for device taints; the default ServiceAccount of new namespaces.
# Nothing that acts on every Node or object (node-lifecycle-controller,
# garbage-collector-controller): the tests that run beside the node's keep
# objects of their own that such a controller would change.
CONTROLLERS="${DRA_E2E_CONTROLLERS:-resourceclaim-controller,device-taint-eviction-controller,serviceaccount-controller}"
# Written by the kubelet's container manager at start (setupKernelTunables);
# node-start saves them and node-stop puts them back.
KUBELET_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }

usage() { sed -n '2,63p' "$0" >&2; exit 2; }

[ $# -eq 2 ] || usage
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
  rm -rf "$dir/etcd-data" "$dir/cluster.env"
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
# DRA_K8S_BIN, or build-k8s.sh's cache (built there if missing).
binaries() {
  local d b
  if [ -n "${DRA_K8S_BIN:-}" ]; then d="$DRA_K8S_BIN"; else d="$("$here/build-k8s.sh" --print-dir "$@")"; fi
  for b in "$@"; do
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
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
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
# $ETCD_PORT; returns once /readyz is ok.
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
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-cluster-ip-range 10.0.0.0/24 \
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

  rm -rf "$dir/logs" "$dir/pids"; mkdir -p "$dir/logs" "$dir/pids"
  # If anything below fails, leave nothing running.
  trap 'status=$?; if [ $status -ne 0 ]; then log "start failed: stopping what was started"; stop_all; fi' EXIT

  local ports
  read -r ETCD_PORT ETCD_PEER_PORT APISERVER_PORT SCHEDULER_PORT <<< "$(free_ports 4)"
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
DRA_E2E_FEATURE_GATES=$FEATURE_GATES
EOF
  trap - EXIT
  log "ready in $((SECONDS - t0)) s: KUBECONFIG=$dir/admin.kubeconfig"
}


# --- the node: CRI stand-in, kubelet, kube-controller-manager ------------

# The node's files (the kubelet's root dir, CDI specs, the runtime's record)
# live in a short directory of their own, named in DIR/node-dir: a driver's
# registration socket is <root dir>/plugins_registry/<driver>-reg.sock, and a
# Unix socket path may not exceed 107 bytes, which DIR (in a build tree, say)
# can use up alone.
node=""
[ ! -f "$dir/node-dir" ] || node="$(cat "$dir/node-dir")"

# The kubelet needs root (a mount namespace of its own, the sysctls it
# writes); a user with sudo gets it through sudo. An array, not a function:
# `function &` would record the pid of a subshell.
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo -n)

# Stops the node and removes its directory; the runtime's record stays
# beside the logs (DIR/logs/cri-containers.json).
node_stop_all() {
  local n
  for n in kubelet kube-controller-manager cri; do stop_one "$n"; done
  [ -n "$node" ] || return 0
  restore_sysctls
  if [ -f "$node/cri-containers.json" ]; then mkdir -p "$dir/logs" && cp "$node/cri-containers.json" "$dir/logs/"; fi
  "${as_root[@]}" rm -rf "$node"
  rm -f "$dir/node.env" "$dir/node-dir"
  node=""
}

save_sysctls() {
  # Kept across kubelet restarts: the first save holds the machine's values.
  [ ! -f "$node/sysctls.saved" ] || return 0
  local k
  for k in $KUBELET_SYSCTLS; do echo "$k=$(sysctl -n "$k")"; done > "$node/sysctls.saved.tmp"
  mv "$node/sysctls.saved.tmp" "$node/sysctls.saved"
}

restore_sysctls() {
  [ -f "$node/sysctls.saved" ] || return 0
  local kv changed=""
  while read -r kv; do
    [ "$(sysctl -n "${kv%%=*}")" != "${kv#*=}" ] || continue
    "${as_root[@]}" sysctl -q -w "$kv" >/dev/null
    changed="$changed ${kv%%=*}"
  done < "$node/sysctls.saved"
  [ -z "$changed" ] || log "restored the sysctls the kubelet changed:$changed"
  rm -f "$node/sysctls.saved"
}

# The node's address: the first global IPv4 address, not loopback, as on a
# real node (127.0.0.1 is every machine's own).
node_ip() {
  ip -4 -o addr show scope global | awk '{sub("/.*", "", $4); print $4; exit}'
}

write_kubelet_config() {
  local gates_yaml="" kv
  for kv in ${FEATURE_GATES//,/ }; do
    gates_yaml="$gates_yaml  ${kv%%=*}: ${kv#*=}"$'\n'
  done
  cat > "$node/kubelet-config.yaml" <<EOF
# A kubelet on a machine without a container runtime or a writable cgroup
# tree: the CRI stand-in (tests/e2e/cri) is the runtime; no QoS or
# node-allocatable cgroups; no refusal of swap or cgroup v1; free ports and
# no read-only port; nothing outside NODE but the sysctls (restored by
# node-stop) and /var/log (a bind mount inside the kubelet's mount namespace).
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
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
containerRuntimeEndpoint: unix://$node/cri.sock
imageServiceEndpoint: unix://$node/cri.sock
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
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:%s\n' \
      "$NODE_NAME" > kubelet.ext
    openssl req -newkey rsa:2048 -nodes -keyout kubelet.key -out kubelet.csr -subj "/CN=$NODE_NAME" 2>/dev/null
    openssl x509 -req -in kubelet.csr -CA "$dir/pki/ca.crt" -CAkey "$dir/pki/ca.key" -CAcreateserial \
      -out kubelet.crt -days 30 -extfile kubelet.ext 2>/dev/null
    rm -f kubelet.csr kubelet.ext "$dir/pki/ca.srl"
    chmod 600 kubelet.key
  )
}

kubelet_healthz() { curl -sf --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" | grep -qx ok; }

# The kubelet in a mount namespace of its own, so that the mounts it makes
# (its root dir made rshared, for one) vanish with it, and with
# NODE/var-log over /var/log (it creates /var/log/containers).
start_kubelet() {
  save_sysctls
  mkdir -p "$node/var-log" "$dir/logs" "$dir/pids"
  "${as_root[@]}" setsid unshare --mount --propagation private -- /bin/sh -c \
    'mount --bind "$1" /var/log && shift && exec "$@"' sh "$node/var-log" \
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
}

load_node_env() {
  [ -f "$node/node-ports.env" ] || die "no node started in $dir: run 'cluster.sh node-start $dir' first"
  # shellcheck disable=SC1091
  . "$node/node-ports.env"
}

node_start() {
  local t0=$SECONDS
  load_cluster_env
  node_stop_all
  NODE_BIN="$(binaries kube-controller-manager kubelet cri)"
  NODE_IP="$(node_ip)"
  [ -n "$NODE_IP" ] || die "no global IPv4 address for the node's IP (ip -4 addr show scope global)"

  # A new directory: nothing of an earlier node (the kubelet's checkpoints,
  # CDI specs, records) stays.
  node="$(mktemp -d /tmp/dra-node.XXXXXX)"
  echo "$node" > "$dir/node-dir"
  mkdir -p "$node/kubelet" "$node/cdi" "$node/pod-logs"
  trap 'status=$?; if [ $status -ne 0 ]; then log "node-start failed: stopping what was started"; node_stop_all; fi' EXIT

  local kcm_port
  read -r KUBELET_PORT KUBELET_HEALTHZ_PORT kcm_port <<< "$(free_ports 3)"
  printf 'KUBELET_PORT=%s\nKUBELET_HEALTHZ_PORT=%s\nNODE_BIN=%s\nNODE_IP=%s\n' \
    "$KUBELET_PORT" "$KUBELET_HEALTHZ_PORT" "$NODE_BIN" "$NODE_IP" > "$node/node-ports.env"
  make_kubelet_cert
  write_kubelet_config

  log "kube-controller-manager (health on https://127.0.0.1:$kcm_port)"
  start_daemon kube-controller-manager "$NODE_BIN/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$kcm_port" \
    --cert-dir "$dir/pki/controller-manager" \
    --leader-elect=false \
    --controllers "$CONTROLLERS" \
    --feature-gates "$FEATURE_GATES" \
    --profiling=false --v=1
  wait_for kube-controller-manager 60 curl -sfk --max-time 2 "https://127.0.0.1:$kcm_port/healthz"

  log "CRI stand-in on $node/cri.sock (CDI specs from $node/cdi)"
  start_daemon cri "$NODE_BIN/cri" --endpoint "$node/cri.sock" --cdi-spec-dir "$node/cdi" \
    --record "$node/cri-containers.json"
  wait_for cri 30 test -S "$node/cri.sock"

  log "kubelet $NODE_NAME ($NODE_IP), root dir $node/kubelet"
  start_kubelet
  wait_for kubelet 120 node_ready
  lift_not_ready_taint || die "cannot lift the not-ready taint of Node $NODE_NAME"

  cat > "$dir/node.env" <<EOF
DRA_E2E_NODE_NAME=$NODE_NAME
DRA_E2E_NODE_DIR=$node
DRA_E2E_PLUGINS_REGISTRY=$node/kubelet/plugins_registry
DRA_E2E_PLUGINS_DIR=$node/kubelet/plugins
DRA_E2E_CDI_DIR=$node/cdi
DRA_E2E_CRI_RECORD=$node/cri-containers.json
DRA_E2E_KUBELET_URL=https://127.0.0.1:$KUBELET_PORT
EOF
  trap - EXIT
  log "node $NODE_NAME ready in $((SECONDS - t0)) s"
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
