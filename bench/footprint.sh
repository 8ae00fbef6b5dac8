#!/usr/bin/env bash
# Where an idle dra-cpp driver's resident memory goes: the trivial driver of
# bench/go_vs_cpp.sh (bench/trivial_driver.cc, checkpoint off, no API server)
# is started with its sockets in a temp dir and, once its registration socket
# is there, /proc/PID/smaps is summed by what each mapping is:
#
#   own code       the driver binary's r-x and r-- pages (with static gRPC:
#                  gRPC, protobuf and abseil too)
#   own data       the binary's rw pages (.data, relro, .bss)
#   library NAME   each shared library, all its mappings
#   heap           [heap] (the main malloc arena)
#   thread stacks  anonymous 8 MiB mappings (one per thread)
#   malloc arenas  anonymous mappings inside 64 MiB arena reservations
#   other anon     the rest of the anonymous memory, [stack] included
#
# Prints one Markdown table (Rss and Pss in KiB, sorted by Rss) and the
# thread count, for --link static (default, tree build-bench) or shared.
#
#   bench/footprint.sh [--link static|shared] [--claims 1024]
set -euo pipefail
cd "$(dirname "$0")/.."

link=static
claims=1024
while [ $# -gt 0 ]; do
  case "$1" in
    --link) link="$2"; shift 2 ;;
    --claims) claims="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "footprint: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

. bench/tree.sh
dra_bench_tree footprint "$link"
dra_bench_build bench_trivial_driver

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/registry" "$work/plugin"
"$build/bench/bench_trivial_driver" --registrar-dir "$work/registry" --plugin-data-dir "$work/plugin" \
  --claims "$claims" --checkpoint off 2> "$work/driver.log" &
pid=$!

python3 - "$pid" "$work/registry" "$(readlink -f "$build/bench/bench_trivial_driver")" "$link" <<'EOF'
import glob, os, re, sys, time
pid, registry, binary, link = sys.argv[1:]
deadline = time.time() + 30
while not glob.glob(os.path.join(registry, "*-reg.sock")):
    if time.time() > deadline:
        sys.exit("footprint: the driver did not create its registration socket in 30 s")
    time.sleep(0.01)

def mappings():
    current = None
    for line in open("/proc/%s/smaps" % pid):
        m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
        if m:
            if current:
                yield current
            current = {"start": int(m.group(1), 16), "end": int(m.group(2), 16), "perms": m.group(3),
                       "path": m.group(4).strip(), "Rss": 0, "Pss": 0}
            continue
        k, _, v = line.partition(":")
        if k in ("Rss", "Pss"):
            current[k] = int(v.split()[0])
    if current:
        yield current

maps = list(mappings())
# 64 MiB-aligned arena reservations: any anonymous mapping inside one.
ARENA = 64 << 20
arena_bases = set()
for m in maps:
    if not m["path"] and m["end"] - m["start"] == ARENA and m["start"] % ARENA == 0:
        arena_bases.add(m["start"])
for m in maps:
    if not m["path"] and m["perms"] == "---p" and m["start"] % ARENA == 0:
        arena_bases.add(m["start"])

sums = {}
def add(key, m):
    rss, pss = sums.get(key, (0, 0))
    sums[key] = (rss + m["Rss"], pss + m["Pss"])

for m in maps:
    path = m["path"]
    size = m["end"] - m["start"]
    if path == binary:
        add("own code" if "w" not in m["perms"] else "own data", m)
    elif path.startswith("/"):
        add("library " + os.path.basename(path), m)
    elif path == "[heap]":
        add("heap", m)
    elif path.startswith("["):
        add("other anon", m)
    elif size == 8 << 20 or size == (8 << 20) + 4096:
        add("thread stacks", m)
    elif any(b <= m["start"] < b + ARENA for b in arena_bases):
        add("malloc arenas", m)
    else:
        add("other anon", m)

status = dict(l.split(":", 1) for l in open("/proc/%s/status" % pid))
total_rss = sum(r for r, _ in sums.values())
print("| part | Rss (KiB) | Pss (KiB) | share of Rss |")
print("|---|---:|---:|---:|")
for key, (rss, pss) in sorted(sums.items(), key=lambda kv: -kv[1][0]):
    if rss == 0:
        continue
    print("| %s | %d | %d | %.1f%% |" % (key, rss, pss, 100.0 * rss / total_rss))
print("| **total** | **%d** | **%d** | |" % (total_rss, sum(p for _, p in sums.values())))
print()
print("bench_trivial_driver, %s gRPC, idle after registration socket creation; VmRSS %s, RssAnon %s, RssFile %s, "
      "threads %s; %d shared libraries mapped." % (link, status["VmRSS"].strip(), status["RssAnon"].strip(),
      status["RssFile"].strip(), status["Threads"].strip(),
      len({m["path"] for m in maps if m["path"].startswith("/") and ".so" in m["path"]})))
EOF
