#!/usr/bin/env python3
"""The measurements of bench/gpu_driver.sh (see there) on a running cluster
and node (tests/e2e/cluster.sh); prints the Markdown table on stdout."""
import argparse
import json
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

DRIVER = "gpu.example.com"
NAMESPACE = "gpu-bench"
# The Go dra-example-driver with 8 mock GPUs, started by the kubelet peer on
# this kind of machine, as issue 13 states it (not measured here).
GO_START_MS = (36, 43)
GO_IDLE_RSS_MB = 44.9


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


def measure_starts(args, env, api):
    """Starts under the kubelet peer: exec-to-registered, -to-published, idle RSS."""
    node = env["DRA_E2E_NODE_NAME"]
    kubeconfig = os.path.join(args.cluster, "admin.kubeconfig")
    results = []
    for i in range(args.starts):
        delete_slices(api, node)
        d = os.path.join(args.work, "start-%d" % i)
        for sub in ("registry", "plugins", "cdi"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        driver_log = os.path.join(d, "driver.log")
        cmd = [args.peer, "--registry-dir", os.path.join(d, "registry"), "--driver", DRIVER, "--timeout", "30s",
               "--reconcile-period", "1ms", "--steps", "register,sleep,rss", "--sleep", "2s",
               "--driver-log", driver_log, "--",
               args.driver, "--node-name=" + node, "--kubeconfig=" + kubeconfig, "--num-devices=8", "-v=4",
               "--cdi-root=" + os.path.join(d, "cdi"),
               "--kubelet-registrar-directory-path=" + os.path.join(d, "registry"),
               "--kubelet-plugins-directory-path=" + os.path.join(d, "plugins")]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        if out.returncode != 0 or any("error" in e for e in events):
            raise RuntimeError("peer run %d failed: %s\n%s" % (i, out.stdout, out.stderr[-2000:]))
        reg = next(e for e in events if e.get("step") == "register" and "exec_to_registered_ms" in e)
        rss = next(e for e in events if e.get("step") == "rss")
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
        results.append({"registered_ms": reg["exec_to_registered_ms"],
                        "published_ms": reg["exec_to_registered_ms"] + (created_at - registered_at) * 1000,
                        "idle_rss_kb": int(rss["vmrss_kb"]), "threads": int(rss["threads"])})
        log("start %d/%d: registered %.1f ms, published %.1f ms, idle RSS %.1f MB"
            % (i + 1, args.starts, results[-1]["registered_ms"], results[-1]["published_ms"],
               results[-1]["idle_rss_kb"] / 1024))
    delete_slices(api, node)
    return results


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


def measure_pods(args, env, api):
    """The node's driver on the real kubelet: prepare of 1- and 8-GPU pods; loaded RSS."""
    node = env["DRA_E2E_NODE_NAME"]
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    api.create("/apis/resource.k8s.io/v1/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "%s"' % DRIVER}}]}})
    driver_log = open(os.path.join(args.work, "node-driver.log"), "w")
    driver = subprocess.Popen(
        [args.driver, "--node-name=" + node, "--kubeconfig=" + os.path.join(args.cluster, "admin.kubeconfig"),
         "--num-devices=8", "--cdi-root=" + env["DRA_E2E_CDI_DIR"],
         "--kubelet-registrar-directory-path=" + env["DRA_E2E_PLUGINS_REGISTRY"],
         "--kubelet-plugins-directory-path=" + env["DRA_E2E_PLUGINS_DIR"]],
        stdout=driver_log, stderr=subprocess.STDOUT)
    try:
        slices = "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=%s,spec.driver=%s" % (node, DRIVER)
        wait("the driver's slices", lambda: api.call("GET", slices)[1]["items"])
        wait("the kubelet to register the driver",
             lambda: "Registered with the kubelet" in open(os.path.join(args.work, "node-driver.log")).read())
        rows = {}
        n = 0
        for count in (1, 8):
            kubelet_ms, grpc_ms, running_ms = [], [], []
            for i in range(args.pods):
                n += 1
                name = "gpu%d-%d" % (count, i)
                before = kubelet_metrics(env, args.cluster)
                api.create("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % NAMESPACE, claim(name, count))
                t0 = time.monotonic()
                api.create("/api/v1/namespaces/%s/pods" % NAMESPACE, pod(name, name, node))
                wait("pod %s Running" % name, lambda: api.call(
                    "GET", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name))[1].get("status", {}).get(
                        "phase") == "Running")
                running_ms.append((time.monotonic() - t0) * 1000)
                after = kubelet_metrics(env, args.cluster)

                def delta(name_, **labels):
                    return metric(after, name_, **labels) - metric(before, name_, **labels)
                calls = delta("dra_operations_duration_seconds_count", operation_name="PrepareResources")
                if calls != 1:
                    raise RuntimeError("pod %s: %g PrepareResources operations in the kubelet's metrics" % (name, calls))
                kubelet_ms.append(delta("dra_operations_duration_seconds_sum", operation_name="PrepareResources") * 1000)
                grpc_calls = delta("dra_grpc_operations_duration_seconds_count", driver_name=DRIVER)
                grpc_ms.append(delta("dra_grpc_operations_duration_seconds_sum", driver_name=DRIVER) * 1000 /
                               max(grpc_calls, 1))
                api.call("DELETE", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name))
                wait("pod %s gone" % name, lambda: api.call(
                    "GET", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name), ok=(200, 404))[0] == 404)
                api.call("DELETE", "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (NAMESPACE, name))
                log("%d-GPU pod %d/%d: kubelet PrepareResources %.2f ms, NodePrepareResources %.2f ms, Running after %.0f ms"
                    % (count, i + 1, args.pods, kubelet_ms[-1], grpc_ms[-1], running_ms[-1]))
            rows[count] = (kubelet_ms, grpc_ms, running_ms)
        status = proc_status(driver.pid)
        loaded = (int(status["VmRSS"]), int(status["VmHWM"]))
    finally:
        driver.send_signal(signal.SIGTERM)
        driver.wait(timeout=30)
        driver_log.close()
    return rows, loaded


def main():
    p = argparse.ArgumentParser()
    for flag in ("cluster", "work", "driver", "peer", "link", "load-before"):
        p.add_argument("--" + flag, required=True)
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--pods", type=int, default=5)
    args = p.parse_args()
    env = cluster_env(args.cluster)
    api = Api(env, args.cluster)

    starts = measure_starts(args, env, api)
    pods, loaded = measure_pods(args, env, api)
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])

    med = statistics.median
    reg = med(s["registered_ms"] for s in starts)
    pub = med(s["published_ms"] for s in starts)
    idle = med(s["idle_rss_kb"] for s in starts) / 1024
    go_start = sum(GO_START_MS) / 2
    print("GPU driver (examples/gpu, 8 mock GPUs, %s gRPC), %d starts, %d pods per size, on %d CPUs; "
          "load average %s before, %s after\n" % (args.link, args.starts, args.pods, os.cpu_count(),
                                                 args.load_before, load_after))
    print("| metric | gpu-driver | Go dra-example-driver (reference) | ratio | target |")
    print("|---|---|---|---|---|")
    print("| start-to-registered, median (min-max) | %.1f ms (%.1f-%.1f) | %d-%d ms | %.2f | <= 0.5 |"
          % (reg, min(s["registered_ms"] for s in starts), max(s["registered_ms"] for s in starts),
             GO_START_MS[0], GO_START_MS[1], reg / go_start))
    print("| start-to-published (slice created), median | %.1f ms | | | |" % pub)
    print("| idle RSS, median | %.1f MB (%d threads) | %.1f MB | %.2f | <= 0.5 |"
          % (idle, starts[0]["threads"], GO_IDLE_RSS_MB, idle / GO_IDLE_RSS_MB))
    for count in (1, 8):
        kubelet_ms, grpc_ms, running_ms = pods[count]
        print("| %d-GPU pod: kubelet PrepareResources, mean (max) | %.2f ms (%.2f) | | | |"
              % (count, statistics.mean(kubelet_ms), max(kubelet_ms)))
        print("| %d-GPU pod: NodePrepareResources gRPC, mean (max) | %.2f ms (%.2f) | | | |"
              % (count, statistics.mean(grpc_ms), max(grpc_ms)))
        print("| %d-GPU pod: created to Running, median | %.0f ms | | | |" % (count, med(running_ms)))
    print("| loaded RSS (peak) | %.1f MB (%.1f) | | | |" % (loaded[0] / 1024, loaded[1] / 1024))


if __name__ == "__main__":
    main()
