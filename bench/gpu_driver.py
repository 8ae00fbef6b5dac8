#!/usr/bin/env python3
"""The measurements of bench/gpu_driver.sh (see there) on a running cluster
and node (tests/e2e/cluster.sh): the example GPU driver and, with --reference,
the Go dra-example-driver, alternated; prints the Markdown table on stdout."""
import argparse
import json
import math
import os
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

import oci_image

DRIVER = "gpu.example.com"
NAMESPACE = "gpu-bench"


def log(*args):
    print("gpu_driver:", *args, file=sys.stderr, flush=True)


def cluster_env(cluster):
    out = subprocess.run([os.path.join(os.path.dirname(__file__), "..", "tests", "e2e", "cluster.sh"), "env", cluster],
                         check=True, capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        m = re.match(r"export ([A-Z0-9_]+)=(.*)", line)
        if m:
            env[m.group(1)] = m.group(2)
    return env


class Api:
    def __init__(self, env, cluster):
        self.server = env["DRA_E2E_SERVER"]
        self.ctx = ssl.create_default_context(cafile=env["DRA_E2E_CA_FILE"])
        with open(os.path.join(cluster, "admin.kubeconfig")) as f:
            self.token = re.search(r"token: (\S+)", f.read()).group(1)

    def call(self, method, path, body=None, ok=(200, 201, 202)):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            if e.code in ok:
                return e.code, {}
            raise RuntimeError("%s %s: HTTP %d: %s" % (method, path, e.code, e.read().decode()[:500])) from None

    def create(self, path, body):
        return self.call("POST", path, body, ok=(200, 201, 409))


def parse_metrics(text):
    """Prometheus text -> {(name, ((label, value), ...)): value}."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)", line)
        if not m:
            continue
        labels = tuple(sorted(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(3) or "")))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples


def metric(samples, name, **want):
    """Sum of the samples of `name` whose labels include `want`."""
    total = 0.0
    for (n, labels), value in samples.items():
        d = dict(labels)
        if n == name and all(d.get(k) == v for k, v in want.items()):
            total += value
    return total


def kubelet_metrics(env, cluster):
    ctx = ssl.create_default_context(cafile=env["DRA_E2E_CA_FILE"])
    pki = os.path.join(cluster, "pki")
    ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
    ctx.check_hostname = False  # the kubelet's serving certificate names 127.0.0.1 as an IP SAN
    with urllib.request.urlopen(env["DRA_E2E_KUBELET_URL"] + "/metrics", context=ctx, timeout=10) as resp:
        return parse_metrics(resp.read().decode())


def proc_status(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()[0] if value.split() else ""
    return fields


def wait(what, predicate, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out after %d s waiting for %s" % (seconds, what))


def klog_time(line):
    """Seconds since midnight of a klog text line ("I1202 06:45:09.123456 ...")."""
    m = re.match(r"[IWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+)", line)
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else None


def delete_slices(api, node):
    api.call("DELETE", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=%s,spec.driver=%s"
             % (node, DRIVER))
    wait("the slices to go", lambda: not api.call(
        "GET", "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=%s,spec.driver=%s"
        % (node, DRIVER))[1]["items"])


def driver_argv(binary, node, kubeconfig, cdi, registry, plugins, verbose):
    """The flags both drivers take (the example keeps the reference's names)."""
    return [binary, "--node-name=" + node, "--kubeconfig=" + kubeconfig, "--num-devices=8"] + \
        (["-v=4"] if verbose else []) + \
        ["--cdi-root=" + cdi, "--kubelet-registrar-directory-path=" + registry,
         "--kubelet-plugins-directory-path=" + plugins]


def image_runtime(archive, root):
    """Unpacks the OCI archive's image into `root`; returns its driver and the
    environment it runs with there: the image's Env, and LD_LIBRARY_PATH
    naming the image's library directories, so that the host's loader loads
    the image's libraries (its lean libcurl among them) instead of the
    host's."""
    config = oci_image.unpack(archive, root)
    env = dict(os.environ)
    env.update(item.split("=", 1) for item in config["config"].get("Env", []))
    library_dirs = sorted({d for d, _, names in os.walk(root) for f in names
                           if re.search(r"\.so(\.\d+)*$", f) and not f.startswith("ld-linux")})
    env["LD_LIBRARY_PATH"] = ":".join(library_dirs)
    return os.path.join(root, config["config"]["Entrypoint"][0].lstrip("/")), env


def one_start(args, env, api, side, binary, i):
    """One start under the kubelet peer: exec-to-registered, -to-published
    (gpu-driver: from its log), idle RSS."""
    node = env["DRA_E2E_NODE_NAME"]
    kubeconfig = os.path.join(args.cluster, "admin.kubeconfig")
    delete_slices(api, node)
    d = os.path.join(args.work, "start-%s-%d" % (side, i))
    for sub in ("registry", "plugins", "cdi"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    driver_log = os.path.join(d, "driver.log")
    cmd = [args.peer, "--registry-dir", os.path.join(d, "registry"), "--driver", DRIVER, "--timeout", "30s",
           "--reconcile-period", "1ms", "--steps", "register,sleep,rss", "--sleep", "2s",
           "--driver-log", driver_log, "--"] + \
        driver_argv(binary, node, kubeconfig, os.path.join(d, "cdi"), os.path.join(d, "registry"),
                    os.path.join(d, "plugins"), verbose=side == "gpu-driver")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=args.side_env.get(side))
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or any("error" in e for e in events):
        raise RuntimeError("%s: peer run %d failed: %s\n%s" % (side, i, out.stdout, out.stderr[-2000:]))
    reg = next(e for e in events if e.get("step") == "register" and "exec_to_registered_ms" in e)
    rss = next(e for e in events if e.get("step") == "rss")
    result = {"registered_ms": reg["exec_to_registered_ms"], "published_ms": None,
              "idle_rss_kb": int(rss["vmrss_kb"]), "threads": int(rss["threads"])}
    if side == "gpu-driver":
        registered_at = created_at = None
        with open(driver_log) as f:
            for line in f:
                if registered_at is None and "Registered with the kubelet" in line:
                    registered_at = klog_time(line)
                if created_at is None and "Created ResourceSlice" in line:
                    created_at = klog_time(line)
        if registered_at is None or created_at is None:
            raise RuntimeError("start %d: the driver's log lacks the registration or the slice:\n%s"
                               % (i, open(driver_log).read()[-2000:]))
        result["published_ms"] = reg["exec_to_registered_ms"] + (created_at - registered_at) * 1000
    log("%s start %d/%d: registered %.1f ms, idle RSS %.1f MB, %d threads"
        % (side, i + 1, args.starts, result["registered_ms"], result["idle_rss_kb"] / 1024, result["threads"]))
    return result


def claim(name, count):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": count}}]}}}


def pod(name, claim_name, node):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node}, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "app", "image": "registry.example/app:1",
                                     "resources": {"claims": [{"name": "gpus"}]}}],
                     "resourceClaims": [{"name": "gpus", "resourceClaimName": claim_name}]}}


def registrations(cluster):
    """How often the kubelet has logged registering the driver (its -v 3)."""
    with open(os.path.join(cluster, "logs", "kubelet.log"), errors="replace") as f:
        return sum(1 for line in f if "Registered DRA plugin" in line and '"%s"' % DRIVER in line)


DURATION_PART = re.compile(r"([0-9.]+)(h|ms|us|ns|m|s)")
DURATION_MS = {"h": 3600e3, "m": 60e3, "s": 1e3, "ms": 1, "us": 1e-3, "ns": 1e-6}
TIMING_FIELDS = ("total", "fetch", "wait", "checkpoint", "driver")


def call_timings(text):
    """The SDK's "Call timing" records (-v 4) in `text`: one dict of
    milliseconds per NodePrepareResources call."""
    calls = []
    for line in text.splitlines():
        if '"Call timing"' not in line:
            continue
        fields = dict(re.findall(r'(\w+)="([^"]*)"', line))
        calls.append({k: sum(float(n) * DURATION_MS[u] for n, u in DURATION_PART.findall(fields[k]))
                      for k in TIMING_FIELDS})
    return calls


def measure_pods(args, env, api, side, binary, round_):
    """One driver on the real kubelet: prepare of 1- and 8-GPU pods; loaded RSS;
    with --timing, gpu-driver's call timing per pod."""
    node = env["DRA_E2E_NODE_NAME"]
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    api.create("/apis/resource.k8s.io/v1/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "%s"' % DRIVER}}]}})
    delete_slices(api, node)
    registered_before = registrations(args.cluster)
    driver_log_path = os.path.join(args.work, "node-%s-%d.log" % (side, round_))
    driver_log = open(driver_log_path, "w")
    timing = args.timing and side == "gpu-driver"
    driver = subprocess.Popen(
        driver_argv(binary, node, os.path.join(args.cluster, "admin.kubeconfig"), env["DRA_E2E_CDI_DIR"],
                    env["DRA_E2E_PLUGINS_REGISTRY"], env["DRA_E2E_PLUGINS_DIR"], verbose=timing),
        stdout=driver_log, stderr=subprocess.STDOUT, env=args.side_env.get(side))
    try:
        slices = "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=%s,spec.driver=%s" % (node, DRIVER)
        wait("the driver's slices", lambda: api.call("GET", slices)[1]["items"])
        wait("the kubelet to register the driver", lambda: registrations(args.cluster) > registered_before)
        rows, timings = {}, []
        log_offset = 0

        def new_timings():
            nonlocal log_offset
            with open(driver_log_path, errors="replace") as f:
                f.seek(log_offset)
                text = f.read()
                log_offset = f.tell()
            return call_timings(text)
        for count in (1, 8):
            kubelet_ms, grpc_ms, running_ms, retried = [], [], [], []
            for i in range(args.pods):
                # Names of their own: the kubelet may still hold the last
                # side's pods of the same name.
                name = "%s-r%d-gpu%d-%d" % ("cpp" if side == "gpu-driver" else "go", round_, count, i)
                before = kubelet_metrics(env, args.cluster)
                api.create("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % NAMESPACE, claim(name, count))
                t0 = time.monotonic()
                api.create("/api/v1/namespaces/%s/pods" % NAMESPACE, pod(name, name, node))
                wait("pod %s Running" % name, lambda: api.call(
                    "GET", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name))[1].get("status", {}).get(
                        "phase") == "Running")
                running = (time.monotonic() - t0) * 1000
                after = kubelet_metrics(env, args.cluster)

                def delta(name_, **labels):
                    return metric(after, name_, **labels) - metric(before, name_, **labels)
                prepare = {"operation_name": "PrepareResources", "is_error": "false"}
                calls = delta("dra_operations_duration_seconds_count", **prepare)
                if calls != 1:
                    raise RuntimeError("pod %s: %g PrepareResources operations in the kubelet's metrics" % (name, calls))
                # A failed attempt before it: the kubelet's claim GET refused
                # by the node authorizer, whose graph did not have the pod
                # yet (the pod names its node at creation). It never reached
                # the driver; the pod's start waited for the kubelet's retry.
                if delta("dra_operations_duration_seconds_count", operation_name="PrepareResources", is_error="true"):
                    retried.append(name)
                else:
                    running_ms.append(running)
                kubelet_ms.append(delta("dra_operations_duration_seconds_sum", **prepare) * 1000)
                grpc_calls = delta("dra_grpc_operations_duration_seconds_count", driver_name=DRIVER)
                grpc_ms.append(delta("dra_grpc_operations_duration_seconds_sum", driver_name=DRIVER) * 1000 /
                               max(grpc_calls, 1))
                if timing:
                    calls = new_timings()
                    if len(calls) != grpc_calls:
                        raise RuntimeError("pod %s: %d calls timed by gpu-driver, %g by the kubelet" % (
                            name, len(calls), grpc_calls))
                    timings += [dict(c, grpc=grpc_ms[-1], pod=name) for c in calls]
                api.call("DELETE", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name))
                wait("pod %s gone" % name, lambda: api.call(
                    "GET", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name), ok=(200, 404))[0] == 404)
                # Unprepared too, before the next pod (or the other driver).
                unprepared = metric(after, "dra_operations_duration_seconds_count", operation_name="UnprepareResources")
                wait("pod %s unprepared" % name, lambda: metric(
                    kubelet_metrics(env, args.cluster), "dra_operations_duration_seconds_count",
                    operation_name="UnprepareResources") > unprepared)
                api.call("DELETE", "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (NAMESPACE, name))
                log("%s: %d-GPU pod %d/%d: kubelet PrepareResources %.2f ms, NodePrepareResources %.2f ms, "
                    "Running after %.0f ms" % (side, count, i + 1, args.pods, kubelet_ms[-1], grpc_ms[-1],
                                               running))
            rows[count] = (kubelet_ms, grpc_ms, running_ms, retried)
        status = proc_status(driver.pid)
        loaded = (int(status["VmRSS"]), int(status["VmHWM"]), int(status["Threads"]))
        args.timings.extend(timings)
    finally:
        driver.send_signal(signal.SIGTERM)
        driver.wait(timeout=30)
        driver_log.close()
        # The next driver starts on a clean plugin data dir: the two keep
        # different checkpoints there (dra-example-driver v0.4.0 panics in
        # NodeUnprepareResources on one it cannot read).
        shutil.rmtree(os.path.join(env["DRA_E2E_PLUGINS_DIR"], DRIVER), ignore_errors=True)
    return rows, loaded


def p99(values):
    """Nearest rank: with fewer than 100 samples, the largest."""
    ordered = sorted(values)
    return ordered[math.ceil(0.99 * len(ordered)) - 1]


def main():
    p = argparse.ArgumentParser()
    for flag in ("cluster", "work", "driver", "peer", "link", "load-before"):
        p.add_argument("--" + flag, required=True)
    p.add_argument("--reference", default="", help="the Go dra-example-driver's kubelet plugin, alternated")
    p.add_argument("--reference-image", default="")
    p.add_argument("--image", default="")
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--pods", type=int, default=5)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--timing", action="store_true", help="gpu-driver's pods at -v 4: where its calls' time went")
    args = p.parse_args()
    args.timings = []
    env = cluster_env(args.cluster)
    api = Api(env, args.cluster)
    # The example as its image ships it: the image's own binary, libraries
    # and environment (MALLOC_ARENA_MAX among them).
    driver, args.side_env = args.driver, {}
    if args.image:
        driver, args.side_env["gpu-driver"] = image_runtime(args.image, os.path.join(args.work, "image-root"))
    sides = [("gpu-driver", driver)] + ([("reference", args.reference)] if args.reference else [])

    starts = {side: [] for side, _ in sides}
    for i in range(args.starts):
        for side, binary in sides if i % 2 == 0 else list(reversed(sides)):
            starts[side].append(one_start(args, env, api, side, binary, i))
    delete_slices(api, env["DRA_E2E_NODE_NAME"])
    pods = {side: {1: ([], [], [], []), 8: ([], [], [], [])} for side, _ in sides}
    loaded = {side: (0, 0, 0) for side, _ in sides}
    for r in range(args.rounds):
        for side, binary in sides if r % 2 == 0 else list(reversed(sides)):
            rows, load = measure_pods(args, env, api, side, binary, r)
            for count, lists in rows.items():
                for into, values in zip(pods[side][count], lists):
                    into.extend(values)
            loaded[side] = (load[0], max(loaded[side][1], load[1]), load[2])
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])

    med = statistics.median
    names = [side for side, _ in sides]
    print("GPU driver (examples/gpu, 8 mock GPUs, %s gRPC)%s, %d starts and %d pods per size each%s, on %d CPUs; "
          "load average %s before, %s after\n" % (
              args.link, " beside the Go dra-example-driver (alternated)" if args.reference else "", args.starts,
              args.pods * args.rounds, " in %d rounds" % args.rounds if args.rounds > 1 else "", os.cpu_count(),
              args.load_before, load_after))
    header = "| metric | gpu-driver |" + (" Go dra-example-driver | ratio |" if args.reference else "")
    print(header)
    print("|---|---|" + ("---|---|" if args.reference else ""))

    def row(metric_name, values, fmt, ratio=True):
        cells = [fmt(values[n]) for n in names]
        line = "| %s | %s |" % (metric_name, " | ".join(cells))
        if args.reference:
            a, b = values["gpu-driver"], values["reference"]
            a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
            line += " %s |" % ("%.2f" % (a / b) if ratio and a is not None and b else "")
        print(line)
    row("start to registered, median (min-max)",
        {n: (med(s["registered_ms"] for s in starts[n]), min(s["registered_ms"] for s in starts[n]),
             max(s["registered_ms"] for s in starts[n])) for n in names},
        lambda v: "%.1f ms (%.1f-%.1f)" % v)
    row("start to slice created, median", {n: (med(s["published_ms"] for s in starts[n])
                                              if starts[n][0]["published_ms"] is not None else None,) for n in names},
        lambda v: "%.1f ms" % v[0] if v[0] is not None else "not logged", ratio=False)
    row("idle RSS, median", {n: (med(s["idle_rss_kb"] for s in starts[n]) / 1024, starts[n][0]["threads"])
                             for n in names}, lambda v: "%.1f MB (%d threads)" % v)
    for count in (1, 8):
        for label, k in (("kubelet PrepareResources", 0), ("NodePrepareResources gRPC", 1)):
            row("%d-GPU pod: %s, median" % (count, label), {n: med(pods[n][count][k]) for n in names},
                lambda v: "%.2f ms" % v)
            row("%d-GPU pod: %s, p99" % (count, label), {n: p99(pods[n][count][k]) for n in names},
                lambda v: "%.2f ms" % v)
        row("%d-GPU pod: created to Running, median" % count, {n: med(pods[n][count][2]) for n in names},
            lambda v: "%.0f ms" % v)
        row("%d-GPU pod: retried by the kubelet before the driver was called" % count,
            {n: len(pods[n][count][3]) for n in names}, lambda v: "%d" % v, ratio=False)
    row("loaded RSS (peak)", {n: (loaded[n][0] / 1024, loaded[n][1] / 1024) for n in names},
        lambda v: "%.1f MB (%.1f)" % v)
    binaries = dict(sides)
    row("binary", {n: os.path.getsize(binaries[n]) / 1e6 for n in names}, lambda v: "%.1f MB" % v)
    images = {"gpu-driver": args.image, "reference": args.reference_image}
    if all(images[n] for n in names):
        row("image (OCI archive)", {n: os.path.getsize(images[n]) / 1e6 for n in names}, lambda v: "%.1f MB" % v)
    if args.timings:
        print_timings(args.timings)


def print_timings(timings):
    """gpu-driver's calls by the kubelet's time for them: where the largest
    and the median one went."""
    print("\ngpu-driver at -v 4: its NodePrepareResources calls (ms), the kubelet's gRPC time and the SDK's "
          "(total: from gRPC's thread taking the call to the answer; outside: the rest of the kubelet's time)\n")
    print("| call | kubelet gRPC | SDK total | fetch | wait | checkpoint | driver | rest in the SDK | outside |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ordered = sorted(timings, key=lambda c: c["grpc"], reverse=True)
    shown = [("largest: " + c["pod"], c) for c in ordered[:5]]
    shown.append(("median of %d: %s" % (len(ordered), ordered[len(ordered) // 2]["pod"]), ordered[len(ordered) // 2]))
    for label, c in shown:
        rest = c["total"] - c["fetch"] - c["wait"] - c["checkpoint"] - c["driver"]
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            label, c["grpc"], c["total"], c["fetch"], c["wait"], c["checkpoint"], c["driver"], rest,
            c["grpc"] - c["total"]))


if __name__ == "__main__":
    main()
