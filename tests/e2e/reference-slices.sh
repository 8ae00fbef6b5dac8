#!/usr/bin/env bash
# The ResourceSlices the GPU example and dra-example-driver publish under the
# reference's own Helm chart (only the image swapped, as reference-suite.sh
# installs it), for each device profile and flag set the chart offers, on a
# running cluster of cluster.sh with a containerd node, compared field by
# field: slice layout, device order, and every attribute, capacity, counter,
# binding condition and flag of every device. Prints a Markdown table of the
# differences (the same difference on several devices is one row naming
# them); --write-readme puts it into examples/gpu/README.md between
# <!-- reference-slices:begin --> and <!-- reference-slices:end -->.
#
# Usage: tests/e2e/reference-slices.sh --cluster DIR [--out DIR] [--write-readme]
#   --cluster DIR   the running cluster (cluster.sh start DIR; node-start with
#                   DRA_E2E_RUNTIME=containerd)
#   --out DIR       the charts and each profile's slices as JSON, and
#                   slices.md (default: a new /tmp/dra-reference-slices.XXXXXX)
#
# Each profile is one Helm release per image in a namespace of its own with a
# driver name of its own, waited for until every pool of that driver is
# complete (as many slices of the newest generation as resourceSliceCount
# says), then uninstalled with its slices. The images are those of
# reference-suite.sh (tests/e2e/reference-chart.sh says how to build them).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache_root="${DRA_K8S_CACHE:-$HOME/.cache/dra-cpp}"
log() { echo "reference-slices: $*" >&2; }
die() { log "$*"; exit 1; }

cluster="" out="" write_readme=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cluster|--out) [ $# -ge 2 ] || die "$1 needs a value" ;;
  esac
  case "$1" in
    --cluster) cluster="$2"; shift ;;
    --out) out="$2"; shift ;;
    --write-readme) write_readme=1 ;;
    -h|--help) awk 'NR == 1 {next} /^#/ {sub(/^# ?/, ""); print; next} {exit}' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (-h for help)" ;;
  esac
  shift
done
[ -n "$cluster" ] || die "--cluster DIR is required"

pinned() { awk -v m="$2" '$1 == "require" && $2 == m {print $3; exit} $1 == m && $2 ~ /^v/ {print $2; exit}' "$1"; }
ref_version="$(pinned "$here/reference/go.mod" sigs.k8s.io/dra-example-driver)"
[ -n "$ref_version" ] || die "cannot read the pinned dra-example-driver from tests/e2e/reference/go.mod"
. "$here/reference-chart.sh"
images=(ours reference)
for image in "${images[@]}"; do
  [ -s "${archive[$image]}" ] || die "${archive[$image]} is missing: run ${make_it[$image]}"
done

cluster="$(cd "$cluster" && pwd)"
cluster_env="$("$here/cluster.sh" env "$cluster")"
env_of() { sed -n "s/^export $1=//p" <<<"$cluster_env"; }
[ "$(env_of DRA_E2E_RUNTIME)" = containerd ] ||
  die "$cluster has no containerd node: run DRA_E2E_RUNTIME=containerd tests/e2e/cluster.sh node-start $cluster"
bin_dir="$("$here/build-k8s.sh" --print-dir helm kubectl dra-example-kubeletplugin)"
chart_src="$bin_dir/dra-example-driver/deployments/helm/dra-example-driver"
kubectl=("$bin_dir/kubectl" --kubeconfig "$cluster/admin.kubeconfig")
helm=("$bin_dir/helm" --kubeconfig "$cluster/admin.kubeconfig")
out="${out:-$(mktemp -d /tmp/dra-reference-slices.XXXXXX)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# name|helm --set list: the chart's profiles and the flags that change what
# its plugin publishes.
profiles=(
  "gpu|"
  "partitions|kubeletPlugin.gpuPartitions=4"
  "multiple-allocations|gpuAllowMultipleAllocations=true"
  "partitions-multiple-allocations|kubeletPlugin.gpuPartitions=2,gpuAllowMultipleAllocations=true"
  "binding-conditions|kubeletPlugin.bindingConditions=true"
  "net|deviceProfile=net"
  "cpu|deviceProfile=cpu"
)

# pool_complete DRIVER: every pool of DRIVER has resourceSliceCount slices
# of its newest generation.
pool_complete() {
  "${kubectl[@]}" get resourceslices --field-selector "spec.driver=$1" -o json | python3 -c '
import collections, json, sys
slices = json.load(sys.stdin)["items"]
pools = collections.defaultdict(list)
for s in slices:
    pools[s["spec"]["pool"]["name"]].append(s["spec"]["pool"])
ok = bool(pools) and all(
    sum(p["generation"] == max(q["generation"] for q in ps) for p in ps) == ps[0]["resourceSliceCount"]
    for ps in pools.values())
sys.exit(0 if ok else 1)'
}

for image in "${images[@]}"; do
  index=0
  "$here/cluster.sh" image-import "$cluster" "${archive[$image]}" "${name[$image]}"
  rm -rf "$out/$image"
  mkdir -p "$out/$image/slices"
  make_chart "$image" "$chart_src" "$out/$image/chart" "$(env_of DRA_E2E_PLUGINS_REGISTRY)" "$(env_of DRA_E2E_PLUGINS_DIR)"
  for profile in "${profiles[@]}"; do
    profile_name="${profile%%|*}" sets="${profile#*|}"
    ns="slices-$profile_name-$image"
    # Short: the plugin's registration socket is named after the driver and
    # the pod's UID, within the 107 bytes of a socket path.
    driver="p$((index += 1))-${image:0:3}.example.com"
    args=(--namespace "$ns" --create-namespace --set "driverName=$driver" --wait --timeout 3m)
    [ -z "$sets" ] || args+=(--set "$sets")
    log "$image, $profile_name ($driver${sets:+, $sets})"
    "${helm[@]}" install slices "$out/$image/chart" "${args[@]}" >/dev/null
    for _ in $(seq 600); do pool_complete "$driver" && break; sleep 0.2; done
    pool_complete "$driver" || die "$image, $profile_name: the driver's pools never became complete"
    "${kubectl[@]}" get resourceslices --field-selector "spec.driver=$driver" -o json >"$out/$image/slices/$profile_name.json"
    "${helm[@]}" uninstall slices --namespace "$ns" --wait >/dev/null
    "${kubectl[@]}" delete resourceslices --field-selector "spec.driver=$driver" --wait >/dev/null
    "${kubectl[@]}" delete namespace "$ns" --wait=false >/dev/null
  done
done

python3 - "$out" "${profiles[@]}" >"$out/slices.md" <<'EOF'
import collections, json, os, sys

out, profiles = sys.argv[1], [p.split("|", 1) for p in sys.argv[2:]]


def load(image, profile):
    """The driver's devices by name in publishing order, and its slice layout."""
    slices = json.load(open(os.path.join(out, image, "slices", profile + ".json")))["items"]
    driver = slices[0]["spec"]["driver"]
    text = json.dumps(slices).replace(driver, "<driver>")
    slices = sorted(json.loads(text), key=lambda s: (s["spec"]["pool"]["name"], s["metadata"]["name"]))
    devices, layout = collections.OrderedDict(), []
    for s in slices:
        spec = s["spec"]
        layout.append({k: v for k, v in spec.items() if k not in ("devices", "pool", "driver")})
        layout[-1]["pool.resourceSliceCount"] = spec["pool"]["resourceSliceCount"]
        layout[-1]["devices"] = len(spec.get("devices") or [])
        for d in spec.get("devices") or []:
            devices[d["name"]] = d
    return devices, layout


def flatten(value, path=""):
    """Leaf values by path; lists of objects by index (sharedCounters[0].name)."""
    if isinstance(value, dict):
        items = {}
        for k, v in value.items():
            items.update(flatten(v, f"{path}.{k}" if path else k))
        return items
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        items = {}
        for i, v in enumerate(value):
            items.update(flatten(v, f"{path}[{i}]"))
        return items
    return {path: json.dumps(value, sort_keys=True)}


def group(names):
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} … {names[-1]} ({len(names)} devices)"


print("| profile (chart values) | what | GPU example | reference |")
print("|---|---|---|---|")
for profile, sets in profiles:
    ours, ours_layout = load("ours", profile)
    ref, ref_layout = load("reference", profile)
    label = f"{profile}" + (f" (`{sets}`)" if sets else "")
    rows = []
    if len(ours_layout) != len(ref_layout):
        rows.append(("slices", str(len(ours_layout)), str(len(ref_layout))))
    else:
        for i, (a, b) in enumerate(zip(ours_layout, ref_layout)):
            a, b = flatten(a), flatten(b)
            differing = [f for f in sorted(set(a) | set(b)) if a.get(f) != b.get(f)]
            for f in differing[:3]:
                rows.append((f"slice {i}: `{f}`", f"`{a.get(f, '(none)')}`", f"`{b.get(f, '(none)')}`"))
            if len(differing) > 3:
                rows.append((f"slice {i}: {len(differing) - 3} more fields as above", "", ""))
    common = [n for n in ours if n in ref]
    if [n for n in ours if n in ref] != [n for n in ref if n in ours]:
        rows.append(("device order", ", ".join(common[:6]) + " …", ", ".join([n for n in ref if n in ours][:6]) + " …"))
    only_ours, only_ref = [n for n in ours if n not in ref], [n for n in ref if n not in ours]
    if only_ours or only_ref:
        rows.append(("devices only on one side", group(only_ours) or "-", group(only_ref) or "-"))
    # field -> (ours, reference) -> devices
    differences = collections.defaultdict(lambda: collections.defaultdict(list))
    for n in common:
        a, b = flatten(ours[n]), flatten(ref[n])
        for field in sorted(set(a) | set(b)):
            if a.get(field) != b.get(field):
                differences[field][(a.get(field, "(none)"), b.get(field, "(none)"))].append(n)
    for field, values in sorted(differences.items()):
        names = [n for pair_names in values.values() for n in pair_names]
        if len(values) > 3:
            # A per-device value (a UUID, a bus ID): one row, one example.
            (a, b), first = next(iter(values.items()))
            rows.append((f"`{field}` of {group(names)}: differs per device, e.g. {first[0]}", f"`{a}`", f"`{b}`"))
            continue
        for (a, b), pair_names in values.items():
            rows.append((f"`{field}` of {group(pair_names)}", f"`{a}`", f"`{b}`"))
    if not rows:
        rows.append(("(identical)", "", ""))
    for what, a, b in rows:
        print(f"| {label} | {what} | {a} | {b} |".replace("\n", " "))
EOF
cat "$out/slices.md"
log "charts, slices and the table in $out"

if [ "$write_readme" = 1 ]; then
  readme_section reference-slices "What both publish under the reference's chart" \
    "The ResourceSlices both images publish under the reference's chart on Kubernetes $(env_of DRA_E2E_K8S_VERSION), per profile, every difference (\`tests/e2e/reference-slices.sh\`, $(date -u +%F)):" \
    "$out/slices.md"
  log "the table is in examples/gpu/README.md"
fi
