#!/usr/bin/env python3
"""The harness of bench/publisher_go_vs_cpp.sh (read its header first).

  publisher_go_vs_cpp.py run --cluster DIR --go BIN --cpp BIN [options]
  publisher_go_vs_cpp.py proxy --target HOST:PORT

run: drives the Go resourceslice controller publisher and the dra-cpp one, one
after the other, through the same steps against the cluster of DIR
(tests/e2e/cluster.sh), and prints the Markdown table on stdout. Progress on
stderr.

proxy: a TCP proxy on 127.0.0.1 (an ephemeral port, printed as {"port": P}) to
HOST:PORT that passes the bytes through unmodified (TLS stays end to end) and
counts them per direction; each line on stdin is answered with
{"up": client-to-server bytes, "down": server-to-client bytes, "connections": n,
"per_connection": [{"up", "down"} per connection, in the order they opened]}.
"""

import argparse
import asyncio
import http.client
import json
import os
import re
import select
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

DEVICES_PER_SLICE = 128  # SplitIntoSlices for these devices; the Go side cuts the same way
HARNESS_AGENT = "dra-bench-harness"  # the user agent of the harness's own requests


def log(msg):
    print("publisher_go_vs_cpp: %s" % msg, file=sys.stderr, flush=True)


# --- the counting proxy ----------------------------------------------------

async def proxy_main(target):
    host, port = target.rsplit(":", 1)
    counts = {"up": 0, "down": 0, "connections": 0, "per_connection": []}

    async def pump(reader, writer, key, conn):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                counts[key] += len(data)
                conn[key] += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - closing a broken connection
                pass

    async def handle(client_reader, client_writer):
        counts["connections"] += 1
        conn = {"up": 0, "down": 0}
        counts["per_connection"].append(conn)
        try:
            server_reader, server_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer, "up", conn),
                             pump(server_reader, client_writer, "down", conn))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    while True:
        line = await stdin.readline()
        if not line:
            break
        print(json.dumps(counts), flush=True)
    server.close()


# --- the API server, as admin ------------------------------------------------

class Api:
    """Requests as the admin client certificate (system:masters)."""

    def __init__(self, cluster_dir):
        env = {}
        with open(os.path.join(cluster_dir, "cluster.env")) as f:
            for line in f:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    env[k] = v
        self.env = env
        url = urllib.parse.urlparse(env["DRA_E2E_SERVER"])
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=env["DRA_E2E_CA_FILE"])
        pki = os.path.join(cluster_dir, "pki")
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def connect(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None):
        conn = self.connect()
        try:
            headers = {"Accept": "application/json", "User-Agent": HARNESS_AGENT}
            if body is not None:
                body = json.dumps(body)
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, data
        finally:
            conn.close()

    def metrics(self):
        """apiserver_request_total on resourceslices by verb (completed
        requests; a watch counts when it ends), the open watches on
        resourceslices (apiserver_longrunning_requests), and node GETs."""
        status, data = self.request("GET", "/metrics")
        if status != 200:
            sys.exit("GET /metrics: HTTP %d" % status)
        verbs, open_watches, node_gets, have_gauge = {}, 0, 0, False
        write_seconds, write_count = 0.0, 0.0
        for line in data.decode().splitlines():
            if line.startswith("apiserver_request_duration_seconds_sum{") or \
                    line.startswith("apiserver_request_duration_seconds_count{"):
                labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
                if labels.get("resource") == "resourceslices" and labels.get("verb") in ("POST", "PUT") and \
                        not labels.get("subresource"):
                    value = float(line.rsplit(" ", 1)[1])
                    if line.startswith("apiserver_request_duration_seconds_sum{"):
                        write_seconds += value
                    else:
                        write_count += value
                continue
            if line.startswith("apiserver_request_total{"):
                labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
                value = float(line.rsplit(" ", 1)[1])
                if labels.get("resource") == "resourceslices" and labels.get("subresource", "") == "":
                    verb = labels["verb"]
                    # A DELETE of the collection (scope "cluster", not "resource") is a deletecollection.
                    if verb == "DELETE" and labels.get("scope") == "cluster":
                        verb = "DELETECOLLECTION"
                    verbs[verb] = verbs.get(verb, 0) + value
                elif labels.get("resource") == "nodes" and labels.get("verb") == "GET" and not labels.get("subresource"):
                    node_gets += value
            elif line.startswith("apiserver_longrunning_requests{"):
                labels = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
                if labels.get("resource") == "resourceslices" and labels.get("verb") == "WATCH":
                    open_watches += float(line.rsplit(" ", 1)[1])
                    have_gauge = True
        return {"verbs": verbs, "open_watches": open_watches, "node_gets": node_gets, "have_gauge": have_gauge,
                "write_seconds": write_seconds, "write_count": write_count}


# --- what the server should hold --------------------------------------------

def expected_device(i, model):
    return {
        "name": "gpu-%05d" % i,
        "attributes": {
            "model": {"string": model},
            "index": {"int": i},
            "driverVersion": {"version": "1.2.3"},
            "healthy": {"bool": True},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }


class Watcher(threading.Thread):
    """Watches the node's slices of the driver (its own watch, open for the
    whole run so that it adds no request to any step) and records when the
    server's state last became equal to the expected one."""

    def __init__(self, api, node, driver):
        super().__init__(daemon=True)
        self.api, self.node, self.driver = api, node, driver
        self.cond = threading.Condition()
        self.slices = {}  # name -> {"index", "generation", "count", "pool", "devices", "ok"}
        self.blocks = []  # expected devices per slice index
        self.matched = False
        self.transition_ns = 0  # when the state last went from different to equal
        self.events = []  # (time_ns, type) of slice events since the last mark()
        self.error = None
        self.selector = "spec.nodeName=%s,spec.driver=%s" % (node, driver)

    def list_now(self):
        path = "/apis/resource.k8s.io/v1/resourceslices?" + urllib.parse.urlencode({"fieldSelector": self.selector})
        status, data = self.api.request("GET", path)
        if status != 200:
            sys.exit("list ResourceSlices: HTTP %d: %s" % (status, data[:300]))
        body = json.loads(data)
        with self.cond:
            for item in body["items"]:
                self._put(item)
            self._evaluate(time.time_ns())
        return body["metadata"]["resourceVersion"]

    def _slice_ok(self, s):
        return 0 <= s["index"] < len(self.blocks) and s["devices"] == self.blocks[s["index"]]

    def _put(self, obj):
        name = obj["metadata"]["name"]
        spec = obj.get("spec", {})
        try:
            index = int(name.split("-", 1)[0], 16)
        except ValueError:
            index = -1
        s = {
            "index": index,
            "generation": spec.get("pool", {}).get("generation"),
            "count": spec.get("pool", {}).get("resourceSliceCount"),
            "pool": spec.get("pool", {}).get("name"),
            "devices": spec.get("devices", []),
        }
        s["ok"] = self._slice_ok(s)
        self.slices[name] = s

    def _evaluate(self, now_ns):
        n = len(self.blocks)
        ok = n > 0 and len(self.slices) == n
        if ok:
            gens = {s["generation"] for s in self.slices.values()}
            ok = (len(gens) == 1 and sorted(s["index"] for s in self.slices.values()) == list(range(n))
                  and all(s["ok"] and s["count"] == n and s["pool"] == self.node for s in self.slices.values()))
        if ok and not self.matched:
            self.transition_ns = now_ns
        self.matched = ok
        self.cond.notify_all()

    def expect(self, models):
        """Sets the expected devices (None: no slices expected)."""
        with self.cond:
            if models is None:
                self.blocks = []
            else:
                devices = [expected_device(i, m) for i, m in enumerate(models)]
                self.blocks = [devices[i:i + DEVICES_PER_SLICE] for i in range(0, len(devices), DEVICES_PER_SLICE)]
            for s in self.slices.values():
                s["ok"] = self._slice_ok(s)
            self._evaluate(time.time_ns())

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                if self.error:
                    sys.exit("the harness's watch failed: %s" % self.error)
                left = deadline - time.monotonic()
                if left <= 0:
                    sys.exit("timed out after %.0f s waiting for %s (%d slices on the node)"
                             % (timeout, what, len(self.slices)))
                self.cond.wait(min(left, 1.0))

    def mark(self):
        with self.cond:
            self.events = []

    def timeline(self, t0_ns):
        """Seconds from t0 to the first and last event of each type since mark()."""
        with self.cond:
            out = {}
            for t, kind in self.events:
                d = (t - t0_ns) / 1e9
                first, last = out.get(kind, (d, d))
                out[kind] = (min(first, d), max(last, d))
            return out

    def count(self):
        with self.cond:
            return len(self.slices)

    def start_watch(self, rv):
        self.rv = rv
        self.start()

    def run(self):
        try:
            conn = self.api.connect(timeout=3700)
            path = "/apis/resource.k8s.io/v1/resourceslices?" + urllib.parse.urlencode({
                "watch": "1", "resourceVersion": self.rv, "allowWatchBookmarks": "true",
                "timeoutSeconds": "3600", "fieldSelector": self.selector})
            conn.request("GET", path, headers={"Accept": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise RuntimeError("watch: HTTP %d: %s" % (resp.status, resp.read(300)))
            for _, events in watch_stream(resp):
                now_ns = time.time_ns()
                if not events:
                    continue
                with self.cond:
                    changed = False
                    for event in events:
                        kind, obj = event["type"], event["object"]
                        if kind == "ERROR":
                            raise RuntimeError("watch error: %s" % obj)
                        if kind == "BOOKMARK":
                            continue
                        changed = True
                        self.events.append((now_ns, kind))
                        if kind == "DELETED":
                            self.slices.pop(obj["metadata"]["name"], None)
                        else:
                            self._put(obj)
                    if changed:
                        self._evaluate(now_ns)
            raise RuntimeError("the watch ended")
        except Exception as e:  # noqa: BLE001 - reported to the main thread
            with self.cond:
                self.error = str(e)
                self.cond.notify_all()


def watch_stream(resp):
    """The events of a JSON watch response as they come: yields (bytes read,
    [complete events]) for every chunk, until the stream ends."""
    decoder = json.JSONDecoder()
    buf = ""
    while True:
        chunk = resp.read1(1 << 20)
        if not chunk:
            return
        buf += chunk.decode()
        events = []
        while True:
            buf = buf.lstrip()
            if not buf:
                break
            try:
                event, end = decoder.raw_decode(buf)
            except json.JSONDecodeError:
                break  # incomplete
            events.append(event)
            buf = buf[end:]
        yield len(chunk), events


# --- one publisher process -----------------------------------------------------

def read_json_line(stream, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            sys.exit("timed out after %.0f s waiting for %s" % (timeout, what))
        ready, _, _ = select.select([stream], [], [], left)
        if ready:
            line = stream.readline()
            if not line:
                sys.exit("%s: the process closed its stdout" % what)
            return json.loads(line)


def proc_stat_fields(pid):
    """/proc/PID/stat after the command name: fields[0] is the state."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def proc_cpu_s(pid):
    fields = proc_stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_system_cpu_s(pid):
    """The part of proc_cpu_s spent in the kernel on the process's behalf."""
    return int(proc_stat_fields(pid)[12]) / os.sysconf("SC_CLK_TCK")


def proc_minor_faults(pid):
    return int(proc_stat_fields(pid)[7])


def proc_status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Proxy:
    def __init__(self, target):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "proxy", "--target", target],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.port = read_json_line(self.proc.stdout, 10, "the proxy's port")["port"]

    def counts(self):
        self.proc.stdin.write("report\n")
        self.proc.stdin.flush()
        return read_json_line(self.proc.stdout, 10, "the proxy's counts")

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Side:
    """One publisher process behind its own counting proxy."""

    def __init__(self, name, argv, log_path):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.proc = None

    def start(self, timeout=120):
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log_file,
                                     text=True, bufsize=1)
        ready = read_json_line(self.proc.stdout, timeout, "%s to start" % self.name)
        if not ready.get("ready"):
            sys.exit("%s: unexpected first line %s" % (self.name, ready))

    def command(self, line, timeout=60):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = read_json_line(self.proc.stdout, timeout, "%s to answer %r" % (self.name, line))
        if "error" in reply:
            sys.exit("%s: %s" % (self.name, reply["error"]))
        return reply

    def quit(self):
        self.command("quit", timeout=60)
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.log_file.close()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def toggle(models, k):
    """The publishers' `change K`: toggle K devices' model."""
    n = len(models)
    step = n // k
    for i in range(k):
        d = step // 2 + i * step
        models[d] = "h100" if models[d] == "a100" else "a100"


def diff_metrics(a, b):
    verbs = {}
    for v in set(a["verbs"]) | set(b["verbs"]):
        d = b["verbs"].get(v, 0) - a["verbs"].get(v, 0)
        if d:
            verbs[v] = int(d)
    # A watch counts in apiserver_request_total when it ends: watches opened =
    # ended + (open now - open before). A watch that ended may be another
    # client's renewal (kube-apiserver's own Node-authorizer informer renews
    # its ResourceSlice watch every 5 to 10 min), so the ended ones are shown.
    ended = verbs.pop("WATCH", 0)
    watches = ended + int(b["open_watches"] - a["open_watches"])
    if watches:
        verbs["WATCH"] = watches
    n = b["write_count"] - a["write_count"]
    return {"verbs": verbs, "node_gets": int(b["node_gets"] - a["node_gets"]), "watches_ended": ended,
            "server_ms_per_write": 1e3 * (b["write_seconds"] - a["write_seconds"]) / n if n else None}


def run_side(args, api, watcher, side_name, argv, work):
    """The steps for one publisher; returns the measurements."""
    n = args.devices
    models = ["a100"] * n
    # A clean state: no slices of the node.
    wipe(api, args.node)
    watcher.expect(None)
    watcher.wait(lambda: len(watcher.slices) == 0, 60, "the node's slices to be gone")
    log("%s: %d watches on resourceslices open before it starts (the harness's, kube-apiserver's own)"
        % (side_name, api.metrics()["open_watches"]))

    proxy = Proxy("%s:%d" % (api.host, api.port))
    with open(os.path.join(args.cluster, "admin.kubeconfig")) as f:
        kubeconfig = f.read()
    kubeconfig, subs = re.subn(r"server: https://127\.0\.0\.1:\d+", "server: https://127.0.0.1:%d" % proxy.port,
                               kubeconfig)
    if subs != 1:
        sys.exit("admin.kubeconfig: no server line to point at the proxy")
    kc_path = os.path.join(work, "%s.kubeconfig" % side_name)
    with open(kc_path, "w") as f:
        f.write(kubeconfig)
    os.chmod(kc_path, 0o600)
    full_argv = argv + ["--kubeconfig", kc_path, "--node", args.node, "--driver", args.driver,
                        "--devices", str(n)]
    if args.qps is not None:
        full_argv += ["--qps", str(args.qps), "--burst", str(args.burst)]
    side = Side(side_name, full_argv, os.path.join(work, "%s.log" % side_name))
    res = {"steps": {}, "argv": full_argv}

    def snapshot():
        s = {"metrics": api.metrics(), "bytes": proxy.counts(), "t": time.time_ns()}
        if side.proc and side.proc.poll() is None:
            s["cpu"] = proc_cpu_s(side.proc.pid)
            s["hwm_kb"] = proc_status_kb(side.proc.pid, "VmHWM")
            s["rss_kb"] = proc_status_kb(side.proc.pid, "VmRSS")
        return s

    def measure(step, before, after, converge_s, idle_reply, t0_ns=None, cpu=None):
        m = diff_metrics(before["metrics"], after["metrics"])
        per_conn = []
        for i, c in enumerate(after["bytes"]["per_connection"]):
            b = before["bytes"]["per_connection"][i] if i < len(before["bytes"]["per_connection"]) else {"up": 0, "down": 0}
            if c["up"] != b["up"] or c["down"] != b["down"]:
                per_conn.append({"connection": i, "up": c["up"] - b["up"], "down": c["down"] - b["down"]})
        r = res["steps"][step] = {
            "verbs": m["verbs"], "node_gets": m["node_gets"], "server_ms_per_write": m["server_ms_per_write"],
            "watches_ended": m["watches_ended"],
            "up": after["bytes"]["up"] - before["bytes"]["up"],
            "down": after["bytes"]["down"] - before["bytes"]["down"],
            "per_connection": per_conn,
            "connections": after["bytes"]["connections"] - before["bytes"]["connections"],
            "cpu": cpu if cpu is not None else after.get("cpu", 0) - before.get("cpu", 0),
            "hwm_kb": after.get("hwm_kb"), "rss_kb": after.get("rss_kb"),
            "converge_s": converge_s, "stats": idle_reply,
            "timeline": watcher.timeline(t0_ns) if t0_ns else {},
            "loadavg": open("/proc/loadavg").read().split()[:3],
        }
        log("%s: %s: %s; converged in %s; %.1f kB sent, %.1f kB received; CPU %.2f s; events %s" % (
            side_name, step, ", ".join("%s %d" % kv for kv in sorted(m["verbs"].items())) or "no requests",
            "%.3f s" % converge_s if converge_s is not None else "-", r["up"] / 1e3, r["down"] / 1e3, r["cpu"],
            ", ".join("%s %.2f..%.2f s" % (k, a, b) for k, (a, b) in sorted(r["timeline"].items())) or "-"))

    def converge_after(t0_ns, what):
        watcher.wait(lambda: watcher.matched, args.timeout, what)
        with watcher.cond:
            t = watcher.transition_ns
        return max(0, t - t0_ns) / 1e9

    try:
        start = snapshot()
        log("%s: starting %s" % (side_name, " ".join(full_argv)))
        side.start()

        # First publish: from the process start (its list/watch, TLS handshake,
        # Node lookup) until it is idle; converge time from Update.
        watcher.expect(models)
        watcher.mark()
        reply = side.command("publish")
        t = converge_after(reply["update_ns"], "%s: the first publish" % side_name)
        idle = side.command("idle", timeout=args.timeout)
        measure("first", start, snapshot(), t, idle, reply["update_ns"])

        for step, k in (("same", 0), ("one", 1), ("hundred", 100)):
            time.sleep(args.settle)
            before = snapshot()
            if k:
                toggle(models, k)
            watcher.expect(models)
            watcher.mark()
            reply = side.command("change %d" % k if k else "publish")
            t = converge_after(reply["update_ns"], "%s: %s" % (side_name, step))
            idle = side.command("idle", timeout=args.timeout)
            measure(step, before, snapshot(), t, idle, reply["update_ns"])

        # All slices wiped by an admin, as the kubelet does when it starts.
        time.sleep(args.settle)
        before = snapshot()
        with watcher.cond:
            watcher.matched = False  # the wipe makes the state differ; wait for it to be equal again
        watcher.mark()
        t0 = time.time_ns()
        wipe(api, args.node)
        t = converge_after(t0, "%s: the slices restored after the wipe" % side_name)
        idle = side.command("idle", timeout=args.timeout)
        after = snapshot()
        measure("wipe", before, after, t, idle, t0)
        res["end_hwm_kb"], res["end_rss_kb"] = after.get("hwm_kb"), after.get("rss_kb")
        cpu_total = after["cpu"]

        side.quit()
        # After the exit its watches have ended and are counted.
        time.sleep(1)
        measure("total", start, snapshot(), None, None, cpu=cpu_total)
        # Watches: the steps' sum (the window above also holds the publisher's
        # own watch ending at its exit).
        steps = [res["steps"][k] for k in ("first", "same", "one", "hundred", "wipe")]
        total = res["steps"]["total"]
        total["verbs"].pop("WATCH", None)
        if sum(st["verbs"].get("WATCH", 0) for st in steps):
            total["verbs"]["WATCH"] = sum(st["verbs"].get("WATCH", 0) for st in steps)
        total["watches_ended"] = sum(st["watches_ended"] for st in steps)
    finally:
        side.kill()
        proxy.stop()
    return res


def wipe(api, node):
    """DELETE collection of the node's slices, as the kubelet does at start."""
    path = "/apis/resource.k8s.io/v1/resourceslices?" + urllib.parse.urlencode({"fieldSelector": "spec.nodeName=" + node})
    status, data = api.request("DELETE", path)
    if status != 200:
        sys.exit("delete collection: HTTP %d: %s" % (status, data[:300]))


# --- the table ----------------------------------------------------------------

VERB_NAMES = {"POST": "create", "PUT": "update", "DELETE": "delete", "PATCH": "patch", "APPLY": "patch (apply)",
              "LIST": "list", "WATCH": "watch", "GET": "get", "DELETECOLLECTION": "deletecollection"}
WRITES = ("POST", "PUT", "DELETE", "PATCH", "APPLY")


def writes(step):
    return sum(step["verbs"].get(v, 0) for v in WRITES)


def verb_text(step, include_node_get=True):
    parts = ["%s %d" % (VERB_NAMES.get(v, v.lower()), c) for v, c in sorted(step["verbs"].items(),
             key=lambda kv: list(VERB_NAMES).index(kv[0]) if kv[0] in VERB_NAMES else 99)
             if v != "DELETECOLLECTION"]
    if step.get("watches_ended"):
        parts = [p + " (%d ended: any client's renewal)" % step["watches_ended"] if p.startswith("watch ") else p
                 for p in parts]
    if include_node_get and step["node_gets"]:
        parts.append("node get %d" % step["node_gets"])
    return ", ".join(parts) or "none"


def table(args, go, cpp, load_before, load_after, slices):
    rows = []

    def ratio(g, c):
        if g == 0:
            return "-" if c == 0 else "inf"
        r = c / g
        return "%.2f" % r if r < 10 else "%.1f" % r

    def row(metric, g, c, fmt, target=None, ok=None, r=None):
        rows.append((metric, fmt % g if not isinstance(g, str) else g, fmt % c if not isinstance(c, str) else c,
                     r if r is not None else (ratio(g, c) if not isinstance(g, str) else ""),
                     target or "", "" if ok is None else ("PASS" if ok else "FAIL")))

    def le_go(metric, key, scale, fmt, step):
        g, c = go["steps"][step][key] / scale, cpp["steps"][step][key] / scale
        row(metric, g, c, fmt, "<= Go", go["steps"][step][key] >= cpp["steps"][step][key])

    def timeline_rows(label, start, g, c):
        """Where the converge time goes: the first and the last slice the harness saw created."""
        ga, ca = g["timeline"].get("ADDED"), c["timeline"].get("ADDED")
        if not ga or not ca:
            return
        row("%s: from %s to the first slice created (s)" % (label, start), ga[0], ca[0], "%.2f")
        row("%s: from the first to the last slice created (s)" % label, ga[1] - ga[0], ca[1] - ca[0], "%.2f")
        server_time_row(label, g, c)

    def server_time_row(label, g, c):
        if g["server_ms_per_write"] is not None and c["server_ms_per_write"] is not None:
            row("%s: kube-apiserver time per write, mean (ms)" % label, g["server_ms_per_write"],
                c["server_ms_per_write"], "%.1f")

    labels = {"first": "first publish", "same": "identical republish", "one": "one device changed",
              "hundred": "100 devices changed", "wipe": "all slices wiped (deletecollection)",
              "total": "whole run (start to exit)"}
    g1, c1 = go["steps"]["first"], cpp["steps"]["first"]
    n = args.devices
    L = labels["first"]
    row("%s: creates" % L, g1["verbs"].get("POST", 0), c1["verbs"].get("POST", 0), "%d",
        "exactly %d" % slices, c1["verbs"].get("POST", 0) == slices and writes(c1) == slices)
    row("%s: requests on resourceslices by verb" % L, verb_text(g1), verb_text(c1), "%s")
    le_go("%s: bytes sent (MB)" % L, "up", 1e6, "%.2f", "first")
    le_go("%s: bytes received (MB)" % L, "down", 1e6, "%.2f", "first")
    row("%s: time to converge (s)" % L, g1["converge_s"], c1["converge_s"], "%.2f")
    timeline_rows(L, "Update", g1, c1)
    le_go("%s: CPU (s)" % L, "cpu", 1, "%.2f", "first")
    row("%s: peak RSS, VmHWM (MB)" % L, g1["hwm_kb"] / 1024, c1["hwm_kb"] / 1024, "%.1f")

    for step, target in (("same", 0), ("one", 1), ("hundred", None), ("wipe", None)):
        g, c = go["steps"][step], cpp["steps"][step]
        L = labels[step]
        row("%s: writes" % L, writes(g), writes(c), "%d",
            None if target is None else "exactly %d" % target, None if target is None else writes(c) == target)
        row("%s: requests on resourceslices by verb" % L, verb_text(g), verb_text(c), "%s")
        le_go("%s: bytes sent (kB)" % L, "up", 1e3, "%.1f", step)
        le_go("%s: bytes received (kB)" % L, "down", 1e3, "%.1f", step)
        if step == "wipe":
            row("%s: time until restored (s)" % L, g["converge_s"], c["converge_s"], "%.2f", "<= 0.1x Go",
                c["converge_s"] <= 0.1 * g["converge_s"], r="%.3f" % (c["converge_s"] / g["converge_s"]))
            timeline_rows(L, "the DELETE", g, c)
        elif step != "same":
            row("%s: time to converge (s)" % L, g["converge_s"], c["converge_s"], "%.2f")
            if step == "hundred":
                server_time_row(L, g, c)
        le_go("%s: CPU (s)" % L, "cpu", 1, "%.2f", step)

    g, c = go["steps"]["total"], cpp["steps"]["total"]
    L = labels["total"]
    row("%s: requests on resourceslices by verb" % L, verb_text(g), verb_text(c), "%s")
    le_go("%s: bytes sent (MB)" % L, "up", 1e6, "%.2f", "total")
    le_go("%s: bytes received (MB)" % L, "down", 1e6, "%.2f", "total")
    le_go("%s: CPU (s)" % L, "cpu", 1, "%.2f", "total")
    row("%s: TCP connections to the API server" % L, g["connections"], c["connections"], "%d")
    row("%s: peak RSS, VmHWM at the end (MB)" % L, go["end_hwm_kb"] / 1024, cpp["end_hwm_kb"] / 1024, "%.1f")

    out = ["| metric | Go controller | dra-cpp | ratio (dra-cpp / Go) | target | result |",
           "|---|---:|---:|---:|---|---|"]
    out += ["| %s |" % " | ".join(r) for r in rows]
    qps = ("Client rate limits as each library ships them: client-go QPS 5, burst 10; dra-cpp qps 10, burst 64"
           if args.qps is None else "Client rate limit on both: qps %s, burst %s%s" % (
               args.qps, args.burst, " (none)" if args.qps < 0 else ""))
    fails = sum(1 for r in rows if r[5] == "FAIL")
    out.append("")
    out.append(
        "%d devices (`gpu-00000`..; attributes model, index, driverVersion, healthy; capacity memory 80Gi) in one "
        "pool local to Node `%s`, %d slices of <= %d, driver `%s`; the same node for both, all of its slices deleted "
        "before each publisher starts; Go first, then dra-cpp. Go: k8s.io/dynamic-resource-allocation/resourceslice "
        "v0.37.2 StartController (bench/gosdk/cmd/publisher) with its defaults: SyncDelay 30 s (not changed: it is "
        "how long the controller waits after an informer event before it syncs, so also after the wipe), "
        "MutationCacheTTL 1 min; its work queue is the default one wrapped only to tell when it is idle. dra-cpp: "
        "dra::resourceslice::Publisher (bench/slice_publisher.cc) with its defaults (drift repaired after 500 ms "
        "without a further foreign change; up to 8 writes at once). %s. Wire formats as each client ships: client-go sends and receives ResourceSlices as protobuf (its generated clients prefer protobuf for built-in types) and its informer's watch-list stream is gzip-compressed by a 1.37 server (WatchListCompression, beta, on); dra-cpp sends and receives ResourceSlices as protobuf too, and its watch asks for metadata only (PartialObjectMetadata: its own writes are known by their resource versions; a slice someone else changed is read whole). Requests: kube-apiserver's apiserver_request_total{resource=\"resourceslices\"} before and "
        "after each step (a watch counts when it opens: ended + change of apiserver_longrunning_requests; node get: the Node UID "
        "lookup); no other client writes, lists or gets ResourceSlices: the kube-scheduler is stopped once the "
        "cluster is up, this harness's own watch stays open throughout, and the watch of kube-apiserver's own "
        "Node-authorizer informer too, except that it renews it every 5 to 10 min, which would show in a row as "
        "a watch that ended (the publishers' own watches stay open until they exit); the whole run's watches are "
        "the steps' sum; the harness's deletecollection is not counted; kube-apiserver time per write: apiserver_request_duration_seconds of "
        "the step's creates and updates. Bytes: TCP payload (TLS included) through a counting proxy per publisher. "
        "Converge: from just before Update (the wipe: just before the DELETE) until the harness's watch saw the "
        "server hold every slice as desired. A step ends when the publisher has been idle for 0.5 s (Go: work "
        "queue empty and no delayed add pending, so its 30 s and 1 min re-syncs are inside the step); the next "
        "starts %g s later. CPU: utime+stime from /proc/PID/stat (10 ms ticks); first publish and whole run count "
        "from the process start. %d target(s) failed." % (
            n, args.node, slices, DEVICES_PER_SLICE, args.driver, qps, args.settle, fails))
    out.append("")
    out.append("Load average (1/5/15 min) before: %s; after: %s; %d CPUs." % (load_before, load_after,
                                                                             os.cpu_count()))
    out.append("")
    out.append("Command: `%s`" % args.cmdline)
    return "\n".join(out)


def run(args):
    api = Api(args.cluster)
    work = args.work
    load_before = args.load_before or " ".join(open("/proc/loadavg").read().split()[:3])

    status, data = api.request("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                        "metadata": {"name": args.node}})
    if status not in (201, 409):
        sys.exit("create the Node: HTTP %d: %s" % (status, data[:300]))
    if not api.metrics()["have_gauge"]:
        log("note: kube-apiserver has no apiserver_longrunning_requests for resourceslices yet")

    watcher = Watcher(api, args.node, args.driver)
    rv = watcher.list_now()
    watcher.start_watch(rv)

    slices = -(-args.devices // DEVICES_PER_SLICE)
    results = {}
    order = args.order.split(",")
    for name in order:
        argv = [args.go] if name == "go" else [args.cpp]
        log("--- %s publisher ---" % name)
        results[name] = run_side(args, api, watcher, name, argv, work)
    wipe(api, args.node)

    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(table(args, results["go"], results["cpp"], load_before, load_after, slices))
    failed = any(r["steps"][s]["stats"] and r["steps"][s]["stats"].get("errors") for r in results.values()
                 for s in r["steps"])
    if failed:
        log("a publisher reported errors; see its log in %s" % work)
        return 1
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("proxy")
    pp.add_argument("--target", required=True)
    pr = sub.add_parser("run")
    pr.add_argument("--cluster", required=True)
    pr.add_argument("--work", required=True)
    pr.add_argument("--go", required=True)
    pr.add_argument("--cpp", required=True)
    pr.add_argument("--devices", type=int, default=10000)
    pr.add_argument("--node", default="bench-node")
    pr.add_argument("--driver", default="gpu.example.com")
    pr.add_argument("--qps", type=float, default=None)
    pr.add_argument("--burst", type=int, default=0)
    pr.add_argument("--settle", type=float, default=7)
    pr.add_argument("--timeout", type=float, default=300)
    pr.add_argument("--order", default="go,cpp")
    pr.add_argument("--cmdline", default="")
    pr.add_argument("--load-before", default="")
    args = p.parse_args()
    if args.cmd == "proxy":
        asyncio.run(proxy_main(args.target))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
