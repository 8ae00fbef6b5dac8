#!/usr/bin/env python3
"""The harness of bench/scale/scale.sh (read its header first).

  scale.py run --cluster DIR --impl go|cpp --bin BIN --nodes N --slices FILE
               --out RESULT.json [--steady S] [--disruptions LIST] [--claims M]
  scale.py report RESULT.json... [--plots DIR]

run: one implementation at one N against the running cluster of DIR
(tests/e2e/cluster.sh): creates the N Nodes, starts BIN (a publisher taking
--nodes, bench/slice_publisher.cc or bench/gosdk/cmd/publisher) for all of
them, publishes, holds still for S seconds, then runs the disruptions one after
the other, measuring each; writes RESULT.json. Progress on stderr.

report: the Markdown tables of docs/performance.md from RESULT files (any
mix of implementations and N) on stdout, and SVG plots into DIR.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from publisher_go_vs_cpp import HARNESS_AGENT, Api, Side, proc_cpu_s, proc_minor_faults, proc_status_kb, proc_system_cpu_s, watch_stream  # noqa: E402

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
# rollout before change-one: a restarted publisher starts from the pool as
# bench_gpu_slices printed it.
DISRUPTIONS = ("apiserver-restart", "etcd-compaction", "wipe", "rollout", "change-one")


def log(msg):
    print("scale: %s" % msg, file=sys.stderr, flush=True)


# --- kube-apiserver's /metrics ----------------------------------------------

def parse_labels(text):
    labels = {}
    for part in text.split('",'):
        if "=" in part:
            k, v = part.split("=", 1)
            labels[k.strip()] = v.strip().strip('"')
    return labels


# What /metrics adds to a step (the requests themselves come from the audit log).
COUNTERS = ("watch_events_slices", "watch_events_claims", "watch_bytes_slices", "watch_bytes_claims",
            "response_bytes_slices", "body_bytes_slices", "heap_alloc_bytes", "gc_cycles")
# kube-apiserver's Go runtime: what a step made it allocate and collect.
RUNTIME_COUNTERS = {"go_memstats_alloc_bytes_total": "heap_alloc_bytes", "go_gc_duration_seconds_count": "gc_cycles"}


def scrape(api):
    """The counters and gauges this harness reads, or None while the
    kube-apiserver does not answer."""
    try:
        status, data = api.request("GET", "/metrics")
    except OSError:
        return None
    if status != 200:
        return None
    m = {"open_watches_slices": 0.0, **{c: 0.0 for c in COUNTERS}}
    for line in data.decode().splitlines():
        if line.startswith("#"):
            continue
        if "{" not in line:
            name, _, value = line.partition(" ")
            if name in RUNTIME_COUNTERS:
                m[RUNTIME_COUNTERS[name]] = float(value)
            continue
        name, rest = line.split("{", 1)
        labels_text, value = rest.rsplit("} ", 1)
        if name not in ("apiserver_longrunning_requests", "apiserver_watch_events_total",
                        "apiserver_watch_events_sizes_sum", "apiserver_response_sizes_sum",
                        "apiserver_request_body_size_bytes_sum"):
            continue
        labels = parse_labels(labels_text)
        value = float(value)
        what = set(labels.values())
        kind = "slices" if ({"resourceslices", "ResourceSlice"} & what) else \
            "claims" if ({"resourceclaims", "ResourceClaim"} & what) else None
        if kind is None or labels.get("subresource", ""):
            continue
        if kind == "slices" and name == "apiserver_longrunning_requests":
            if labels.get("verb") == "WATCH":
                m["open_watches_slices"] += value
        elif name == "apiserver_watch_events_total":
            m["watch_events_" + kind] += value
        elif name == "apiserver_watch_events_sizes_sum":
            m["watch_bytes_" + kind] += value
        elif kind == "slices" and name == "apiserver_response_sizes_sum":
            m["response_bytes_slices"] += value
        elif kind == "slices" and name == "apiserver_request_body_size_bytes_sum":
            m["body_bytes_slices"] += value
    return m


def tcp_passive_opens():
    """TCP connections this machine's servers accepted (/proc/net/snmp):
    during a step, the nodes' connections to kube-apiserver (each a TLS
    handshake), beside a few of the harness's (one per request) and
    kube-apiserver's to etcd."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("PassiveOpens")])


class Process:
    """CPU seconds (and those in the kernel) and minor page faults of a
    cluster process across restarts (its pid file is re-read; each pid's
    last reading counts)."""

    def __init__(self, pid_file):
        self.pid_file = pid_file
        self.cpu_by_pid = {}
        self.system_cpu_by_pid = {}
        self.faults_by_pid = {}

    def pid(self):
        try:
            with open(self.pid_file) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def sample(self):
        pid = self.pid()
        if pid:
            try:
                self.cpu_by_pid[pid] = proc_cpu_s(pid)
                self.system_cpu_by_pid[pid] = proc_system_cpu_s(pid)
                self.faults_by_pid[pid] = proc_minor_faults(pid)
            except OSError:
                pass
        return sum(self.cpu_by_pid.values())

    def system_cpu_s(self):
        return sum(self.system_cpu_by_pid.values())

    def minor_faults(self):
        """Since the first sample: each a page the Go runtime touched first
        (a heap growing into memory the OS had taken back)."""
        return sum(self.faults_by_pid.values())

    def peak_rss_mb(self):
        pid = self.pid()
        try:
            return proc_status_kb(pid, "VmHWM") / 1024 if pid else 0
        except OSError:
            return 0


# What kube-apiserver does after a step's last request (encoding and
# sending its watch events, collecting the garbage) is done within this.
ACTIVE_TAIL_S = 3.0


class Sampler(threading.Thread):
    """The processes' CPU five times a second (across kube-apiserver
    restarts), and /metrics at the step's start and end only: scraping it is
    most of what an idle kube-apiserver does, which each step's CPU would
    carry in proportion to its length (the Go controller's steps last 30-90
    s, dra-cpp's a few)."""

    PERIOD_S = 0.2

    def __init__(self, api, apiserver, etcd):
        super().__init__(daemon=True)
        self.api, self.apiserver, self.etcd = api, apiserver, etcd
        self.stop_event = threading.Event()
        self.cpu0 = (apiserver.sample(), etcd.sample())
        self.faults0 = apiserver.minor_faults()
        self.system_cpu0 = apiserver.system_cpu_s()
        self.pid0 = apiserver.pid()
        self.first = scrape(api)
        self.series = [(time.time(), self.cpu0[0])]  # kube-apiserver's CPU seconds, by wall time

    def run(self):
        while not self.stop_event.wait(self.PERIOD_S):
            self.series.append((time.time(), self.apiserver.sample()))
            self.etcd.sample()

    def apiserver_cpu_until(self, t):
        """kube-apiserver's CPU seconds from the step's start until the
        first sample at or after wall time t."""
        return next((cpu for at, cpu in self.series if at >= t), self.series[-1][1]) - self.cpu0[0]

    def finish(self):
        """The step's CPU and counters: a kube-apiserver restarted during
        the step counts from zero, and its predecessor's last moments (its
        watches closing) are not counted."""
        self.stop_event.set()
        self.join()
        last = scrape(self.api)
        if last is None or self.first is None:
            sys.exit("kube-apiserver does not answer /metrics at the end of a step")
        restarted = self.apiserver.pid() != self.pid0
        cpu = (self.apiserver.sample() - self.cpu0[0], self.etcd.sample() - self.cpu0[1])
        self.series.append((time.time(), self.cpu0[0] + cpu[0]))
        return {"requests": {c: last[c] - (0 if restarted else self.first[c]) for c in COUNTERS},
                "apiserver_cpu_s": cpu[0], "etcd_cpu_s": cpu[1],
                "apiserver_system_cpu_s": self.apiserver.system_cpu_s() - self.system_cpu0,
                "apiserver_minor_faults": self.apiserver.minor_faults() - self.faults0}


class Profiler(threading.Thread):
    """kube-apiserver's CPU profile over a step (/debug/pprof/profile), in
    back-to-back pieces of PIECE_S seconds: a restart ends the piece it cuts
    (lost), and the next starts once the server answers again. Each piece is
    written to PREFIX-<k>.pb.gz (`go tool pprof` merges them)."""

    PIECE_S = 5

    def __init__(self, api, prefix):
        super().__init__(daemon=True)
        self.api, self.prefix = api, prefix
        self.stop_event = threading.Event()
        self.pieces = 0

    def run(self):
        while not self.stop_event.is_set():
            try:
                status, data = self.api.request("GET", "/debug/pprof/profile?seconds=%d" % self.PIECE_S)
            except OSError:
                status = None
            if status != 200:
                self.stop_event.wait(0.2)
                continue
            with open("%s-%d.pb.gz" % (self.prefix, self.pieces), "wb") as f:
                f.write(data)
            self.pieces += 1

    def finish(self):
        """Waits for the piece under way: it covers the step's end."""
        self.stop_event.set()
        self.join()
        return self.pieces


# --- kube-apiserver's audit log: every request with its time -----------------

AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: resource.k8s.io
    resources: ["resourceslices", "resourceclaims"]
- level: None
"""


def parse_time(text):
    """RFC 3339 with microseconds -> seconds since the epoch."""
    return datetime.datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


class AuditLog:
    """The requests the publishers made, from the audit log (policy
    AUDIT_POLICY), which survives kube-apiserver restarts and times every
    request when it arrived: the harness's own (its user agent) and
    kube-apiserver's own (its loopback client) are left out."""

    def __init__(self, path):
        self.path = path
        self.offset = 0

    def skip_to_end(self):
        self.offset = os.path.getsize(self.path) if os.path.exists(self.path) else 0

    def read(self):
        """Requests since the last read: {auditID: (received, resource, verb, code)}."""
        requests = {}
        if not os.path.exists(self.path):
            return requests
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            event = json.loads(line)
            agent = event.get("userAgent", "")
            if agent.startswith(HARNESS_AGENT) or agent.startswith("kube-apiserver"):
                continue
            ref = event.get("objectRef", {})
            resource = ref.get("resource", "") + ("/" + ref["subresource"] if ref.get("subresource") else "")
            code = event.get("responseStatus", {}).get("code", 0)
            previous = requests.get(event["auditID"])
            verb = event["verb"].upper()
            if verb == "WATCH" and "sendInitialEvents=true" in event.get("requestURI", ""):
                verb = "WATCHLIST"  # client-go's list, streamed as a watch
            requests[event["auditID"]] = (parse_time(event["requestReceivedTimestamp"]), resource, verb,
                                          code or (previous[3] if previous else 0))
        return requests


def count_requests(requests, t0, resource):
    """By verb (all, and those that succeeded), and per second from t0, of
    one resource: the requests that arrived from t0 on (a watch that ended in
    the step but opened before it is logged then too)."""
    verbs, succeeded, per_second = {}, {}, {}
    for received, res, verb, code in requests.values():
        if res != resource or received < t0:
            continue
        verbs[verb] = verbs.get(verb, 0) + 1
        if 200 <= code < 300:
            succeeded[verb] = succeeded.get(verb, 0) + 1
        second = int(received - t0)
        per_second[second] = per_second.get(second, 0) + 1
    return verbs, succeeded, [per_second.get(i, 0) for i in range(max(per_second) + 1)] if per_second else []


# --- what the server holds -----------------------------------------------------

def slice_canon(devices, counters):
    return (tuple(sorted((d["name"], d.get("attributes", {}).get("model", {}).get("string")) for d in devices)),
            tuple(sorted(c["name"] for c in counters)))


class Watcher(threading.Thread):
    """All slices of the driver, listed then watched (resumed after the watch
    ends, relisted after 410), and whether every node's pool equals the
    expected one."""

    def __init__(self, api, driver, nodes):
        super().__init__(daemon=True)
        self.api, self.driver, self.nodes = api, driver, nodes
        self.cond = threading.Condition()
        self.by_name = {}  # slice name -> (node, generation, count, canon)
        self.by_node = {}  # node -> set of slice names
        self.ok_nodes = set()
        self.expected = []
        self.matched = False
        self.transition_ns = 0
        self.diverged_since_mark = False
        self.rv = None
        self.bytes = 0  # received: what kube-apiserver's size metrics count for this watcher too

    def expect(self, canons):
        with self.cond:
            self.expected = sorted(canons)
            self.ok_nodes = {n for n in self.by_node if self._node_ok(n)}
            self._evaluate()

    def _node_ok(self, node):
        names = self.by_node.get(node, ())
        if len(names) != len(self.expected):
            return False
        slices = [self.by_name[n] for n in names]
        return len({s[1] for s in slices}) == 1 and all(s[2] == len(self.expected) for s in slices) and \
            sorted(s[3] for s in slices) == self.expected

    def _evaluate(self):
        ok = len(self.ok_nodes) == self.nodes
        if ok and not self.matched:
            self.transition_ns = time.time_ns()
        if not ok:
            self.diverged_since_mark = True
        self.matched = ok
        self.cond.notify_all()

    def _put(self, obj, deleted=False):
        name = obj["metadata"]["name"]
        old = self.by_name.pop(name, None)
        if old:
            self.by_node[old[0]].discard(name)
        spec = obj.get("spec", {})
        node = spec.get("nodeName", "")
        if not deleted:
            pool = spec.get("pool", {})
            self.by_name[name] = (node, pool.get("generation"), pool.get("resourceSliceCount"),
                                  slice_canon(spec.get("devices", []), spec.get("sharedCounters", [])))
            self.by_node.setdefault(node, set()).add(name)
        for n in {node, old[0] if old else node}:
            if self._node_ok(n):
                self.ok_nodes.add(n)
            else:
                self.ok_nodes.discard(n)

    def list_all(self):
        path = SLICES + "?" + urllib.parse.urlencode({"fieldSelector": "spec.driver=" + self.driver})
        status, data = self.api.request("GET", path)
        self.bytes += len(data)
        if status != 200:
            raise RuntimeError("list: HTTP %d" % status)
        body = json.loads(data)
        with self.cond:
            self.by_name, self.by_node = {}, {}
            for item in body["items"]:
                self._put(item)
            self.ok_nodes = {n for n in self.by_node if self._node_ok(n)}
            self._evaluate()
        self.rv = body["metadata"]["resourceVersion"]

    def run(self):
        while True:
            try:
                if self.rv is None:
                    self.list_all()
                self.watch()
            except Exception as e:  # noqa: BLE001 - the server went away: resume
                log("harness watch: %s; resuming" % e)
                time.sleep(0.5)

    def watch(self):
        conn = self.api.connect(timeout=3700)
        path = SLICES + "?" + urllib.parse.urlencode({
            "watch": "1", "resourceVersion": self.rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3600",
            "fieldSelector": "spec.driver=" + self.driver})
        conn.request("GET", path, headers={"Accept": "application/json", "User-Agent": HARNESS_AGENT})
        resp = conn.getresponse()
        if resp.status == 410:
            self.rv = None
            return
        if resp.status != 200:
            raise RuntimeError("watch: HTTP %d" % resp.status)
        for size, events in watch_stream(resp):
            self.bytes += size
            with self.cond:
                for event in events:
                    kind, obj = event["type"], event["object"]
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            self.rv = None
                        return
                    self.rv = obj["metadata"]["resourceVersion"]
                    if kind != "BOOKMARK":
                        self._put(obj, deleted=kind == "DELETED")
                self._evaluate()

    def mark(self):
        with self.cond:
            self.diverged_since_mark = not self.matched

    def wait_matched(self, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self.matched:
                left = deadline - time.monotonic()
                if left <= 0:
                    sys.exit("timed out after %.0f s waiting for %s (%d of %d pools as expected)"
                             % (timeout, what, len(self.ok_nodes), self.nodes))
                self.cond.wait(min(left, 1.0))


# --- one run -------------------------------------------------------------------

def parallel(items, request, ok_status):
    """request(item) for every item, 8 at a time; exits on a status other than
    ok_status (or 409 Conflict: it exists)."""
    failures = []

    def work(part):
        for item in part:
            status, data = request(item)
            if status not in (ok_status, 409):
                failures.append("%s: HTTP %d: %s" % (item, status, data[:200]))
    threads = [threading.Thread(target=work, args=(items[k::8],)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        sys.exit("; ".join(failures[:3]))


def create_nodes(api, prefix, n):
    parallel(["%s-%d" % (prefix, i) for i in range(n)], lambda name: api.request("POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}), 201)


def cluster_sh(args, *cmd):
    subprocess.run([os.path.join(args.repo, "tests/e2e/cluster.sh"), *cmd, args.cluster], check=True,
                   stdout=sys.stderr, env=dict(os.environ, DRA_K8S_BIN=args.k8s_bin))


def run(args):
    api = Api(args.cluster)
    audit = AuditLog(args.audit_log)
    apiserver = Process(os.path.join(args.cluster, "pids/kube-apiserver.pid"))
    etcd = Process(os.path.join(args.cluster, "pids/etcd.pid"))
    with open(args.slices) as f:
        template = json.load(f)["items"]
    models = []
    for item in template:
        for d in item["spec"].get("devices", []):
            models.append(d.get("attributes", {}).get("model", {}).get("string", ""))

    def expected():
        canons, i = [], 0
        for item in template:
            devices = []
            for d in item["spec"].get("devices", []):
                devices.append({"name": d["name"], "attributes": {"model": {"string": models[i]}}})
                i += 1
            canons.append(slice_canon(devices, item["spec"].get("sharedCounters", [])))
        return canons

    def toggle(k):
        step = len(models) // k
        for i in range(k):
            d = step // 2 + i * step
            models[d] = "a100" if models[d] == "h100" else "h100"

    n = args.nodes
    log("%s, %d nodes: creating the Nodes" % (args.impl, n))
    create_nodes(api, args.prefix, n)
    watcher = Watcher(api, args.driver, n)
    watcher.list_all()
    watcher.start()
    watcher.expect(expected())

    argv = [args.bin, "--kubeconfig", os.path.join(args.cluster, "admin.kubeconfig"), "--node", args.prefix,
            "--nodes", str(n), "--driver", args.driver, "--slices", args.slices]
    if args.binding_reconciler != "none":
        argv += ["--binding-reconciler", args.binding_reconciler]
    result = {"impl": args.impl, "nodes": n, "binding_reconciler": args.binding_reconciler,
              "slices_per_pool": len(template), "devices_per_pool": len(models), "steps": {}, "cmdline": args.cmdline, "loadavg_before": open("/proc/loadavg").read().split()[:3]}
    side = Side(args.impl, argv, os.path.join(args.work, "%s-%d.log" % (args.impl, n)))

    def step(name, action, wait=True):
        """Runs `action`, waits until the server holds the expected pools and
        the publishers are idle, and measures."""
        open_before = (scrape(api) or {}).get("open_watches_slices", 0)
        audit.skip_to_end()
        sampler = Sampler(api, apiserver, etcd)
        profiler = None
        if args.profile_dir:
            profiler = Profiler(api, os.path.join(args.profile_dir, "%s-%d-%s" % (
                args.impl, n, name.replace(" ", "-"))))
            profiler.start()
        running = side.proc is not None and side.proc.poll() is None
        pid0 = side.proc.pid if running else None
        sim_cpu0 = proc_cpu_s(pid0) if running else None
        harness_bytes0 = watcher.bytes
        accepted0 = tcp_passive_opens()
        sampler.start()
        watcher.mark()
        t0_ns = time.time_ns()
        reply = action()
        if wait:
            watcher.wait_matched(args.timeout, "%s: every pool as expected" % name)
        # After an outage, until every watch is back.
        deadline = time.monotonic() + args.timeout
        while (scrape(api) or {}).get("open_watches_slices", 0) < open_before:
            if time.monotonic() > deadline:
                sys.exit("%s: timed out waiting for %d watches to be open again" % (name, open_before))
            time.sleep(0.5)
        idle = side.command("idle", timeout=args.timeout)
        r = sampler.finish()
        r["tcp_accepted"] = tcp_passive_opens() - accepted0
        if profiler:
            r["profile_pieces"] = profiler.finish()
        r["wall_s"] = (time.time_ns() - t0_ns) / 1e9
        # Requests from the audit log; /metrics keeps the watch events and bytes.
        requests = audit.read()
        r["requests"]["slices"], r["requests"]["slices_succeeded"], r["per_second_slices"] = count_requests(
            requests, t0_ns / 1e9, "resourceslices")
        r["requests"]["claims"], _, r["per_second_claims"] = count_requests(requests, t0_ns / 1e9, "resourceclaims")
        # kube-apiserver's CPU while it serves the step: until ACTIVE_TAIL_S
        # after the last request arrived (the Go controller's steps then
        # wait 30-90 s for its delayed re-syncs, in which kube-apiserver
        # does nothing for the nodes but its idle rate, whose estimate would
        # otherwise weigh that much more on its figure than on dra-cpp's).
        arrivals = [received for received, resource, _, _ in requests.values()
                    if resource in ("resourceslices", "resourceclaims") and received >= t0_ns / 1e9]
        if arrivals:
            end = min(max(arrivals) + ACTIVE_TAIL_S, sampler.series[-1][0])
            r["active_s"] = end - t0_ns / 1e9
            r["apiserver_cpu_active_s"] = sampler.apiserver_cpu_until(end)
        r["converge_s"] = (watcher.transition_ns - t0_ns) / 1e9 if wait and watcher.diverged_since_mark else None
        if isinstance(reply, dict) and "updated_ns" in reply:
            # The simulator's loop over its nodes: the last node's change
            # starts here (in a cluster every node has its own CPU).
            r["handed_over_s"] = (reply["updated_ns"] - t0_ns) / 1e9
        r["idle_s"] = (idle["idle_ns"] - t0_ns) / 1e9 - 0.5
        r["publisher_stats"] = idle
        # Payload bytes by kube-apiserver's size metrics, the harness's own taken off.
        m = r["requests"]
        r["bytes_to_nodes"] = max(0, m["response_bytes_slices"] + m["watch_bytes_slices"] -
                                  (watcher.bytes - harness_bytes0))
        r["bytes_from_nodes"] = m["body_bytes_slices"]
        if running:
            # A rollout's new process: its own CPU, from its start.
            r["sim_cpu_s"] = proc_cpu_s(side.proc.pid) - (sim_cpu0 if side.proc.pid == pid0 else 0)
        r["apiserver_peak_rss_mb"] = apiserver.peak_rss_mb()
        result["steps"][name] = r
        s = r["requests"]["slices"]
        log("%s: %s in %.1f s; apiserver %.1f CPU s; %d connections accepted; %s" % (
            name, ", ".join("%s %d" % (v, c) for v, c in sorted(s.items())) or "no requests",
            r["idle_s"], r["apiserver_cpu_s"], r["tcp_accepted"],
            "converged in %.2f s" % r["converge_s"] if r["converge_s"] is not None else "never diverged"))
        return r

    # Start: every node lists and watches its slices (none yet).
    def start():
        side.start(args.timeout)
        result["pid"] = side.proc.pid
    t_start = time.monotonic()
    step("start", start, wait=False)
    result["start_to_ready_s"] = time.monotonic() - t_start
    watcher.expect(expected())
    step("first publish", lambda: side.command("publish"))
    result["sim_rss_mb"] = proc_status_kb(side.proc.pid, "VmRSS") / 1024
    result["sim_threads"] = proc_status_kb(side.proc.pid, "Threads")
    if args.steady:
        log("steady state: %d s" % args.steady)
        step("steady", lambda: time.sleep(args.steady))

    if args.claims:
        def churn():
            names = ["scale-claim-%d" % i for i in range(args.claims)]
            claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
            spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": args.driver}}]}}
            parallel(names, lambda name: api.request("POST", claims, {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
                "spec": spec}), 201)
            parallel(names, lambda name: api.request("DELETE", claims + "/" + name), 200)
        r = step("claim churn", churn, wait=False)
        r["claim_changes"] = 2 * args.claims
        log("claim churn: %d claim changes sent as %d watch events on resourceclaims (%.1f per change)" % (
            2 * args.claims, r["requests"]["watch_events_claims"],
            r["requests"]["watch_events_claims"] / (2 * args.claims)))

    disruptions = [d for d in args.disruptions.split(",") if d]
    for d in disruptions:
        if d == "apiserver-restart":
            step(d, lambda: (cluster_sh(args, "apiserver-stop"), cluster_sh(args, "apiserver-start")))
        elif d == "etcd-compaction":
            step(d, lambda: (cluster_sh(args, "etcd-compact"), cluster_sh(args, "apiserver-stop"),
                             cluster_sh(args, "apiserver-start")))
        elif d == "wipe":
            def wipe():
                status, data = api.request("DELETE", SLICES + "?" + urllib.parse.urlencode(
                    {"fieldSelector": "spec.driver=" + args.driver}))
                if status != 200:
                    sys.exit("delete collection: HTTP %d: %s" % (status, data[:300]))
            step(d, wipe)
        elif d == "change-one":
            def change():
                toggle(1)
                watcher.expect(expected())
                return side.command("change 1")
            step(d, change)
        elif d == "rollout":
            if "change-one" in disruptions[:disruptions.index(d)]:
                sys.exit("rollout must come before change-one (the restarted publisher starts from the template)")
            def rollout():
                side.quit()
                side.log_path += ".rollout"
                side.argv.append("--publish-at-start")
                side.start(args.timeout)
            step(d, rollout)
        else:
            sys.exit("unknown disruption %s" % d)
    side.quit()
    result["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    errors = sum(s["publisher_stats"].get("errors", 0) for s in result["steps"].values())
    if errors:
        log("the publishers reported %d errors, outages included (see %s)" % (errors, side.log_path))
    if args.check:
        failed = check(result)
        for f in failed:
            log("target missed: %s" % f)
        if failed:
            return 1
        log("every target met")
    return 0


# Writes each step may make: (verb, how many per pool); every other write is
# a miss.
EXPECTED_WRITES = {"first publish": ("CREATE", "slices"), "wipe": ("CREATE", "slices"), "change-one": ("UPDATE", 1)}
WRITE_VERBS = ("CREATE", "UPDATE", "PATCH", "DELETE")


def check(result):
    """The targets that do not depend on time: exactly the writes a step
    needs, nothing in steady state, at most one list per node after any
    disruption, every pool right again (the step waited for it). Writes and
    lists count when they succeeded: a request that kube-apiserver refused
    while it was starting is retried, which is no extra work."""
    n, failed = result["nodes"], []
    for name, step in result["steps"].items():
        verbs = step["requests"]["slices_succeeded"]
        want_verb, per_pool = EXPECTED_WRITES.get(name, (None, 0))
        want = n * (result["slices_per_pool"] if per_pool == "slices" else per_pool)
        for verb in WRITE_VERBS:
            expected = want if verb == want_verb else 0
            if verbs.get(verb, 0) != expected:
                failed.append("%s: %d %s, want %d" % (name, verbs.get(verb, 0), verb.lower(), expected))
        lists = verbs.get("LIST", 0) + verbs.get("WATCHLIST", 0)
        if lists > n:
            failed.append("%s: %d lists for %d nodes, want at most one each" % (name, lists, n))
        if name == "steady" and sum(step["requests"]["slices"].values()):
            failed.append("steady: %d requests, want none" % sum(step["requests"]["slices"].values()))
    return failed


# --- report --------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--cluster", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--repo", required=True)
    r.add_argument("--k8s-bin", required=True)
    r.add_argument("--impl", required=True)
    r.add_argument("--bin", required=True)
    r.add_argument("--nodes", type=int, required=True)
    r.add_argument("--slices", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--prefix", default="scale")
    r.add_argument("--driver", default="gpu.example.com")
    r.add_argument("--steady", type=float, default=60)
    r.add_argument("--disruptions", default=",".join(DISRUPTIONS))
    r.add_argument("--timeout", type=float, default=900)
    r.add_argument("--binding-reconciler", default="none", choices=("none", "node", "central"))
    r.add_argument("--claims", type=int, default=0)
    r.add_argument("--check", action="store_true", help="exit 1 when a target that does not depend on time is missed")
    r.add_argument("--audit-log", required=True, help="kube-apiserver's --audit-log-path (policy: scale.py policy)")
    r.add_argument("--cmdline", default="")
    r.add_argument("--profile-dir", default="", help="write kube-apiserver's CPU profile of each step here")
    sub.add_parser("policy", help="print the audit policy kube-apiserver needs")
    rep = sub.add_parser("report")
    rep.add_argument("results", nargs="+")
    rep.add_argument("--plots", default="")
    args = p.parse_args()
    if args.cmd == "run":
        return run(args)
    if args.cmd == "policy":
        print(AUDIT_POLICY, end="")
        return 0
    import report
    return report.report(args.results, args.plots)


if __name__ == "__main__":
    sys.exit(main())
