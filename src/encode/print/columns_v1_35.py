#!/usr/bin/env python3
"""Regenerates columns_v1_35.json: Table column definitions as kube-apiserver
v1.35 serves them, for the printers whose every column can be derived.
Usage, from the repository's root:

    src/encode/print/columns_v1_35.py > src/encode/print/columns_v1_35.json
    src/encode/print/columns_v1_35.py --check   # fails if the file differs

No v1.35 apiserver was recorded. Its printers are v1.36's (columns_v1_36.json,
recorded from v1.36.2 or derived from printers.go) but for what changed in
1.36, and its descriptions are its own release's API docs:

- printers.go: the newest copy stored, michaelasp/kubernetes@212194ab, is
  older than v1.35.0: it prints pod certificate requests from
  certificates/v1alpha1, which 1.35 moved to v1beta1. It is also the copy
  v1.36's derived columns come from, and the recorded v1.36.2 columns of the
  29 printers it shares have its names, types, formats and priorities. The
  one printer change CHANGELOG-1.36 (kubernetes/kubernetes, v1.36.0-alpha.1,
  #132402) lists is the node's kernel version with its architecture: a cell,
  not a column. So a printer's columns at v1.35 are v1.36's.
- descriptions: a column v1.36 describes with a literal keeps it; one from
  `<Type>{}.SwaggerDoc()[field]` is read from 1.35's API docs, the OpenAPI
  descriptions k8s-openapi 0.29.0 carries for v1_35 (columns_v1_36_openapi.py
  reads them; the same method reproduces all 146 recorded v1.36.2
  descriptions it reaches, columns_v1_36_derived.py), with every source
  columns_v1_36_derived.py names for it (RECORDED_SOURCES, PRINTERS).
- A printer with a column whose source is a type 1.35 does not serve
  (extensions/v1beta1's deployments, replica sets and daemon sets,
  batch/v1beta1's cron jobs, autoscaling/v2beta1's HPAs, discovery/v1beta1's
  endpoint slices, rbac/v1beta1's role bindings) is left out: its text at
  1.35 is not in the OpenAPI documents, and kubecache forwards those Tables
  to a v1.35 upstream rather than guess.

"default" (the default convertor's resources) and ObjectMeta's "name" and
"creationTimestamp" (the default and custom resource convertors' Name and
age columns) are v1.36's lists with 1.35's docs.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.argv, ARGS = sys.argv[:1], sys.argv[1:]
import columns_v1_36_derived as derived  # noqa: E402
from columns_v1_36_openapi import parse as parse_openapi  # noqa: E402

RELEASE = "v1_35"
OUT = os.path.join(HERE, "columns_v1_35.json")


def k8s_openapi(release):
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--offline", "--format-version", "1"],
        cwd=os.path.join(HERE, "..", "..", ".."), check=True, capture_output=True, text=True,
    ).stdout)
    for p in meta["packages"]:
        if p["name"] == "k8s-openapi":
            assert p["version"] == "0.29.0", p["version"]
            return os.path.join(os.path.dirname(p["manifest_path"]), "src", release)
    raise SystemExit("k8s-openapi is not among the dependencies")


DOCS = parse_openapi(k8s_openapi(RELEASE))


def describe(spec):
    """A description at 1.35, or None where it cannot be derived."""
    kind = spec[0]
    if kind == "literal":
        return spec[1]
    if kind == "absent":
        _, definition, field = spec
        assert field not in DOCS[definition], (definition, field)
        return ""
    texts = {DOCS[d][f] for d, f in spec[1] if f in DOCS.get(d, {})}
    if len(texts) != 1:
        raise SystemExit(f"{spec}: the candidates do not agree at 1.35: {texts}")
    return texts.pop()


def sources(gvr):
    """Each column's source as columns_v1_36_derived.py names it."""
    p = derived.PRINTERS.get(gvr)
    if isinstance(p, tuple):
        return sources(p[1])
    if isinstance(p, list):
        return {c[0]: c[4] for c in p}
    return {**derived.RECORDED_SOURCES.get(gvr, {}), "Name": derived.NAME[4], "Age": derived.AGE[4]}


def build():
    v1_36 = json.load(open(os.path.join(HERE, "columns_v1_36.json")))
    printed, left_out = {}, {}
    for gvr, cols in v1_36["printed"].items():
        src = sources(gvr)
        missing = [c["name"] for c in cols if c["name"] not in src]
        if missing:
            left_out[gvr] = missing
            continue
        printed[gvr] = [{**c, "description": describe(src[c["name"]])} for c in cols]
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    return {
        "sources": {
            "columns": "columns_v1_36.json (v1.36's printers: their columns did not change in 1.36)",
            "printers.go": derived.PRINTERS_GO,
            "descriptions": "k8s-openapi 0.29.0 (crates.io), src/v1_35: Kubernetes 1.35's OpenAPI descriptions",
            "left out": {k: f"no 1.35 source for {', '.join(v)}" for k, v in sorted(left_out.items())},
        },
        "printed": dict(sorted(printed.items())),
        "default": v1_36["default"],
        "name": DOCS[meta]["name"],
        "creationTimestamp": DOCS[meta]["creationTimestamp"],
    }


def main():
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if ARGS == ["--check"]:
        if open(OUT, encoding="utf-8").read() != text:
            raise SystemExit("columns_v1_35.json is not what columns_v1_35.py makes")
        print("columns_v1_35.json is up to date")
        return
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
