#!/usr/bin/env python3
"""Regenerates columns.json: every resource's Table column definitions as a
v1.20 kube-apiserver serves them (the printers' constants, whose
descriptions are the API's swagger docs). Usage:

    columns.py http://127.0.0.1:18080 > columns.json

"printed" holds the printers' columns by group/version/resource;
"default" lists the built-in resources served by the default convertor
(Name, Created At), whose columns kubecache knows itself.
"""
import json
import sys
import urllib.request

BASE = sys.argv[1].rstrip("/")
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"


def get(path, accept="application/json"):
    req = urllib.request.Request(BASE + path, headers={"Accept": accept})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def group_versions():
    yield "", "/api/v1"
    for g in get("/apis")["groups"]:
        for v in g["versions"]:
            yield g["name"], "/apis/" + v["groupVersion"]


out = {"printed": {}, "default": []}
for group, base in group_versions():
    version = base.rsplit("/", 1)[1]
    for r in get(base)["resources"]:
        if "/" in r["name"] or "list" not in r["verbs"]:
            continue
        table = get(f"{base}/{r['name']}?limit=1&includeObject=None", TABLE)
        cols = table["columnDefinitions"]
        gvr = f"{group}/{version}/{r['name']}"
        if [c["name"] for c in cols] == ["Name", "Created At"]:
            out["default"].append(gvr)
        else:
            out["printed"][gvr] = cols
json.dump(out, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
print()
