#!/usr/bin/env python3
"""Renders a kustomize overlay of deploy/k8s to YAML, for the offline checks.

kubectl kustomize is not a Debian 12 package (Debian's kubernetes-client is
1.20 and conflicts with other kubectl installs), so CI renders with this
small subset of kustomize instead: `resources` (files and directories with
a kustomization.yaml), `namespace`, `images` and `patches` (strategic-merge
patches, inline or from a file, with a kind/name target), which is all that
deploy/k8s uses. Strategic merge as Kubernetes defines it for the fields
used here: maps merge, `null` deletes a key, the lists below merge by their
key, every other list is replaced. Its output was compared with kubectl
kustomize (kustomize v5.5) on every overlay (docs/operations.md).

    render_kustomize.py DIR            # YAML documents on stdout
"""
import os
import sys

import yaml

# Lists that strategic merge combines element by element (patchMergeKey in
# the Kubernetes API types); any other list in a patch replaces the old one.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "topologySpreadConstraints": "topologyKey",
}


def merge(base, patch):
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return patch
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif key in MERGE_KEYS and isinstance(value, list) and isinstance(out.get(key), list):
            merge_key = MERGE_KEYS[key]
            # As kubectl kustomize orders them: the patch's elements (merged
            # with their base element), then the base's other elements.
            base_items = {old.get(merge_key): old for old in out[key]}
            patched = [merge(base_items[e.get(merge_key)], e)
                       if e.get(merge_key) in base_items else e for e in value]
            named = {e.get(merge_key) for e in value}
            out[key] = patched + [old for old in out[key] if old.get(merge_key) not in named]
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def set_images(node, images):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for c in value:
                    name = c.get("image", "").split("@")[0]
                    bare = name.rsplit(":", 1)[0] if ":" in name.split("/")[-1] else name
                    for image in images:
                        if image["name"] == bare:
                            new = image.get("newName", bare)
                            tag = image.get("newTag")
                            c["image"] = f"{new}:{tag}" if tag else new
            else:
                set_images(value, images)
    elif isinstance(node, list):
        for value in node:
            set_images(value, images)


def load_documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def render(directory):
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    unknown = set(k) - {"apiVersion", "kind", "resources", "namespace", "images", "patches"}
    if unknown:
        sys.exit(f"render_kustomize: {directory}: unsupported fields {sorted(unknown)}")
    docs = []
    for resource in k.get("resources", []):
        path = os.path.normpath(os.path.join(directory, resource))
        docs += render(path) if os.path.isdir(path) else load_documents(path)
    for p in k.get("patches", []):
        if "path" in p:
            patch = load_documents(os.path.join(directory, p["path"]))[0]
        else:
            patch = yaml.safe_load(p["patch"])
        target = p.get("target", {"kind": patch["kind"], "name": patch["metadata"]["name"]})
        hits = [i for i, d in enumerate(docs)
                if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]]
        if not hits:
            sys.exit(f"render_kustomize: {directory}: no {target['kind']}/{target['name']} to patch")
        for i in hits:
            docs[i] = merge(docs[i], patch)
    if "images" in k:
        set_images(docs, k["images"])
    if "namespace" in k:
        for d in docs:
            d.setdefault("metadata", {})["namespace"] = k["namespace"]
    return docs


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    yaml.safe_dump_all(render(sys.argv[1]), sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
