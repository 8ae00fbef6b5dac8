"""The tables of bench/image_size.sh: IMAGE REFERENCE MAP BINARY."""
import collections
import gzip
import os
import re
import sys

import oci_image

image, reference, map_file, binary = sys.argv[1:]


def mb(n):
    return "%.2f MB" % (n / 1e6)


def group(path):
    name = os.path.basename(path)
    if path.startswith("usr/bin/"):
        return "the driver"
    for prefix, label in (("libc.so", "glibc"), ("libm.so", "glibc"), ("ld-linux", "glibc"),
                          ("libcrypto", "OpenSSL"), ("libssl", "OpenSSL"),
                          ("libstdc++", "C++ runtime"), ("libgcc_s", "C++ runtime"),
                          ("libcurl", "libcurl (lean) + nghttp2"), ("libnghttp2", "libcurl (lean) + nghttp2"),
                          ("libyaml-cpp", "yaml-cpp"), ("libz.so", "zlib")):
        if name.startswith(prefix):
            return label
    if path.startswith("etc/ssl/"):
        return "CA certificates"
    if path.startswith("usr/share/doc/"):
        return "licences (copyright files)"
    return "other (/etc, links, dirs)"


def file_table(title, layers, group_of):
    """Prints the stored and compressed bytes of an image's files by group."""
    sizes = collections.defaultdict(lambda: [0, 0])
    for layer in layers:
        for member, data in oci_image.members(layer):
            entry = sizes[group_of(member.name.lstrip("./"))]
            entry[0] += len(data)
            entry[1] += len(gzip.compress(data, 6)) if data else 0
    print("| %s | stored | gzip -6 |" % title)
    print("|---|---|---|")
    for label, (raw, packed) in sorted(sizes.items(), key=lambda kv: -kv[1][1]):
        print("| %s | %s | %s |" % (label, mb(raw), mb(packed)))
    print("| **all files** | %s | %s |" % (mb(sum(v[0] for v in sizes.values())),
                                           mb(sum(v[1] for v in sizes.values()))))
    print()


our_layers, their_layers = oci_image.read(image)[1], oci_image.read(reference)[1]
file_table("gpu-driver image: files", our_layers, group)
file_table("dra-example-driver image: files", their_layers,
           lambda path: path if path.startswith("usr/bin/") else "other (/etc, dirs)")
ours, theirs = os.path.getsize(image), os.path.getsize(reference)
print("| OCI archive | gpu-driver | dra-example-driver | ratio |")
print("|---|---|---|---|")
print("| size (%d layer(s) vs %d) | %s | %s | %.2f |" % (len(our_layers), len(their_layers), mb(ours), mb(theirs),
                                                      ours / theirs))
print()


def component(source):
    archive = re.sub(r"\(.*\)$", "", source)
    name = os.path.basename(archive)
    member = re.search(r"\((.*)\)$", source)
    if name == "libgrpc.a" or name == "libgrpc_unsecure.a":
        if member and re.search(r"xds|envoy|udpa", member.group(1)):
            return "gRPC core: xDS"
        return "gRPC core"
    for prefixes, label in ((("libgrpc++",), "gRPC++"), (("libprotobuf",), "protobuf"), (("libabsl_",), "abseil"),
                            (("libre2", "libupb", "libcares", "libgpr", "libaddress_sorting"),
                             "re2, upb, c-ares, gpr, address_sorting"),
                            (("libdra_proto", "libdra_k8s_proto"), "the SDK: generated protobuf"),
                            (("libdra_",), "the SDK"), (("libnri", "libcpu_"), "the example (CPU, NRI)")):
        if name.startswith(prefixes):
            return label
    if name.endswith((".a", ".o")) and "/usr/lib/" not in archive:
        return "the example (GPU, common)"
    return "linker-made tables (relocations, unwind index), C start files"


by_component = collections.Counter()
by_section = collections.Counter()
lines = open(map_file).read().split("\n")
start = next(i for i, line in enumerate(lines) if line.startswith("Linker script and memory map"))
output_section, pending = None, False
entry = re.compile(r"^ (\.\S+)(?:\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*))?$")
continued = re.compile(r"^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S.*)$")
for line in lines[start:]:
    if re.match(r"^\.\S+", line):
        output_section = line.split()[0]
        continue
    match = entry.match(line)
    if match and match.group(2) is None:
        pending = True
        continue
    if match:
        size, source = int(match.group(2), 16), match.group(3)
    else:
        match = continued.match(line) if pending else None
        pending = False
        if not match:
            continue
        size, source = int(match.group(1), 16), match.group(2)
    pending = False
    if output_section is None or output_section in (".bss", ".tbss") or output_section.startswith((".debug", ".comment")):
        continue
    by_component[component(source)] += size
    by_section[output_section] += size

total = sum(by_component.values())
print("| gpu-driver binary (%s unstripped file): from | bytes | share |" % mb(os.path.getsize(binary)))
print("|---|---|---|")
for label, size in by_component.most_common():
    print("| %s | %s | %.1f%% |" % (label, mb(size), 100 * size / total))
print("| **allocated sections** | %s | |" % mb(total))
print()
print("| output section | bytes |")
print("|---|---|")
for section, size in by_section.most_common(8):
    print("| %s | %s |" % (section, mb(size)))
