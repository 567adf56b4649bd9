#!/usr/bin/env python3
"""Regenerates columns_v1_35.json, columns_v1_34.json and columns_v1_33.json:
Table column definitions as kube-apiserver v1.35, v1.34 and v1.33 serve
them, for the printers whose every column can be derived. Usage, from the
repository's root:

    src/encode/print/columns_v1_33_to_35.py 35 > src/encode/print/columns_v1_35.json
    src/encode/print/columns_v1_33_to_35.py 34 > src/encode/print/columns_v1_34.json
    src/encode/print/columns_v1_33_to_35.py 33 > src/encode/print/columns_v1_33.json
    src/encode/print/columns_v1_33_to_35.py --check   # fails if any file differs

No v1.35 apiserver was recorded. Its printers are v1.36's (columns_v1_36.json,
recorded from v1.36.2 or derived from printers.go) but for what changed in
1.36, and its descriptions are its own release's API docs:

- printers.go: the newest copy stored, michaelasp/kubernetes@212194ab, is
  older than v1.35.0: it prints pod certificate requests from
  certificates/v1alpha1, which 1.35 moved to v1beta1 (#134624, merged late
  October 2025, before 1.35's code freeze), and newer than #124766 (a
  completed pod's failed container's reason, approved 2025-09-02) and than
  v1.35.0-alpha.3's StorageVersionMigration v1beta1 (#134784), whose printer
  it has. It is also the copy
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

v1.34 (no recording either) is v1.35 less what 1.35 changed. The printers.go
copies read bracket it: mortent/kubernetes@1baf7abe (resource.k8s.io/v1beta2,
no resource/v1, no SuccessCriteriaMet job status: older than v1.34.0-beta.0,
whose CHANGELOG-1.34 lists #132832, that status) and 212194ab (newer than
v1.34.0). Read whole, they differ in the printers kept here only by:

- service accounts' Secrets column, which 212194ab lacks: its removal
  (#117160) is in CHANGELOG-1.35 under v1.35.0-alpha.1, "Changelog since
  v1.34.0". So v1.34 prints it, described by 1.34's ServiceAccount docs.
- pods: a completed pod's failed container's reason (#124766, approved
  2025-09-02, after v1.34.0's release; no release note): a cell, not a
  column (the row function is gated, printers/core.rs).
- jobs' SuccessCriteriaMet status: v1.34.0-beta.0, so in v1.34 as in v1.35.
- volume attributes classes: 1baf7abe names a default class "NAME (default)",
  212194ab does not, and when that changed is not established: left out of
  v1.34 (forwarded).
- resource slices' nodeName (a pointer at resource/v1): the same cell.

v1.33 (no recording either) is v1.34 less what 1.34 changed. The copies
read bracket it: yongruilin/kubernetes@144a7980 (1.32's printers: no
DeviceTaintRule printer, #130447; ClusterTrustBundle described from
v1alpha1, not #128499's v1beta1; resource.k8s.io/v1beta1, not #129970's
v1beta2: all three in CHANGELOG-1.33's v1.33.0) and 1baf7abe (all three,
none of 1.34's). Read whole, the two differ only by those three and a
replication controller's replicas read with ptr.Deref (the same cell for
a defaulted object), so v1.33.0's printers are 1baf7abe's. From there to
v1.34.0, CHANGELOG-1.34 lists one printer change, #132832 (jobs'
SuccessCriteriaMet: a cell, gated in printers/workloads.rs), and 1.34
served what 1.33 did not:

- resource.k8s.io/v1 (#132706): 1.33 has resource.k8s.io only at
  v1alpha3, v1beta1 and v1beta2, none served by default; their printers
  are left out here (Tables of them forwarded), as the v1 ones are.
- VolumeAttributesClass at storage v1 (#131549): 1.33 serves it only at
  v1alpha1/v1beta1, off by default; left out as for v1.34.

Descriptions are 1.33's API docs (k8s-openapi 0.29.0's v1_33): of the
columns kept, only CSI drivers' AttachRequired reads differently from
1.34's ("If the CSIDriverRegistry feature gate is enabled and ...").

"default" (the default convertor's resources) and ObjectMeta's "name" and
"creationTimestamp" (the default and custom resource convertors' Name and
age columns) are v1.36's lists with 1.35's docs.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.argv, ARGS = sys.argv[:1], sys.argv[1:]
CORE = "io.k8s.api.core.v1."
import columns_v1_36_derived as derived  # noqa: E402
from columns_v1_36_openapi import parse as parse_openapi  # noqa: E402


def out_file(minor):
    return os.path.join(HERE, f"columns_v1_{minor}.json")




DOCS = {}


def describe(spec, minor):
    """A description at 1.`minor`, from its release's API docs."""
    docs = DOCS.setdefault(minor, parse_openapi(derived.k8s_openapi(f"v1_{minor}")))
    kind = spec[0]
    if kind == "literal":
        return spec[1]
    if kind == "absent":
        _, definition, field = spec
        assert field not in docs[definition], (definition, field)
        return ""
    texts = {docs[d][f] for d, f in spec[1] if f in docs.get(d, {})}
    if len(texts) != 1:
        raise SystemExit(f"{spec}: the candidates do not agree at 1.{minor}: {texts}")
    return texts.pop()


def sources(gvr):
    """Each column's source as columns_v1_36_derived.py names it."""
    p = derived.PRINTERS.get(gvr)
    if isinstance(p, tuple):
        return sources(p[1])
    if isinstance(p, list):
        return {c[0]: c[4] for c in p}
    return {**derived.RECORDED_SOURCES.get(gvr, {}), "Name": derived.NAME[4], "Age": derived.AGE[4]}


# What 1.35 changed in the printers kept (see above), undone for 1.34: a
# printer's columns at 1.34 where they are not 1.35's (sources as
# columns_v1_36_derived.py writes them), and the printers left out.
V1_34_COLUMNS = {
    "/v1/serviceaccounts": [
        ("Name", "string", "name", 0, derived.NAME[4]),
        ("Secrets", "string", "", 0, ("doc", ((CORE + "ServiceAccount", "secrets"),))),
        ("Age", "string", "", 0, derived.AGE[4]),
    ],
}
V1_33_LEFT_OUT = {
    gvr: "resource.k8s.io/v1 is 1.34's (#132706); 1.33 serves resource.k8s.io only at "
         "v1alpha3/v1beta1/v1beta2 and none of them by default"
    for gvr in (
        "resource.k8s.io/v1/deviceclasses",
        "resource.k8s.io/v1/resourceclaims",
        "resource.k8s.io/v1/resourceclaimtemplates",
        "resource.k8s.io/v1/resourceslices",
    )
}
V1_34_LEFT_OUT = {
    "storage.k8s.io/v1/volumeattributesclasses":
        "its printer named a default class \"NAME (default)\" in mortent/kubernetes@1baf7abe, "
        "not in 212194ab, and which v1.34 did is not established",
}


def build(minor):
    v1_36 = json.load(open(os.path.join(HERE, "columns_v1_36.json")))
    printed, left_out = {}, {}
    for gvr, cols in v1_36["printed"].items():
        if minor <= 34 and gvr in V1_34_LEFT_OUT:
            left_out[gvr] = V1_34_LEFT_OUT[gvr]
            continue
        if minor == 33 and gvr in V1_33_LEFT_OUT:
            left_out[gvr] = V1_33_LEFT_OUT[gvr]
            continue
        if minor <= 34 and gvr in V1_34_COLUMNS:
            printed[gvr] = [
                {"name": n, "type": t, "format": f, "description": describe(d, minor), "priority": p}
                for n, t, f, p, d in V1_34_COLUMNS[gvr]
            ]
            continue
        src = sources(gvr)
        missing = [c["name"] for c in cols if c["name"] not in src]
        if missing:
            left_out[gvr] = f"no 1.{minor} source for {', '.join(missing)}"
            continue
        printed[gvr] = [{**c, "description": describe(src[c["name"]], minor)} for c in cols]
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    sources_ = {
        "columns": "columns_v1_36.json (v1.36's printers: their columns did not change in 1.36)",
        "printers.go": derived.PRINTERS_GO,
        "descriptions": f"k8s-openapi 0.29.0 (crates.io), src/v1_{minor}: Kubernetes 1.{minor}'s OpenAPI descriptions",
    }
    if minor == 33:
        sources_["printers.go after v1.32's"] = {
            "repo": "yongruilin/kubernetes",
            "path": "pkg/printers/internalversion/printers.go",
            "commit": "144a7980762c245f12c2a7b457c8aaef18496071",
        }
    if minor <= 34:
        sources_["printers.go before v1.34.0"] = {
            "repo": "mortent/kubernetes",
            "path": "pkg/printers/internalversion/printers.go",
            "commit": "1baf7abec4d3aa499168d83dee8ef797eaee8050",
        }
        sources_["changes dated"] = (
            "CHANGELOG-1.35 (v1.35.0-alpha.1: #117160, service accounts' Secrets column removed), "
            "CHANGELOG-1.34 (v1.34.0-beta.0: #132832, jobs' SuccessCriteriaMet)"
        )
    if minor == 33:
        sources_["changes dated"] += (
            "; CHANGELOG-1.33 (v1.33.0: #130447, #128499, #129970), "
            "CHANGELOG-1.34 (v1.34.0: #132706 resource.k8s.io/v1, #131549 storage v1 VolumeAttributesClass)"
        )
    sources_["left out"] = dict(sorted(left_out.items()))
    return {
        "sources": sources_,
        "printed": dict(sorted(printed.items())),
        "default": v1_36["default"],
        "name": describe(("doc", ((meta, "name"),)), minor),
        "creationTimestamp": describe(("doc", ((meta, "creationTimestamp"),)), minor),
    }


def main():
    if ARGS == ["--check"]:
        for minor in (33, 34, 35):
            text = json.dumps(build(minor), indent=1, ensure_ascii=False) + "\n"
            if open(out_file(minor), encoding="utf-8").read() != text:
                raise SystemExit(f"columns_v1_{minor}.json is not what columns_v1_33_to_35.py makes")
            print(f"columns_v1_{minor}.json is up to date")
        return
    if ARGS not in (["33"], ["34"], ["35"]):
        raise SystemExit("usage: columns_v1_33_to_35.py 33|34|35|--check")
    sys.stdout.write(json.dumps(build(int(ARGS[0])), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
