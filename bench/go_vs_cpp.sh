#!/usr/bin/env bash
# The same trivial DRA driver on the Go SDK (k8s.io/dynamic-resource-allocation
# /kubeletplugin v0.37.2, bench/gosdk: claims Get from an in-memory map behind
# a real client-go clientset) and on dra-cpp (bench/trivial_driver.cc, an
# InMemoryClaimSource),
# driven by the same kubelet peer (tests/e2e/kubeletpeer: the kubelet's own
# plugin manager and DRA client) in the same run. Prints one Markdown table on
# stdout: metric | Go SDK | dra-cpp | ratio, with the issue's targets.
#
#   bench/go_vs_cpp.sh [--duration 5s] [--starts 5] [--claims 1024] [--rounds 3]
#                      [--link static|shared]
#
# --link: how the dra-cpp drivers link gRPC, protobuf and abseil. static (the
# default, DRA_STATIC_GRPC=ON, build tree build-bench) is how a driver image
# should ship them, as the Go driver is one static binary; shared (build tree
# build-bench-shared) uses Debian's shared libraries.
#
# Per driver:
#   start-to-registered  the peer starts the driver itself (fork/exec) and
#                        times from just before the exec until the kubelet's
#                        DRA handler accepted the registration; the plugin
#                        manager's reconciler runs every 1 ms instead of the
#                        kubelet's 1 s so that its loop does not dominate.
#                        Median of --starts starts, Go and C++ interleaved.
#   idle RSS             VmRSS 2 s after registration, before any call.
#   prepare              NodePrepareResources of one claim, closed loop, 1 and
#                        16 concurrent callers on the kubelet's one gRPC
#                        connection, for --duration each after a 1 s warm-up;
#                        each caller unprepares its prepared claims every 16
#                        prepares (untimed). p50/p99 and calls/s; the driver's
#                        CPU time per call from /proc/PID/stat.
#   loaded RSS           VmHWM (peak) and VmRSS right after the load.
# Serialization is off on both; the dra-cpp checkpoint is off for the
# like-for-like rows (the Go helper keeps none) and on (tmpfs) in extra rows.
# Further rows without a target: the driver's CPU time and context switches
# per prepare, the kubelet peer's own CPU time per prepare (a bound on what
# any driver can gain on these 2 cores), and the floor under dra-cpp: the
# same answers from a plain grpc++ server without the SDK
# (bench/raw_grpc_driver.cc), with grpc++'s sync API (as the SDK) and its
# callback API.
# With --rounds R > 1 every number is the median over R rounds (drivers run
# in alternating order).
#
# Builds what it needs: bench_trivial_driver and bench_raw_grpc_driver in the
# Release tree of --link (or DRA_BENCH_BUILD_DIR), the peer and the Go driver with
# tests/e2e/build-k8s.sh (cached in ~/.cache/dra-cpp). Progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

duration=5s
starts=5
claims=1024
rounds=3
link=static
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --starts) starts="$2"; shift 2 ;;
    --claims) claims="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --link) link="$2"; shift 2 ;;
    -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
    *) echo "go_vs_cpp: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

. bench/tree.sh
dra_bench_tree go_vs_cpp "$link"
log() { echo "go_vs_cpp: $*" >&2; }

t=$SECONDS
dra_bench_build bench_trivial_driver bench_raw_grpc_driver
bin_dir="$(tests/e2e/build-k8s.sh --print-dir kubeletpeer gosdk-driver)"
log "built in $((SECONDS - t)) s"

peer="$bin_dir/kubeletpeer"
go_driver="$bin_dir/gosdk-driver"
cpp_driver="$repo/$build/bench/bench_trivial_driver"
raw_driver="$repo/$build/bench/bench_raw_grpc_driver"
driver_name=bench.example.com

# Sockets and the checkpoint on tmpfs when there is one.
parent=/tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then parent=/dev/shm; fi
work="$(mktemp -d "$parent/dra-go-vs-cpp-XXXXXX")"
trap 'rm -rf "$work"' EXIT

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

# driver_cmd KIND DIR: the command line of driver KIND with its dirs in DIR.
driver_cmd() {
  local kind="$1" dir="$2"
  mkdir -p "$dir/registry"
  case "$kind" in
    go) echo "$go_driver --registrar-dir $dir/registry --plugin-data-dir $dir/plugin --driver-name $driver_name --claims $claims" ;;
    cpp) echo "$cpp_driver --registrar-dir $dir/registry --plugin-data-dir $dir/plugin --driver-name $driver_name --claims $claims --checkpoint off" ;;
    cpp-ckpt) echo "$cpp_driver --registrar-dir $dir/registry --plugin-data-dir $dir/plugin --driver-name $driver_name --claims $claims --checkpoint on" ;;
    raw-sync) echo "$raw_driver --registrar-dir $dir/registry --plugin-data-dir $dir/plugin --driver-name $driver_name --claims $claims --api sync" ;;
    raw-callback) echo "$raw_driver --registrar-dir $dir/registry --plugin-data-dir $dir/plugin --driver-name $driver_name --claims $claims --api callback" ;;
  esac
}

# run_peer KIND NAME STEPS [peer flags...]: one peer run with a fresh driver;
# its JSON lines go to $work/NAME.jsonl.
run_peer() {
  local kind="$1" name="$2" steps="$3"
  shift 3
  local dir="$work/$name"
  rm -rf "$dir"
  mkdir -p "$dir"
  # shellcheck disable=SC2046 # the driver command is split on purpose
  if ! "$peer" --registry-dir "$dir/registry" --driver "$driver_name" --timeout 30s \
      --reconcile-period 1ms --steps "$steps" --driver-log "$dir/driver.log" "$@" \
      -- $(driver_cmd "$kind" "$dir") > "$work/$name.jsonl" 2> "$dir/peer.log"; then
    log "$name failed; peer output:"; cat "$work/$name.jsonl" >&2
    log "peer log:"; tail -20 "$dir/peer.log" >&2
    log "driver log:"; tail -20 "$dir/driver.log" >&2
    exit 1
  fi
  rm -rf "$dir"
}

kinds=(go cpp cpp-ckpt raw-sync raw-callback)
for ((r = 1; r <= rounds; r++)); do
  order=("${kinds[@]}")
  if ((r % 2 == 0)); then order=(raw-callback raw-sync cpp-ckpt cpp go); fi
  log "round $r/$rounds: $starts starts per driver"
  for ((i = 1; i <= starts; i++)); do
    for k in go cpp; do run_peer "$k" "start-$k-$r-$i" register; done
  done
  for k in "${order[@]}"; do
    log "round $r/$rounds: $k: idle RSS, prepare at 1 and 16 callers for $duration each, loaded RSS"
    run_peer "$k" "load-$k-$r" register,sleep,rss,bench,rss --sleep 2s \
      --bench-claims "$claims" --bench-concurrency 1,16 --bench-duration "$duration" --bench-warmup 1s \
      --bench-unprepare-every 16
  done
done

load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work" "$rounds" "$starts" "$duration" "$claims" "$load_before" "$load_after" "$(nproc)" "$link" <<'EOF'
import glob, json, os, statistics, sys
work, rounds, starts, duration, claims, load_before, load_after, ncpu, link = sys.argv[1:]
rounds = int(rounds)

def lines(path):
    return [json.loads(l) for l in open(path) if l.strip()]

def med(xs):
    return statistics.median(xs) if xs else float("nan")

def collect(kind):
    d = {}
    starts_ms = []
    for p in glob.glob(os.path.join(work, "start-%s-*.jsonl" % kind)):
        for l in lines(p):
            if l["step"] == "register" and "exec_to_registered_ms" in l:
                starts_ms.append(l["exec_to_registered_ms"])
    d["starts"] = starts_ms
    per_round = []
    for r in range(1, rounds + 1):
        ls = lines(os.path.join(work, "load-%s-%d.jsonl" % (kind, r)))
        rss = [l for l in ls if l["step"] == "rss"]
        bench = {l["concurrency"]: l for l in ls if l["step"] == "bench"}
        for b in bench.values():
            if b["errors"]:
                sys.exit("%s: %d errors in the bench: %s" % (kind, b["errors"], b.get("first_error")))
        per_round.append({
            "idle_rss": rss[0]["vmrss_kb"] / 1024, "idle_anon": rss[0]["rssanon_kb"] / 1024,
            "hwm": rss[1]["vmhwm_kb"] / 1024, "loaded_rss": rss[1]["vmrss_kb"] / 1024,
            "loaded_anon": rss[1]["rssanon_kb"] / 1024,
            **{"%s_%d" % (k, c): bench[c][k] for c in (1, 16)
               for k in ("p50_us", "p99_us", "calls_per_s", "driver_cpu_us_per_call", "driver_ctxsw_per_call",
                         "peer_cpu_us_per_call")},
        })
    for key in per_round[0]:
        d[key] = med([x[key] for x in per_round])
    d["start_ms"] = med(starts_ms)
    return d

go, cpp, ck = collect("go"), collect("cpp"), collect("cpp-ckpt")
raw_sync, raw_cb = collect("raw-sync"), collect("raw-callback")

rows = []
def row(metric, key, fmt, better, target=None, src=cpp):
    g, c = go[key], src[key]
    ratio = c / g if g else float("nan")
    fmt2 = "%.2f" if ratio < 10 else "%.1f" 
    verdict, tgt = "", ""
    if target is not None:
        kind, x = target
        if kind == "faster":      # dra-cpp at least x times better
            ok = (g / c >= x) if better == "lower" else (c / g >= x)
            tgt = "%gx faster" % x
        elif kind == "rss":       # dra-cpp at most x of Go
            ok = ratio <= x
            tgt = "<= 1/%g of Go" % round(1 / x)
        verdict = "PASS" if ok else "FAIL"
    rows.append((metric, fmt % g, fmt % c, fmt2 % ratio, tgt, verdict))

def callers(c):
    return "1 caller" if c == 1 else "%d callers" % c

for c in (1, 16):
    row("prepare p50, %s (us)" % callers(c), "p50_us_%d" % c, "%.0f", "lower", ("faster", 2))
    row("prepare p99, %s (us)" % callers(c), "p99_us_%d" % c, "%.0f", "lower", ("faster", 2))
    row("prepare calls/s, %s" % callers(c), "calls_per_s_%d" % c, "%.0f", "higher", ("faster", 2))
# start-to-registered: an absolute target for dra-cpp.
g, c = go["start_ms"], cpp["start_ms"]
rows.append(("start-to-registered, median of %d (ms)" % len(cpp["starts"]), "%.1f" % g, "%.1f" % c, "%.2f" % (c / g),
             "dra-cpp <= 20 ms", "PASS" if c <= 20 else "FAIL"))
row("idle RSS, VmRSS (MB)", "idle_rss", "%.1f", "lower", ("rss", 1 / 3))
row("loaded RSS, VmHWM (MB)", "hwm", "%.1f", "lower", ("rss", 1 / 3))
row("loaded RSS, VmRSS after load (MB)", "loaded_rss", "%.1f", "lower", ("rss", 1 / 3))
row("loaded RSS, anonymous part, RssAnon (MB)", "loaded_anon", "%.1f", "lower")
for c in (1, 16):
    row("driver CPU per prepare, %s (us)" % callers(c), "driver_cpu_us_per_call_%d" % c, "%.1f", "lower")
    row("driver context switches per prepare, %s" % callers(c), "driver_ctxsw_per_call_%d" % c, "%.2f", "lower")
    row("kubelet peer CPU per prepare, %s (us)" % callers(c), "peer_cpu_us_per_call_%d" % c, "%.1f", "lower")
for c in (1, 16):
    row("checkpoint on (tmpfs): prepare p50, %s (us)" % callers(c), "p50_us_%d" % c, "%.0f", "lower", src=ck)
    row("checkpoint on (tmpfs): prepare calls/s, %s" % callers(c), "calls_per_s_%d" % c, "%.0f", "higher", src=ck)
row("checkpoint on (tmpfs): loaded RSS, VmHWM (MB)", "hwm", "%.1f", "lower", src=ck)
for label, src in (("grpc++ without SDK, sync API", raw_sync), ("grpc++ without SDK, callback API", raw_cb)):
    for c in (1, 16):
        row("%s: prepare p50, %s (us)" % (label, callers(c)), "p50_us_%d" % c, "%.0f", "lower", src=src)
        row("%s: prepare calls/s, %s" % (label, callers(c)), "calls_per_s_%d" % c, "%.0f", "higher", src=src)
        row("%s: driver CPU per prepare, %s (us)" % (label, callers(c)), "driver_cpu_us_per_call_%d" % c, "%.1f",
            "lower", src=src)

print("| metric | Go SDK | dra-cpp | ratio (dra-cpp / Go) | target | result |")
print("|---|---:|---:|---:|---|---|")
for r in rows:
    print("| %s |" % " | ".join(r))
print()
print("Ratio: dra-cpp divided by Go (below 1 is better for latency, CPU and RSS; above 1 for calls/s). "
      "Go SDK: k8s.io/dynamic-resource-allocation/kubeletplugin v0.37.2; client: the kubelet v1.37.2 DRA client (grpc-go). "
      "dra-cpp links gRPC, protobuf and abseil %s. "
      "%s rounds, %s claims, %s per level, serialize off, dra-cpp checkpoint off unless stated. "
      "Start times (ms) Go: %s; dra-cpp: %s. %s CPUs; load average (1/5/15 min) before: %s, after: %s."
      % ({"static": "statically (DRA_STATIC_GRPC=ON)", "shared": "as Debian's shared libraries"}[link],
         rounds, claims, duration, " ".join("%.1f" % x for x in sorted(go["starts"])),
         " ".join("%.1f" % x for x in sorted(cpp["starts"])), ncpu, load_before, load_after))
EOF
