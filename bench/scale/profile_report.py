#!/usr/bin/env python3
"""kube-apiserver's CPU by what it did, per step, dra-cpp's nodes beside the
Go controller's: the profiles `scale.sh --apiserver-profile` wrote
(DIR/<impl>-<N>-<step>-<k>.pb.gz, back-to-back pieces of a step).

  profile_report.py DIR [--go GO] [--functions 15]

Prints per N and step a table of CPU seconds by kind of work (the first kind
in KINDS whose function is on a sample's stack), then the functions whose
cumulative CPU differs most between the two (a function counts once per
sample). Needs the go command (`go tool pprof -raw`)."""

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys

# (kind, functions that mark it: a prefix of a function's full name), first
# match wins: the collector's cost shows wherever it is paid.
KINDS = (
    ("GC (marking, assists, sweeping)", ("runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep",
                                         "runtime.bgscavenge", "runtime.gcDrain", "runtime.sweepone")),
    ("TLS handshakes", ("crypto/tls.(*Conn).handshakeContext", "crypto/tls.(*serverHandshakeState",
                        "crypto/tls.(*serverHandshakeStateTLS13")),
    ("/metrics (the harness's scrape)", ("k8s.io/component-base/metrics/legacyregistry",
                                         "github.com/prometheus/client_golang/prometheus.(*Registry).Gather",
                                         "github.com/prometheus/common/expfmt")),
    ("watch cache: events in, fan-out to watchers", ("k8s.io/apiserver/pkg/storage/etcd3.(*watchChan)",
                                                     "k8s.io/apiserver/pkg/storage/etcd3.(*concurrentOrderedEventProcessing)",
                                                     "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).dispatchEvent",
                                                     "k8s.io/apiserver/pkg/storage/cacher.(*watchCache)",
                                                     "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).processEvent",
                                                     "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).dispatchEvents")),
    ("watches: initial events, encoding and sending", ("k8s.io/apiserver/pkg/storage/cacher.(*cacheWatcher)",
                                                       "k8s.io/apiserver/pkg/endpoints/handlers.serveWatch",
                                                       "k8s.io/apiserver/pkg/endpoints/handlers.(*WatchServer)",
                                                       "k8s.io/apiserver/pkg/endpoints/handlers.serveWatchHandler")),
    ("writes (create, update, delete)", ("k8s.io/apiserver/pkg/endpoints/handlers/finisher.finishRequest",
                                         "k8s.io/apiserver/pkg/endpoints/handlers.CreateResource",
                                         "k8s.io/apiserver/pkg/endpoints/handlers.UpdateResource",
                                         "k8s.io/apiserver/pkg/endpoints/handlers.DeleteCollection",
                                         "k8s.io/apiserver/pkg/endpoints/handlers.DeleteResource")),
    ("lists and gets", ("k8s.io/apiserver/pkg/endpoints/handlers.ListResource",
                        "k8s.io/apiserver/pkg/endpoints/handlers.GetResource")),
    ("audit log", ("k8s.io/apiserver/pkg/audit", "k8s.io/apiserver/plugin/pkg/audit")),
    ("other request filters (authn, authz, APF)", ("k8s.io/apiserver/pkg/endpoints/filters",
                                                   "k8s.io/apiserver/pkg/server/filters",
                                                   "k8s.io/apiserver/pkg/util/flowcontrol")),
    ("HTTP/2 framing, TLS records, sockets", ("net/http.(*http2", "golang.org/x/net/http2", "crypto/tls.(*Conn)",
                                              "net/http.(*conn)", "internal/poll", "net.(*conn)")),
    ("etcd client", ("go.etcd.io/etcd/client", "google.golang.org/grpc")),
    ("scheduler and idle threads", ("runtime.schedule", "runtime.findRunnable", "runtime.mcall",
                                    "runtime.sysmon", "runtime.futex", "runtime.notesleep")),
)
OTHER = "other"

SAMPLE = re.compile(r"^\s*(\d+)\s+(\d+):((?:\s+\d+)+)\s*$")
LOCATION = re.compile(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)")
INLINED = re.compile(r"^\s{6,}(\S+) \S+:\d+")


def read_raw(go, path):
    """[(cpu seconds, [function, ... leaf first])] of one profile."""
    text = subprocess.run([go, "tool", "pprof", "-raw", path], check=True, capture_output=True, text=True).stdout
    samples, functions, section, last = [], {}, None, None
    for line in text.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = SAMPLE.match(line)
            if m:
                samples.append((int(m.group(2)) / 1e9, [int(x) for x in m.group(3).split()]))
        elif section == "Locations":
            m = LOCATION.match(line)
            if m:
                last = int(m.group(1))
                functions[last] = [m.group(2)]
                continue
            m = INLINED.match(line)
            if m and last is not None:
                functions[last].append(m.group(1))
    return [(seconds, [f for loc in stack for f in functions.get(loc, ["?"])]) for seconds, stack in samples]


def kind_of(stack):
    for kind, marks in KINDS:
        if any(f.startswith(marks) for f in stack):
            return kind
    return OTHER


def summarize(go, paths):
    """CPU seconds by kind, and cumulative seconds by function."""
    by_kind, by_function = collections.Counter(), collections.Counter()
    for path in paths:
        for seconds, stack in read_raw(go, path):
            by_kind[kind_of(stack)] += seconds
            for f in set(stack):
                by_function[f] += seconds
    return by_kind, by_function


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--go", default=os.environ.get("GO") or shutil.which("go") or "/usr/local/go/bin/go")
    p.add_argument("--functions", type=int, default=15)
    args = p.parse_args()
    steps = collections.defaultdict(dict)  # (N, step) -> impl -> pieces
    for path in sorted(glob.glob(os.path.join(args.dir, "*.pb.gz"))):
        m = re.match(r"(go|cpp)-(\d+)-(.+)-\d+\.pb\.gz$", os.path.basename(path))
        if m:
            steps[(int(m.group(2)), m.group(3))].setdefault(m.group(1), []).append(path)
    if not steps:
        sys.exit("profile_report: no profiles in %s (scale.sh --apiserver-profile writes them)" % args.dir)
    names = {"cpp": "dra-cpp", "go": "Go controller"}
    # In the order the steps ran (their first piece's time; one
    # implementation runs all its steps before the next).
    order = {key: min(os.path.getmtime(p) for pieces in impls.values() for p in pieces) for key, impls in steps.items()}
    for (n, step), impls in sorted(steps.items(), key=lambda kv: (kv[0][0], order[kv[0]])):
        have = [i for i in ("cpp", "go") if i in impls]
        data = {i: summarize(args.go, impls[i]) for i in have}
        print("\n### %s, %d nodes: kube-apiserver CPU seconds by kind of work\n" % (step, n))
        print("| kind | " + " | ".join(names[i] for i in have) + " |" + (" difference |" if len(have) == 2 else ""))
        print("|---|" + "---:|" * (len(have) + (1 if len(have) == 2 else 0)))
        kinds = [k for k, _ in KINDS] + [OTHER]
        for k in kinds + ["total"]:
            values = [sum(data[i][0].values()) if k == "total" else data[i][0][k] for i in have]
            line = "| %s | %s |" % (k, " | ".join("%.2f" % v for v in values))
            if len(have) == 2:
                line += " %+.2f |" % (values[0] - values[1])
            print(line)
        if len(have) == 2:
            cpp, go = data["cpp"][1], data["go"][1]
            diff = sorted(set(cpp) | set(go), key=lambda f: abs(cpp[f] - go[f]), reverse=True)
            print("\nFunctions whose cumulative CPU differs most (s): dra-cpp, Go, difference\n")
            print("| function | dra-cpp | Go | difference |")
            print("|---|---:|---:|---:|")
            for f in diff[:args.functions]:
                print("| `%s` | %.2f | %.2f | %+.2f |" % (f, cpp[f], go[f], cpp[f] - go[f]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
