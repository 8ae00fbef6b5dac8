# Sourced by reference-suite.sh and reference-slices.sh: dra-example-driver's
# own Helm chart with only the image swapped, and the node's paths.
#
# The image under test, by the name the scripts use:
#   ours       the GPU example's image, build/images/gpu-driver-<version>.tar
#   reference  dra-example-driver's own programs built from source
# Needs: repo, cache_root, ref_version (the pinned dra-example-driver), die.

# Per image: its OCI archive, its name on the node, and how to make it.
our_tag="$("$repo/scripts/version.sh")"
declare -A archive name make_it
archive[ours]="$repo/build/images/gpu-driver-$our_tag.tar"
name[ours]="registry.example.com/dra-cpp/gpu-driver:$our_tag"
make_it[ours]="tests/e2e/build-images.sh --build-dir build gpu-driver"
archive[reference]="$cache_root/images/dra-example-driver-$ref_version.tar"
name[reference]="registry.k8s.io/dra-example-driver/dra-example-driver:$ref_version"
make_it[reference]="tests/e2e/build-k8s.sh dra-example-kubeletplugin dra-example-controller dra-example-webhook && tests/e2e/build-images.sh dra-example-driver"

# set_line FILE OLD NEW: the one line of FILE that is exactly OLD becomes NEW.
set_line() {
  [ "$(grep -cxF -- "$2" "$1")" = 1 ] || die "$1: no single line '$2' (has the chart changed?)"
  OLD="$2" NEW="$3" awk '$0 == ENVIRON["OLD"] {print ENVIRON["NEW"]; next} {print}' "$1" >"$1.tmp"
  mv -f "$1.tmp" "$1"
}

# make_chart IMAGE SOURCE DIR REGISTRY_DIR PLUGINS_DIR: the reference's chart
# of SOURCE in DIR with IMAGE (ours, reference) and the node's kubelet
# directories; DIR.diff is what changed in values.yaml. The plugin runs
# unprivileged: the suite's API server admits no privileged pod, and mock
# GPUs need none.
make_chart() {
  local values="$3/values.yaml" ref="${name[$1]}"
  cp -r "$2" "$3"
  set_line "$values" "  repository: registry.k8s.io/dra-example-driver/dra-example-driver" "  repository: ${ref%:*}"
  set_line "$values" '  tag: ""' "  tag: \"${ref##*:}\""
  set_line "$values" "  pullPolicy: IfNotPresent" "  pullPolicy: Never"
  set_line "$values" "  kubeletRegistrarDirectoryPath: /var/lib/kubelet/plugins_registry" \
    "  kubeletRegistrarDirectoryPath: $4"
  set_line "$values" "  kubeletPluginsDirectoryPath: /var/lib/kubelet/plugins" "  kubeletPluginsDirectoryPath: $5"
  set_line "$values" "        privileged: true" "        privileged: false"
  diff -u "$2/values.yaml" "$values" >"$3.diff" || true
}

# readme_section NAME HEADING INTRO TABLE_FILE: INTRO and the table in
# examples/gpu/README.md between <!-- NAME:begin --> and <!-- NAME:end -->,
# added at the end under "## HEADING" when the markers are absent.
readme_section() {
  README="$repo/examples/gpu/README.md" NAME="$1" HEADING="$2" INTRO="$3" TABLE="$4" python3 - <<'PY'
import os, re

path, name = os.environ["README"], os.environ["NAME"]
begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
section = f"{begin}\n{os.environ['INTRO']}\n\n{open(os.environ['TABLE']).read().strip()}\n{end}"
text = open(path).read()
if begin in text and end in text:
    text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: section, text, count=1, flags=re.S)
else:
    text = text.rstrip("\n") + f"\n\n## {os.environ['HEADING']}\n\n" + section + "\n"
open(path, "w").write(text)
PY
}
