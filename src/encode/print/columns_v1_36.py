#!/usr/bin/env python3
"""Regenerates columns_v1_36.json: Table column definitions as kube-apiserver
v1.36 serves them, from its answers recorded in
../shared/reference/apiserver-v1.36 (lists/TYPE.table.gz, 32 types; see its
README) and, for printers it was not recorded printing, from
columns_v1_36_derived.json (made by columns_v1_36_derived.py from
printers.go and the API's docs at 1.36, each column with its source). A
recorded type's columns are the recording's. Usage, from the repository's
root:

    src/encode/print/columns_v1_36.py > src/encode/print/columns_v1_36.json

"printed" holds a printer's columns by group/version/resource, for every
recorded type printed by printers.go; "default" lists the recorded
resources the default convertor (Name, Created At) serves; "name" and
"creationTimestamp" are ObjectMeta's descriptions, which the default and
custom resource convertors use. Types neither recorded nor derived are
left out on purpose: kubecache forwards their Tables to a v1.36 upstream
rather than guess (docs/differences.md).
"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "..", "..", "..", "..", "shared", "reference", "apiserver-v1.36")

index = json.load(open(os.path.join(REF, "index.json")))


def gvr(request):
    path = request.split()[1].split("?")[0].strip("/").split("/")
    if path[0] == "api":
        return f"/{path[1]}/{path[2]}"
    return f"{path[1]}/{path[2]}/{path[3]}"


out = {"printed": {}, "default": [], "name": "", "creationTimestamp": ""}
for e in index["entries"]:
    if not e["file"].endswith(".table.gz"):
        continue
    key = gvr(e["request"])
    table = json.load(gzip.open(os.path.join(REF, e["file"])))
    cols = table["columnDefinitions"]
    names = [c["name"] for c in cols]
    if names == ["Name", "Created At"]:
        out["default"].append(key)
    elif key.startswith("ref.example.com/"):
        # The custom resource's: its CRD's columns, not a printer's.
        pass
    else:
        out["printed"][key] = cols
    if key == "/v1/pods":
        out["name"] = cols[0]["description"]
        out["creationTimestamp"] = next(c["description"] for c in cols if c["name"] == "Age")

# Derived printers, where the recording has none (it wins where it has).
derived = json.load(open(os.path.join(HERE, "columns_v1_36_derived.json")))["printed"]
for key, cols in derived.items():
    if key not in out["printed"]:
        out["printed"][key] = [{k: v for k, v in c.items() if k != "source"} for c in cols]

out["default"].sort()
json.dump(
    {"printed": dict(sorted(out["printed"].items())), "default": out["default"],
     "name": out["name"], "creationTimestamp": out["creationTimestamp"]},
    __import__("sys").stdout, indent=1, ensure_ascii=False,
)
print()
