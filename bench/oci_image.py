"""An image in an OCI archive (the tar of an OCI layout holding one image, as
tests/e2e/build-images.sh writes them), for the bench scripts."""
import gzip
import io
import json
import tarfile


def read(archive):
    """The image's config (JSON) and its layers, each an uncompressed tar as bytes."""
    with tarfile.open(archive) as oci:
        def blob(digest):
            return oci.extractfile("blobs/" + digest.replace(":", "/")).read()
        index = json.loads(oci.extractfile("index.json").read())
        manifest = json.loads(blob(index["manifests"][0]["digest"]))
        # Decompressed here: tarfile's own gzip reading stops short in
        # umoci's layers.
        layers = [gzip.decompress(blob(layer["digest"])) if layer["mediaType"].endswith("gzip")
                  else blob(layer["digest"]) for layer in manifest["layers"]]
        return json.loads(blob(manifest["config"]["digest"])), layers


def members(layer):
    """(member, its content or b"") for each entry of a layer."""
    with tarfile.open(fileobj=io.BytesIO(layer)) as files:
        while True:
            try:
                member = files.next()
            except tarfile.ReadError:  # umoci's layers end without tar's end blocks
                return
            if member is None:
                return
            yield member, files.extractfile(member).read() if member.isfile() else b""


def unpack(archive, root):
    """Unpacks the image's layers into `root`; returns its config."""
    config, layers = read(archive)
    for layer in layers:
        with tarfile.open(fileobj=io.BytesIO(layer)) as files:
            files.extractall(root, filter="tar")
    return config
