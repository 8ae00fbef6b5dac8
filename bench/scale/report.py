"""Tables and plots of bench/scale/scale.py results (scale.py report)."""

import json
import math
import os

IMPL_NAMES = {"go": "Go controller", "cpp": "dra-cpp"}
COLORS = {"go": "#1f77b4", "cpp": "#d62728"}
VERB_ORDER = ("LIST", "WATCHLIST", "WATCH", "GET", "CREATE", "UPDATE", "PATCH", "DELETE", "DELETECOLLECTION")


def verbs_text(verbs, per=1):
    parts = []
    for v in sorted(verbs, key=lambda v: VERB_ORDER.index(v) if v in VERB_ORDER else 99):
        n = verbs[v] / per
        if v == "DELETECOLLECTION" or n == 0:
            continue
        parts.append("%s %s" % (v.lower(), ("%.0f" % n) if n == int(n) else ("%.2f" % n)))
    return ", ".join(parts) or "none"


def peak_rate(step):
    return max(step["per_second_slices"], default=0)


def wall(step):
    return step.get("wall_s", step["idle_s"] + 0.5)


def idle_rate(result):
    """kube-apiserver's CPU seconds per second with nothing to do (its own
    controllers), from the steady step."""
    steady = result["steps"].get("steady")
    return steady["apiserver_cpu_s"] / wall(steady) if steady else 0.0


def cpu_above_idle(result, *names):
    """kube-apiserver's CPU above its idle rate, while it serves the step
    (until shortly after its last request) where the result has that."""
    rate = idle_rate(result)

    def above(step):
        if "apiserver_cpu_active_s" in step:
            return max(0.0, step["apiserver_cpu_active_s"] - rate * step["active_s"])
        return max(0.0, step["apiserver_cpu_s"] - rate * wall(step))
    return sum(above(result["steps"][n]) for n in names if n in result["steps"])


def runtime_text(step):
    """kube-apiserver's memory work over a step: bytes its Go runtime
    allocated, collections, minor page faults (pages its heap touched for the
    first time), and its CPU seconds in the kernel (where faults are paid)."""
    if "apiserver_system_cpu_s" not in step:
        return "-"
    m = step["requests"]
    return "%.0f; %d; %d; %.1f" % (m["heap_alloc_bytes"] / 1e6, m["gc_cycles"], step["apiserver_minor_faults"],
                                   step["apiserver_system_cpu_s"])


def svg_plot(title, xlabel, ylabel, series, path, logx=False):
    """A line plot: series is {name: (color, [(x, y)])}."""
    w, h, left, bottom, top, right = 640, 360, 70, 50, 40, 150
    xs = [x for _, pts in series.values() for x, _ in pts]
    ys = [y for _, pts in series.values() for _, y in pts]
    if not xs:
        return
    fx = (lambda x: math.log10(x)) if logx else (lambda x: x)
    x0, x1 = min(fx(x) for x in xs), max(fx(x) for x in xs)
    y1 = max(ys) * 1.1 or 1
    x1 = x1 if x1 > x0 else x0 + 1

    def px(x):
        return left + (fx(x) - x0) / (x1 - x0) * (w - left - right)

    def py(y):
        return h - bottom - y / y1 * (h - top - bottom)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'
           % (w, h), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14">%s</text>' % (left, title),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, h - bottom, w - right, h - bottom),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top, left, h - bottom),
           '<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((left + w - right) / 2, h - 12, xlabel),
           '<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s</text>'
           % ((top + h - bottom) / 2, (top + h - bottom) / 2, ylabel)]
    for i in range(5):
        y = y1 * i / 4
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, py(y) + 4, "%.3g" % y))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/>' % (left, py(y), w - right, py(y)))
    for x in sorted(set(xs)) if len(set(xs)) <= 12 else [xs[0], xs[-1]]:
        out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (px(x), h - bottom + 16, "%g" % x))
    for k, (name, (color, pts)) in enumerate(series.items()):
        pts = sorted(pts)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (color, " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts)))
        for x, y in pts if len(pts) <= 12 else []:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), color))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (w - right + 10, top + 16 * (k + 1), color, name))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def report(paths, plots_dir):
    results = []
    for p in paths:
        with open(p) as f:
            results.append(json.load(f))
    results.sort(key=lambda r: (r["nodes"], r["impl"]))
    lines = []
    first = results[0]
    lines.append("Pool per node: %d slice(s), %d devices (the example GPU driver's). Command: `%s`." % (
        first["slices_per_pool"], first["devices_per_pool"], first.get("cmdline", "")))
    lines.append("")
    lines.append("| nodes | implementation | requests per node: start and first publish | every pool published (s) "
                 "| last node's Update returned (s) "
                 "| kube-apiserver CPU above idle (s; ms per node) | etcd CPU (s) | kube-apiserver peak RSS (MB) "
                 "| payload bytes per node, to / from it | steady state: requests (window) | simulator RSS per node (MB) |")
    lines.append("|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
    publishing = [r for r in results if r.get("binding_reconciler", "none") == "none"]
    for r in publishing:
        start, pub = r["steps"]["start"], r["steps"]["first publish"]
        n = r["nodes"]
        verbs = dict(start["requests"]["slices"])
        for v, c in pub["requests"]["slices"].items():
            verbs[v] = verbs.get(v, 0) + c
        steady = r["steps"].get("steady")
        steady_text = "%s (%.0f s)" % (verbs_text(steady["requests"]["slices"]), wall(steady)) if steady else "-"
        cpu = cpu_above_idle(r, "start", "first publish")
        lines.append("| %d | %s | %s | %.2f | %s | %.1f; %.1f | %.1f | %.0f | %.1f kB / %.1f kB | %s | %.2f |" % (
            n, IMPL_NAMES[r["impl"]], verbs_text(verbs, n), pub["converge_s"] or 0,
            "%.2f" % pub["handed_over_s"] if "handed_over_s" in pub else "-", cpu, 1e3 * cpu / n,
            start["etcd_cpu_s"] + pub["etcd_cpu_s"], pub["apiserver_peak_rss_mb"],
            (start["bytes_to_nodes"] + pub["bytes_to_nodes"]) / n / 1e3,
            (start["bytes_from_nodes"] + pub["bytes_from_nodes"]) / n / 1e3,
            steady_text, r.get("sim_rss_mb", 0) / n))
    lines.append("")
    disruptions = [d for d in ("apiserver-restart", "etcd-compaction", "wipe", "rollout", "change-one")
                   if any(d in r["steps"] for r in publishing)]
    if disruptions:
        lines.append("| disruption | nodes | implementation | requests per node | peak requests/s "
                     "| pools right again (s) | last node's Update returned (s) | all idle (s) | kube-apiserver CPU above idle (s) | publishers' CPU (s) "
                     "| connections accepted | kube-apiserver: allocated (MB); GC cycles; page faults; CPU in the kernel (s) |")
        lines.append("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for d in disruptions:
            for r in publishing:
                s = r["steps"].get(d)
                if not s:
                    continue
                n = r["nodes"]
                lines.append("| %s | %d | %s | %s | %d | %s | %s | %.1f | %.1f | %s | %s | %s |" % (
                    d, n, IMPL_NAMES[r["impl"]], verbs_text(s["requests"]["slices"], n), peak_rate(s),
                    "%.2f" % s["converge_s"] if s["converge_s"] is not None else "never wrong",
                    "%.2f" % s["handed_over_s"] if "handed_over_s" in s else "-", s["idle_s"], cpu_above_idle(r, d), "%.1f" % s["sim_cpu_s"] if "sim_cpu_s" in s and d != "rollout" else "-",
                    s.get("tcp_accepted", "-"), runtime_text(s)))
        lines.append("")
    churn = [r for r in results if "claim churn" in r["steps"]]
    if churn:
        lines.append("| nodes | binding-condition reconciler | claim changes | watch events on resourceclaims "
                     "| per claim change | kube-apiserver CPU above idle (s) | claim watches open |")
        lines.append("|---:|---|---:|---:|---:|---:|---:|")
        for r in churn:
            s = r["steps"]["claim churn"]
            events = s["requests"]["watch_events_claims"]
            lines.append("| %d | %s | %d | %d | %.1f | %.1f | %d |" % (
                r["nodes"], {"node": "on every node (kThisNode)", "central": "central (kAllNodes)"}[
                    r["binding_reconciler"]], s["claim_changes"], events, events / s["claim_changes"],
                cpu_above_idle(r, "claim churn"), r["steps"]["start"]["requests"]["claims"].get("WATCH", 0)))
        lines.append("")
    print("\n".join(lines))

    if plots_dir:
        os.makedirs(plots_dir, exist_ok=True)
        by_impl = {}
        for r in publishing:
            by_impl.setdefault(r["impl"], []).append(r)

        def cost_plot(name, title, ylabel, value):
            series = {IMPL_NAMES[i]: (COLORS[i], [(r["nodes"], value(r)) for r in rs]) for i, rs in by_impl.items()}
            svg_plot(title, "nodes", ylabel, series, os.path.join(plots_dir, name))
        cost_plot("apiserver-cpu.svg", "kube-apiserver CPU above idle, start and first publish", "CPU s",
                  lambda r: cpu_above_idle(r, "start", "first publish"))
        cost_plot("publish-time.svg", "Seconds until every pool is published", "s",
                  lambda r: r["steps"]["first publish"]["converge_s"] or 0)
        cost_plot("bytes-per-node.svg", "Payload bytes per node, start and first publish", "kB",
                  lambda r: sum(r["steps"][s]["bytes_to_nodes"] + r["steps"][s]["bytes_from_nodes"]
                                for s in ("start", "first publish")) / r["nodes"] / 1e3)
        largest = max((r["nodes"] for r in publishing), default=0)
        for d in disruptions:
            series = {}
            for r in publishing:
                s = r["steps"].get(d)
                if r["nodes"] != largest or not s:
                    continue
                series[IMPL_NAMES[r["impl"]]] = (COLORS[r["impl"]], list(enumerate(s["per_second_slices"])))
            svg_plot("%s, %d nodes: requests on resourceslices per second" % (d, largest), "seconds", "requests/s",
                     series, os.path.join(plots_dir, "%s.svg" % d))
    return 0
