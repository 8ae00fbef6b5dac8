#!/usr/bin/env bash
# dra-example-driver's own Go e2e suite (test/e2e of sigs.k8s.io/dra-example-driver
# at the version tests/e2e/reference/go.mod pins), run verbatim on a cluster of
# cluster.sh with a containerd node, under the reference's own Helm chart with
# only the image swapped, once per image under test:
#
#   ours       the GPU example's image, build/images/gpu-driver-<version>.tar
#              (tests/e2e/build-images.sh --build-dir build gpu-driver)
#   reference  dra-example-driver's own programs (kubelet plugin, claim
#              controller, webhook), built from source (tests/e2e/build-k8s.sh
#              dra-example-kubeletplugin dra-example-controller
#              dra-example-webhook, then tests/e2e/build-images.sh
#              dra-example-driver)
#
# on a cluster with cert-manager (tests/e2e/cert-manager/install.sh: the
# chart's webhook takes its certificate from it), then a Markdown table of each spec's result per image, with totals and the
# wall time of each run.
#
# Usage: tests/e2e/reference-suite.sh [--images ours,reference] [--cluster DIR]
#                                     [--focus REGEX] [--out DIR] [--write-readme]
#                                     [--report-only]
#   --images LIST   the images to run the suite against (default ours,reference)
#   --cluster DIR   use the running cluster of DIR and its containerd node
#                   (default: start one in OUT/cluster, stopped at exit)
#   --focus REGEX   only the specs matching REGEX (--ginkgo.focus)
#   --out DIR       where each image's chart, suite.log and report.json go, and
#                   table.md (default: a new /tmp/dra-reference-suite.XXXXXX)
#   --write-readme  put the table in examples/gpu/README.md between the markers
#                   <!-- reference-suite:begin --> and <!-- reference-suite:end -->
#                   (added under a heading of their own at the end if absent)
#   --report-only   run nothing: the table of the reports already in OUT
#                   (runs of the images made apart, their dirs copied there)
#
# The suite's test binary is built once, `go test -c -tags e2e` in a writable
# copy of the module, from the Go module proxy with build-k8s.sh's Go settings,
# and cached with that copy in
# ${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}/dra-example-driver-e2e/<module version>-<go version>.
# It runs in the copy's test/e2e: its rootDir (cwd/../..) holds the demo
# specs it applies. The chart copy's values.yaml differs from the reference's
# in the image (repository, tag, pullPolicy Never) and in what this node
# needs: the kubelet's registry and plugins dirs under its root dir
# NODE/kubelet, and an unprivileged plugin container (the cluster's API server
# admits no privileged one; mock GPUs need none). The chart's CDI dir,
# /var/run/cdi, is the node's CDI dir ($DRA_E2E_CDI_DIR) in its mount
# namespace. The demo specs' workload image, ubuntu:22.04, is not pulled:
# debian:12-slim of build-images.sh (bash, export, sleep) is imported under
# that name. Ginkgo has no per-spec timeout flag: each spec is bounded by the
# suite's own waits (3 min for a driver install, 2 min for a pod), each run by
# --ginkgo.timeout, and a spec still running after 3 min prints where it is.
#
# Environment: DRA_K8S_VERSION (the release of a cluster this script starts;
# default build-k8s.sh's; on 1.36 with the workload API, cluster.sh's
# DRA_E2E_WORKLOAD_API), DRA_K8S_CACHE, DRA_GO_JOBS (go test -p and
# GOMAXPROCS, default 2), DRA_SUITE_TIMEOUT (--ginkgo.timeout, default 90m).
# Needs root or sudo for the node, as cluster.sh node-start does. Exit status
# 0 when every run wrote its JSON report, whatever the specs' results.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache_root="${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}"

log() { echo "reference-suite: $*" >&2; }
die() { log "$*"; exit 1; }

command_line="tests/e2e/reference-suite.sh$(printf ' %q' "$@")"
images=(ours reference)
cluster="" focus="" out="" write_readme=0 report_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --images|--cluster|--focus|--out) [ $# -ge 2 ] || die "$1 needs a value" ;;
  esac
  case "$1" in
    --images) IFS=, read -ra images <<<"$2"; shift ;;
    --cluster) cluster="$2"; shift ;;
    --focus) focus="$2"; shift ;;
    --out) out="$2"; shift ;;
    --write-readme) write_readme=1 ;;
    --report-only) report_only=1 ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {sub(/^# ?/, ""); print; next} {exit}' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (-h for help)" ;;
  esac
  shift
done

# The pinned version of module $2 in go.mod $1 (as build-k8s.sh reads it).
pinned() { awk -v m="$2" '$1 == "require" && $2 == m {print $3; exit} $1 == m && $2 ~ /^v/ {print $2; exit}' "$1"; }
ref_version="$(pinned "$here/reference/go.mod" sigs.k8s.io/dra-example-driver)"
[ -n "$ref_version" ] || die "cannot read the pinned dra-example-driver from tests/e2e/reference/go.mod"
. "$here/reference-chart.sh"
for image in "${images[@]}"; do
  [ -n "${name[$image]:-}" ] || die "unknown image '$image' (--images takes ours, reference)"
  [ "$report_only" = 1 ] || [ -s "${archive[$image]}" ] || die "${archive[$image]} is missing: run ${make_it[$image]}"
done
command -v python3 >/dev/null || die "python3 is missing: run scripts/install-deps.sh"

out="${out:-$(mktemp -d /tmp/dra-reference-suite.XXXXXX)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The suite built, the cluster up, one run per image: all but --report-only.
if [ "$report_only" = 0 ]; then

# --- the suite's test binary ----------------------------------------------
. "$repo/scripts/go-env.sh"
dra_use_go || exit 1
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
export GOCACHE="$cache_root/go-build" GOMODCACHE="$cache_root/go-mod"
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}" GOMAXPROCS="${DRA_GO_JOBS:-2}"
module="$GOMODCACHE/sigs.k8s.io/dra-example-driver@$ref_version"
[ -d "$module" ] || (cd "$here/reference" && go mod download sigs.k8s.io/dra-example-driver) ||
  die "cannot download sigs.k8s.io/dra-example-driver@$ref_version from $GOPROXY"
# A module that needs a newer Go than the local one gets the toolchain
# scripts/go-env.sh pins for it, from the module proxy.
go_minor() { sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
needed="$(awk '$1 == "go" {print "go" $2; exit}' "$module/go.mod" | go_minor)"
if [ "$needed" -gt "$(go env GOVERSION | go_minor)" ]; then
  GOTOOLCHAIN="$(dra_go_toolchain_for "1.$needed")" || die "the suite needs Go 1.$needed: pin a toolchain in scripts/go-env.sh"
fi
suite_dir="$cache_root/dra-example-driver-e2e/$ref_version-$(go env GOVERSION)"
suite_bin="$suite_dir/e2e.test" suite_src="$suite_dir/src"
if [ -x "$suite_bin" ] && "$suite_bin" -test.list . >/dev/null 2>&1; then
  log "the suite of dra-example-driver $ref_version: cached ($suite_bin)"
else
  rm -rf "$suite_dir"
  mkdir -p "$suite_dir"
  cp -r "$module" "$suite_src"
  chmod -R u+w "$suite_src"
  log "building the suite of dra-example-driver $ref_version ($(go env GOVERSION), -p $GOMAXPROCS); the first time this takes minutes ..."
  t=$SECONDS
  (cd "$suite_src" && nice -n 10 go test -c -tags e2e -trimpath -p "$GOMAXPROCS" -o "$suite_bin.tmp" ./test/e2e) >&2 ||
    die "go test -c of $suite_src/test/e2e failed"
  mv -f "$suite_bin.tmp" "$suite_bin"
  log "  built in $((SECONDS - t)) s: $suite_bin"
fi

# --- the cluster ------------------------------------------------------------
if [ -n "$cluster" ]; then
  [ -d "$cluster" ] || die "--cluster $cluster: no such directory"
  cluster="$(cd "$cluster" && pwd)"
  "$here/cluster.sh" status "$cluster" >/dev/null ||
    die "no running cluster in $cluster: run tests/e2e/cluster.sh start $cluster"
else
  cluster="$out/cluster"
  trap '"$here/cluster.sh" stop "$cluster" || log "cluster.sh stop $cluster failed"' EXIT
  trap 'exit 130' INT TERM
  # The PodGroup spec's workload API, where a release has it only as alpha.
  case "${DRA_K8S_VERSION:-}" in v1.36.*) export DRA_E2E_WORKLOAD_API=1 ;; esac
  "$here/cluster.sh" start "$cluster"
  DRA_E2E_RUNTIME=containerd "$here/cluster.sh" node-start "$cluster"
fi
cluster_env="$("$here/cluster.sh" env "$cluster")"
env_of() { sed -n "s/^export $1=//p" <<<"$cluster_env"; }
[ "$(env_of DRA_E2E_RUNTIME)" = containerd ] ||
  die "$cluster has no containerd node: run DRA_E2E_RUNTIME=containerd tests/e2e/cluster.sh node-start $cluster"
k8s_version="$(env_of DRA_E2E_K8S_VERSION)"
workload="$cache_root/images/debian-12-slim.oci.tar"
[ -s "$workload" ] || die "$workload is missing: run tests/e2e/build-images.sh debian-base"
"$here/cluster.sh" image-import "$cluster" "$workload" docker.io/library/ubuntu:22.04
# The chart's webhook (webhook.enabled) gets its serving certificate and its
# configuration's caBundle from cert-manager.
"$here/cert-manager/install.sh" "$cluster"

# --- one run per image --------------------------------------------------------
for image in "${images[@]}"; do
  dir="$out/$image"
  rm -rf "$dir"
  mkdir -p "$dir"
  "$here/cluster.sh" image-import "$cluster" "${archive[$image]}" "${name[$image]}"
  make_chart "$image" "$suite_src/deployments/helm/dra-example-driver" "$dir/chart" \
    "$(env_of DRA_E2E_PLUGINS_REGISTRY)" "$(env_of DRA_E2E_PLUGINS_DIR)"
  args=(--ginkgo.v --ginkgo.no-color --ginkgo.json-report "$dir/report.json"
    --ginkgo.timeout "${DRA_SUITE_TIMEOUT:-90m}" --ginkgo.poll-progress-after 3m)
  [ -z "$focus" ] || args+=(--ginkgo.focus "$focus")
  log "$image (${name[$image]}): the suite on Kubernetes $k8s_version, output in $dir/suite.log ..."
  t=$SECONDS rc=0
  (cd "$suite_src/test/e2e" && KUBECONFIG="$cluster/admin.kubeconfig" HELM_CHART_PATH="$dir/chart" \
    "$suite_bin" "${args[@]}") >"$dir/suite.log" 2>&1 || rc=$?
  echo $((SECONDS - t)) >"$dir/wall_s"
  echo "$k8s_version" >"$dir/k8s_version"
  echo "$command_line" >"$dir/command"
  log "  $image: exit $rc after $((SECONDS - t)) s"
  [ -s "$dir/report.json" ] || die "$image: the suite wrote no report: see $dir/suite.log"
done
fi

# --- the table ------------------------------------------------------------------
runs=()
for image in "${images[@]}"; do
  [ -s "$out/$image/report.json" ] || die "$out/$image/report.json is missing: run the suite for $image first"
  runs+=("\`$image\`: \`$(cat "$out/$image/command" 2>/dev/null || echo "$command_line")\`")
  k8s_version="$(cat "$out/$image/k8s_version" 2>/dev/null || echo "${k8s_version:-unknown}")"
done
image_args=()
for image in "${images[@]}"; do image_args+=("$image=${name[$image]}"); done
python3 - "$out" "${image_args[@]}" >"$out/table.md" <<'EOF'
import json, os, re, sys

out, images = sys.argv[1], [arg.split("=", 1) for arg in sys.argv[2:]]
rows, totals = {}, {}
for image, _ in images:
    counts = totals.setdefault(image, {})
    for suite in json.load(open(os.path.join(out, image, "report.json"))):
        for spec in suite.get("SpecReports") or []:
            kind, state = spec["LeafNodeType"], spec["State"]
            if kind != "It" and state in ("passed", "skipped"):
                continue  # suite-level nodes appear only when they fail
            text = " ".join((spec.get("ContainerHierarchyTexts") or []) + [spec.get("LeafNodeText", "")]).strip()
            if kind != "It":
                text = f"[{kind}] {text}".strip()
            bucket = {"passed": "passed", "skipped": "skipped", "pending": "skipped"}.get(state, "failed")
            cell = state if state in ("passed", "skipped", "pending", "failed") else f"failed ({state})"
            if state not in ("passed", "skipped", "pending"):
                # Paths inside the module's copy, relative to it.
                message = re.sub(r"\S*/dra-example-driver-e2e/[^/]+/src/", "", spec.get("Failure", {}).get("Message", ""))
                lines = [l.strip() for l in message.splitlines() if l.strip()] or [""]
                message = lines[0]
                # A timed-out Eventually says why on the line after "... failed at ... with:".
                if message.startswith("Timed out after") and len(lines) > 2 and lines[1].endswith("with:"):
                    message += " " + lines[2]
                cell += ": " + (message[:160] + "…" if len(message) > 160 else message)
            counts[bucket] = counts.get(bucket, 0) + 1
            rows.setdefault(text.replace("|", "\\|"), {})[image] = cell.replace("|", "\\|")

print("| spec | " + " | ".join(image for image, _ in images) + " |")
print("|---" * (len(images) + 1) + "|")
for text, cells in rows.items():
    print(f"| {text} | " + " | ".join(cells.get(image, "-") for image, _ in images) + " |")
print()
for image, ref in images:
    counts = totals[image]
    wall = open(os.path.join(out, image, "wall_s")).read().strip()
    summary = ", ".join(f"{counts.get(b, 0)} {b}" for b in ("passed", "failed", "skipped"))
    print(f"- `{image}` (`{ref}`): {summary}; {wall} s")
EOF
cat "$out/table.md"
log "runs, charts and reports in $out"

if [ "$write_readme" = 1 ]; then
  # A table per release: the default one's under the section's first marker.
  section=reference-suite
  [ "$k8s_version" = "$(pinned "$here/k8s/go.mod" k8s.io/kubernetes)" ] || section="reference-suite-$k8s_version"
  readme_section "$section" "dra-example-driver's own e2e suite on $k8s_version" \
    "dra-example-driver $ref_version's own e2e suite (\`test/e2e\`, unchanged) on Kubernetes $k8s_version with a containerd node, under the reference's chart with only the image swapped (\`tests/e2e/reference-suite.sh\`); $(date -u +%F), $(IFS=';'; echo "${runs[*]}" | sed 's/;/; /g'):" \
    "$out/table.md"
  log "the table is in examples/gpu/README.md"
fi
