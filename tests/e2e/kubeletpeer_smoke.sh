#!/usr/bin/env bash
# Smoke test of the kubelet peer against the minimal example driver: the
# kubelet's plugin manager discovers and registers the driver, then prepares a
# claim twice (the second answer comes from the driver's checkpoint) together
# with an unknown claim (which fails alone), reads the health stream the
# kubelet's DRA plugin manager opened, and unprepares. No API server: the
# driver serves its claims from a file.
#
#   kubeletpeer_smoke.sh MINIMAL_DRIVER_BINARY
#
# The peer comes from build-k8s.sh (built on first use). Prints the peer's
# JSON lines; exits non-zero on the first check that fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
driver_bin="${1:?usage: kubeletpeer_smoke.sh MINIMAL_DRIVER_BINARY}"
peer="$("$here/build-k8s.sh" --print-dir kubeletpeer)/kubeletpeer"

work="$(mktemp -d /tmp/dra-kubeletpeer-XXXXXX)"
driver_pid=
cleanup() {
  if [ -n "$driver_pid" ]; then kill -TERM "$driver_pid" 2>/dev/null || true; wait "$driver_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/plugins_registry"
claims="$here/../../examples/minimal/claims.json"
uid=$(sed -n 's/.*"uid": "\([^"]*\)".*/\1/p' "$claims")

"$driver_bin" --registrar-dir "$work/plugins_registry" --plugin-data-dir "$work/plugins/minimal.example.com" \
  --claims "$claims" 2> "$work/driver.log" &
driver_pid=$!

# The peer starts at once: it must find the socket whenever it appears.
status=0
"$peer" --registry-dir "$work/plugins_registry" --driver minimal.example.com --timeout 20s \
  --claim "default/gpu-claim/$uid" --claim default/missing/uid-missing \
  --steps register,prepare,prepare,health,unprepare > "$work/peer.jsonl" 2> "$work/peer.log" || status=$?
cat "$work/peer.jsonl"
if [ $status -ne 0 ]; then
  echo "kubeletpeer exited $status; its log:" >&2; cat "$work/peer.log" >&2
  echo "driver log:" >&2; cat "$work/driver.log" >&2
  exit 1
fi

kill -TERM "$driver_pid"; wait "$driver_pid"; driver_pid=
if [ -n "$(ls -A "$work/plugins_registry")" ]; then
  echo "the driver left its registration socket behind: $(ls -A "$work/plugins_registry")" >&2; exit 1
fi

python3 - "$work/peer.jsonl" "$uid" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
uid = sys.argv[2]
steps = [l["step"] for l in lines]
def check(cond, what):
    if not cond:
        sys.exit("kubeletpeer smoke: FAILED: " + what + "\n" + json.dumps(lines, indent=1))
    print("ok:", what)
check(steps == ["validate", "register", "prepare", "prepare", "health", "unprepare"], "steps " + ",".join(steps))
reg = lines[1]
check(reg["driver"] == "minimal.example.com" and reg["endpoint"].endswith("/plugins/minimal.example.com/dra.sock"),
      "registered through the registry dir with the DRA socket as endpoint")
check("v1.DRAPlugin" in reg["versions"] and "v1.DRAResourceHealth" in reg["versions"], "advertises v1 DRA and health")
for i in (2, 3):
    claims = lines[i]["response"]["claims"]
    devs = claims[uid]["devices"]
    check([d["device_name"] for d in devs] == ["dev-0", "dev-1"] and
          devs[0]["cdi_device_ids"] == ["minimal.example.com/device=dev-0"] and "error" not in claims[uid],
          "prepare #%d: both devices with CDI IDs" % (i - 1))
    check("not found" in claims["uid-missing"].get("error", ""), "prepare #%d: the unknown claim fails alone" % (i - 1))
health = lines[4]["response"]["devices"]
check(sorted(d["device"]["device_name"] for d in health) == ["dev-0", "dev-1"] and
      all(d["health"] == "HEALTHY" for d in health), "health stream: both devices HEALTHY")
check(all("error" not in c for c in lines[5]["response"]["claims"].values()), "unprepare: no errors")
EOF
