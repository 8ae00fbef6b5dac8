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
#
# What DIR holds after start:
#   admin.kubeconfig           user "admin" (group system:masters)
#   scheduler.kubeconfig       user system:kube-scheduler (bootstrap RBAC roles)
#   driver-<name>.kubeconfig   user system:serviceaccount:dra-system:<name> (no
#                              RBAC rights: tests grant what they need)
#   unprivileged.kubeconfig    user system:serviceaccount:dra-system:unprivileged
#                              (no rights, and no test may grant it any)
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
# DRAConsumableCapacity, DRAPartitionableDevices, DRAFractionalCapacityRange.
# GA: DRADeviceTaints, DRADeviceTaintRules, DRAResourceClaimDeviceStatus (locked
# on; naming it only logs a warning). They are all named so the list says what
# the suite runs with, whatever the defaults become.
DEFAULT_FEATURE_GATES="DRAResourceClaimDeviceStatus=true,DRADeviceBindingConditions=true,DRAConsumableCapacity=true,DRAPartitionableDevices=true,DRADeviceTaints=true,DRADeviceTaintRules=true,DRANodeAllocatableResources=true,DRAListTypeAttributes=true,DRAPartitionableDevicesType=true,DRAResourcePoolStatus=true,DRAOptionalNodeOperations=true,DRADeviceCompatibilityGroups=true,DRADerivedAttributes=true,DRAFractionalCapacityRange=true"
FEATURE_GATES="${DRA_E2E_FEATURE_GATES:-$DEFAULT_FEATURE_GATES}"
# resource.k8s.io/v1 is on by default; v1alpha3 serves ResourcePoolStatusRequest
# (DRAResourcePoolStatus) and the alpha DeviceTaintRule version.
RUNTIME_CONFIG="resource.k8s.io/v1=true,resource.k8s.io/v1alpha3=true"
DRIVERS="${DRA_E2E_DRIVERS:-gpu-driver cpu-driver minimal-driver}"

log() { echo "cluster: $*" >&2; }
die() { echo "cluster: $*" >&2; exit 1; }

usage() { sed -n '2,40p' "$0" >&2; exit 2; }

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

stop_one() {
  local name="$1" f="$dir/pids/$1.pid" pid bin i
  [ -f "$f" ] || return 0
  if pid_alive "$f"; then
    read -r pid bin < "$f"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      running "$pid" || break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ] && pid_alive "$f"; then
      log "$name (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
    fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$f"
}

stop_all() {
  local n
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

readyz() {
  curl -sf --max-time 2 --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
    "https://127.0.0.1:$APISERVER_PORT/readyz" | grep -qx ok
}

start() {
  local t0=$SECONDS bin_dir
  if pid_alive "$dir/pids/etcd.pid" || pid_alive "$dir/pids/kube-apiserver.pid" ||
     pid_alive "$dir/pids/kube-scheduler.pid"; then
    log "a cluster from an earlier start is still running in $dir: stopping it first"
  fi
  stop_all

  if [ -n "${DRA_K8S_BIN:-}" ]; then
    bin_dir="$DRA_K8S_BIN"
  else
    bin_dir="$("$here/build-k8s.sh" --print-dir etcd kube-apiserver kube-scheduler)"
  fi
  local b
  for b in etcd kube-apiserver kube-scheduler; do
    [ -x "$bin_dir/$b" ] || die "$bin_dir/$b is missing: run tests/e2e/build-k8s.sh"
  done

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
    --authorization-mode RBAC \
    --service-cluster-ip-range 10.0.0.0/24 \
    --feature-gates "$FEATURE_GATES" \
    --runtime-config "$RUNTIME_CONFIG" \
    --profiling=false --v=1 \
    ${DRA_E2E_APISERVER_ARGS:-}
  wait_for kube-apiserver 180 readyz

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

case "$cmd" in
  start) start ;;
  stop) stop_all ;;
  env)
    [ -f "$dir/cluster.env" ] || die "no cluster started in $dir"
    sed 's/^/export /' "$dir/cluster.env"
    echo "export KUBECONFIG=$dir/admin.kubeconfig"
    ;;
  status)
    [ -f "$dir/cluster.env" ] || die "no cluster started in $dir"
    for n in etcd kube-apiserver kube-scheduler; do
      pid_alive "$dir/pids/$n.pid" || die "$n is not running"
    done
    ADMIN_TOKEN="$(awk -F, '$2 == "admin" {print $1}' "$dir/tokens.csv")"
    APISERVER_PORT="$(sed -n 's|^DRA_E2E_SERVER=https://127.0.0.1:||p' "$dir/cluster.env")"
    readyz || die "kube-apiserver /readyz is not ok"
    echo "running"
    ;;
  *) usage ;;
esac
