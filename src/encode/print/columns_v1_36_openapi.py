#!/usr/bin/env python3
"""Reads the OpenAPI descriptions that the k8s-openapi crate carries for one
Kubernetes release (its src/v1_XX/**.rs: each definition's schemars
JsonSchema impl holds its own and its properties' descriptions as Rust
string literals) into {definition: {"": type doc, property: doc}}.
columns_v1_36_derived.py reads v1.36's. Usage, to dump one release:

    src/encode/print/columns_v1_36_openapi.py PATH/k8s-openapi-0.29.0/src/v1_36
"""
import glob
import json
import os
import re
import sys

STRING = r'"((?:[^"\\]|\\.)*)"'


def rust_unescape(s):
    """A Rust string literal's value."""
    out = []
    i = 0
    simple = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
        elif s[i + 1] in simple:
            out.append(simple[s[i + 1]])
            i += 2
        elif s[i + 1] == "u":
            end = s.index("}", i)
            out.append(chr(int(s[i + 3:end], 16)))
            i = end + 1
        else:
            raise ValueError(f"escape \\{s[i + 1]}")
    return "".join(out)


def parse(root):
    """A release's descriptions, in either layout of the crate's sources:
    0.29's (`json_schema!`) or, before it (0.13 to 0.25), schemars'
    builder calls (`parse_builder`)."""
    pod = os.path.join(root, "api", "core", "v1", "pod.rs")
    if "json_schema!" in open(pod, encoding="utf-8").read():
        return parse_macro(root)
    return parse_builder(root)


def parse_builder(root):
    """0.13 to 0.25: each property a `"name".to_owned()` (or `.into()`)
    line, then its schema's `description: Some("…")`; the type's own
    description is the one at the outer schema's indent (16)."""
    docs = {}
    for path in glob.glob(os.path.join(root, "**", "*.rs"), recursive=True):
        text = open(path, encoding="utf-8").read()
        m = re.match(r"// Generated from definition (\S+)", text)
        if not m or "fn json_schema" not in text:
            continue
        d = {}
        prop = None
        for line in text[text.index("fn json_schema"):].split("\n"):
            pm = re.match(r'^\s+"([^"]+)"\.(?:to_owned|into)\(\),\s*$', line)
            if pm:
                prop = pm.group(1)
                continue
            dm = re.search(r"description: Some\(" + STRING, line)
            if dm:
                indent = len(line) - len(line.lstrip(" "))
                key = "" if indent == 16 else prop
                if key is not None and key not in d:
                    d[key] = rust_unescape(dm.group(1))
        docs[m.group(1)] = d
    return docs


def parse_macro(root):
    docs = {}
    for path in glob.glob(os.path.join(root, "**", "*.rs"), recursive=True):
        text = open(path, encoding="utf-8").read()
        m = re.match(r"// Generated from definition (\S+)", text)
        if not m or "json_schema!" not in text:
            continue
        d = {}
        prop = None
        for line in text[text.index("json_schema!"):].split("\n"):
            pm = re.match(r'^ {16}"([^"]+)": ', line)
            if pm:
                prop = pm.group(1)
                continue
            dm = re.search(r'"description": ' + STRING, line) or re.search(
                r'insert\("description"\.into\(\), ' + STRING, line
            )
            if dm:
                indent = len(line) - len(line.lstrip(" "))
                key = "" if indent == 12 else prop
                if key is None or key in d:
                    continue
                d[key] = rust_unescape(dm.group(1))
        docs[m.group(1)] = d
    return docs


if __name__ == "__main__":
    json.dump(parse(sys.argv[1]), sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    print()
