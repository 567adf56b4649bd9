#!/usr/bin/env python3
"""Derives schema_v1_<N>.json, the protobuf messages of the Go types of
the v1.N API (N: 21 to 36), in schema.json's format (schema.go documents
it), from:

  - schema.json (v1.20's types, dumped by reflection): every field v1.20
    already had keeps its JSON name, cardinality and omitempty;
  - the k8s-pb crate (kube-rs's prost bindings of upstream's
    generated.proto, pinned below per release, fetched with cargo and
    sha256-checked): each message's fields, their numbers, proto types,
    repeated or map, in Go declaration order, and which fields are gone;
  - schema_v1_36.facts beside this script: what the crate cannot say of a
    field added since v1.20 (its JSON name as Go's json tag spells it,
    whether gogo writes it always or only when set, omitempty), the Go
    names of new messages, the kinds v1.36 serves, and the fields v1.36
    added after the crate's release, read from the Go sources the file
    names. A fact marked `since=M` is one of v1.M and later, one marked
    `until=L` one of v1.L and before: other releases' schemas leave it
    out (and drop the field from a crate that has it). A release older
    than its crate (1.21 to 1.27: 1.28's) gets the fields and kinds gone
    by the crate's release from the facts too (type=, as v1.20 had them,
    or as the Go sources say), and `as=` names a field's message where the
    release's is another than the crate's.

Every release's schema is checked against k8s-openapi (the workspace's,
pinned in Cargo.lock, or an older one, OPENAPI), whose module v1_N lists
the v1.N API's fields as its OpenAPI document has them: each message with
a struct there has the same fields (names compared as `same` does), and
a field holding a message holds the struct of the same name (but for
OPENAPI_RENAMED and SAME_TYPES), so a field added, removed or retyped
between releases that the crate of that release or the facts miss fails
the run (v1.36's known exceptions are listed in OPENAPI_V1_36); and its
kinds are the resources v1_N has in the group versions the facts say it
serves (but for KINDS_NOT_IN_OPENAPI and OPENAPI_KINDS_NOT_WRITTEN, and
their releases' ones). Messages no struct of k8s-openapi describes (the
meta/v1 options but DeleteOptions) are not checked: their facts' since=
are the Go sources'.

Usage: src/encode/protobuf/schema_v1_36.py [--release N] [--check]
(N: 21 to 36, 36 the default; --check: fail if schema_v1_<N>.json is not
what it would write.)
The crates are kept in ${XDG_CACHE_HOME:-~/.cache}/kubecache-k8s-pb.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CRATE = "k8s-pb"
# The crate each release's messages are read from: (version, sha256 of its
# .crate). 0.9.0 is generated from Kubernetes 1.35.0's generated.proto;
# 0.8.0 (the same messages as 0.7.0: only derives differ) from 1.33's:
# it has resource.k8s.io/v1beta2 (new in 1.33) and not resource.k8s.io/v1
# (1.34), and its messages' fields are k8s-openapi's v1_33 ones. No
# release of the crate was generated from 1.34: v1.34's messages are
# 1.35.0's without the fields the facts mark `since=35`; nor from 1.32
# (0.6.0 is 1.31's: resource.k8s.io/v1alpha3 only, v1beta1 came in 1.32):
# v1.32's are 1.33's without the fields marked `since=33`.
#
# Older releases: 0.1.0 is generated from 1.28's (flowcontrol v1beta3 and
# not v1, which 1.29 added; core/v1 Container.restartPolicy, 1.28's;
# policy/v1beta1 PodSecurityPolicy, gone from 1.29's k8s.io/api), 0.2.0
# from 1.29's (flowcontrol v1; LifecycleHandler.sleep, PodAffinityTerm's
# matchLabelKeys), 0.3.0 from 1.30's (apidiscovery v2, storagemigration,
# admissionregistration v1 ValidatingAdmissionPolicy), 0.4.0 to 0.6.1 from
# 1.31's (resource.k8s.io/v1alpha3, coordination v1alpha1; their messages
# are the same, 0.6.1 but renames prost's ApiGroupDiscovery). No release
# of the crate was generated from 1.21 to 1.27: their messages are 1.28's
# without the fields the facts mark `since=` a later release, with those
# marked `until=` an earlier one left out and those gone by 1.28 (given
# with type=, as v1.20 had them) put back.
K8S_PB_1_28 = ("0.1.0", "5ae4fd55b298dbc72e72ec168fc0ed5631abc12f31a6164a01a685af469bec6c")
CRATES = {
    **{n: K8S_PB_1_28 for n in range(21, 29)},
    29: ("0.2.0", "764245441589b32e4a0a4e1e0fd2e6260bcbc857107cbbda6cf57664da31c9ee"),
    30: ("0.3.0", "14e3feedd038a87f462054285589706c784a0dba1e79584af1766b64ad5e01b8"),
    31: ("0.6.1", "a6b9649de0807b9574d9a424ce96dd23eebd6de08bf0081e982d1e3679829da6"),
    32: ("0.8.0", "b26e28bd22771cbae7baac83b754d5b696385bc9629d0ae7face2dbc382555f9"),
    33: ("0.8.0", "b26e28bd22771cbae7baac83b754d5b696385bc9629d0ae7face2dbc382555f9"),
    34: ("0.9.0", "43b6ba14400b62feaa58ebbbd32ce2d9a4601339b2820af393f68033b9cea620"),
    35: ("0.9.0", "43b6ba14400b62feaa58ebbbd32ce2d9a4601339b2820af393f68033b9cea620"),
    36: ("0.9.0", "43b6ba14400b62feaa58ebbbd32ce2d9a4601339b2820af393f68033b9cea620"),
}

# Go types written as something else than a message of the schema (as
# schema.go's `special` and `unions`).
SPECIAL = {
    "apimachinery/pkg/apis/meta/v1.Time": "time",
    "apimachinery/pkg/apis/meta/v1.MicroTime": "microtime",
    "apimachinery/pkg/apis/meta/v1.FieldsV1": "raw",
    "apimachinery/pkg/runtime.RawExtension": "raw",
    "apimachinery/pkg/api/resource.Quantity": "quantity",
    "apimachinery/pkg/util/intstr.IntOrString": "intorstr",
    "apimachinery/pkg/apis/meta/v1.Duration": "unsupported:Duration",
    "apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": "raw",
}
# A named string slice (a user's `extra` values) is a message of repeated
# items.
ITEMS = "ExtraValue"
UNIONS = {
    "JSONSchemaPropsOrArray": "orarray",
    "JSONSchemaPropsOrBool": "orbool",
    "JSONSchemaPropsOrStringArray": "orstrings",
}
SCALARS = {"string": "string", "int32": "int", "int64": "int", "bool": "bool",
           "double": "double", "bytes": "bytes"}


def fail(msg):
    sys.exit(f"schema_v1_36.py: {msg}")


def fetch_crate(CRATE, VERSION, SHA256):
    """A crate's unpacked source, fetched once by cargo (the ordinary
    client of its registry) and checked against the pinned sha256."""
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                         os.path.expanduser("~/.cache"), "kubecache-k8s-pb")
    src = os.path.join(cache, f"{CRATE}-{VERSION}")
    if os.path.isdir(os.path.join(src, "src")):
        return src
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "Cargo.toml"), "w") as f:
            f.write('[package]\nname = "fetch-k8s-pb"\nversion = "0.0.0"\n'
                    'edition = "2021"\n\n[lib]\npath = "lib.rs"\n\n'
                    f'[dependencies]\n{CRATE} = "={VERSION}"\n')
        open(os.path.join(tmp, "lib.rs"), "w").close()
        subprocess.run(["cargo", "fetch", "--quiet"], cwd=tmp, check=True)
        meta = json.loads(subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--offline"],
            cwd=tmp, check=True, capture_output=True, text=True).stdout)
    pkg = next(p for p in meta["packages"]
               if p["name"] == CRATE and p["version"] == VERSION)
    # …/registry/src/<index>/NAME-V/Cargo.toml → …/registry/cache/<index>/NAME-V.crate
    unpacked = os.path.dirname(pkg["manifest_path"])
    index = os.path.basename(os.path.dirname(unpacked))
    registry = os.path.dirname(os.path.dirname(os.path.dirname(unpacked)))
    archive = os.path.join(registry, "cache", index, f"{CRATE}-{VERSION}.crate")
    with open(archive, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != SHA256:
        fail(f"{archive}: sha256 {digest}, want {SHA256}")
    tmp = src + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name:
                fail(f"{archive}: unexpected member {m.name}")
        t.extractall(tmp)
    os.rename(os.path.join(tmp, f"{CRATE}-{VERSION}"), src)
    os.rmdir(tmp)
    return src


# --- The crate's messages -------------------------------------------------

TOP = {"apiextensions_apiserver": "apiextensions-apiserver",
       "kube_aggregator": "kube-aggregator"}


def parse_crate(root):
    """{package.Struct: [(rust name, number, label, type)]} in declaration
    order, and {(apiVersion, kind): package.Struct} of its Resource impls.
    label: optional, repeated or map; type: a proto scalar or a
    package.Struct (prost's CamelCase of the Go name)."""
    messages, kinds = {}, {}
    for dirpath, _, files in sorted(os.walk(os.path.join(root, "src"))):
        if "mod.rs" not in files:
            continue
        rel = os.path.relpath(dirpath, os.path.join(root, "src")).split(os.sep)
        pkg = [TOP.get(rel[0], rel[0])] + rel[1:]
        text = open(os.path.join(dirpath, "mod.rs")).read()

        def resolve(ty):
            parts = ty.strip().rstrip(",").split("::")
            cur = list(pkg)
            while parts[0] == "super":
                cur, parts = cur[:-1], parts[1:]
            return "/".join(cur + [TOP.get(p, p) for p in parts[:-1]]) + "." + parts[-1]

        for m in re.finditer(r"pub struct (\w+) \{(\}|.*?\n\})", text, re.S):
            name, body = m.group(1), m.group(2)
            body = " ".join(line.strip() for line in body.split("\n")
                            if not line.strip().startswith("///"))
            fields = []
            for fm in re.finditer(r"#\[prost\(([^)]*)\)\]\s*pub (?:r#)?(\w+):\s*([^#]*?),?\s*(?=#\[prost|\}$|$)", body):
                attr, rname, rty = fm.groups()
                rty = re.sub(r"\s+", "", rty).rstrip(",")
                # Older crates' prost writes `tag="1"` and `map="…"` (a
                # HashMap), newer ones `tag = "1"` and `btree_map = "…"`.
                number = int(re.search(r'tag ?= ?"(\d+)"', attr).group(1))
                if re.match(r"(btree_)?map ?=", attr):
                    value = re.search(r'map ?= ?"string, (\w+)"', attr).group(1)
                    if value == "message":
                        value = resolve(re.search(r"(?:BTreeMap|HashMap)<::prost::alloc::string::String,(.*)>$", rty).group(1))
                    fields.append((rname, number, "map", value))
                    continue
                words = [w.strip() for w in attr.split(",")]
                kind = words[0].split("=")[0].strip()
                label = "repeated" if "repeated" in words else "optional"
                if kind == "message":
                    inner = re.sub(r"^(::core::option::Option|::prost::alloc::vec::Vec)<", "", rty)
                    inner = re.sub(r"^::prost::alloc::boxed::Box<", "", inner).rstrip(">")
                    kind = resolve(inner)
                elif kind not in SCALARS:
                    fail(f"{name}.{rname}: proto type {kind}")
                fields.append((rname, number, label, kind))
            messages["/".join(pkg) + "." + name] = fields
        for r in re.finditer(r"impl crate::Resource for (\w+) \{(.*?)\n\}", text, re.S):
            av = re.search(r'API_VERSION: &\'static str = "([^"]*)"', r.group(2)).group(1)
            kind = re.search(r'KIND: &\'static str = "([^"]*)"', r.group(2)).group(1)
            kinds[(av, kind)] = "/".join(pkg) + "." + r.group(1)
    return messages, kinds


def same(json_name, rname):
    """Whether prost's snake-cased field name is the JSON name's: the proto
    name is the JSON name but for case in all but a few fields (uID, $schema,
    x-kubernetes-…)."""
    return json_name.lower().lstrip("$").replace("-", "") == rname.replace("_", "")


# --- The facts ------------------------------------------------------------

def since(words, where):
    """The words but a trailing `since=M` and `until=L` (either, both, or
    neither), and (M, L): 0 for no since, 99 for no until."""
    added, until = 0, 99
    while words and words[-1].split("=", 1)[0] in ("since", "until"):
        key, m = words[-1].split("=", 1)
        if not m.isdigit() or int(m) not in CRATES:
            fail(f"{where}: {words[-1]}?")
        if key == "since":
            added = int(m)
        else:
            until = int(m)
        words = words[:-1]
    if added and until < added:
        fail(f"{where}: until before since")
    return words, added, until


def parse_facts(path, release):
    """schema_v1_36.facts (see its header) as they stand in v1.`release`:
    a kind or field marked `since=M` for a later M, or `until=L` for an
    earlier L, is left out."""
    facts = {"messages": {}, "kinds": {}, "sources": [], "served": []}
    cur = None
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        where = f"{os.path.basename(path)}:{n}"
        words, added, until = since(line.split(), where)
        if words[0] in ("source", "message") and (added or until < 99):
            fail(f"{where}: since= or until= on a {words[0]}")
        if added > release or until < release:
            if words[0] not in ("kind", "served"):
                if cur is None:
                    fail(f"{where}: a field before any message")
                # A field of a later release (the crate may have it: 1.35.0's
                # does for v1.34), or one gone after an earlier one (an
                # older crate may have it): the release does not.
                cur["later"].add(int(words[0]))
            continue
        if words[0] == "source":
            facts["sources"].append(" ".join(words[1:]))
        elif words[0] == "served":
            facts["served"] += words[1].split(",")
        elif words[0] == "kind":
            facts["kinds"][words[1]] = words[2]
        elif words[0] == "message":
            name = words[1]
            cur = {"like": None, "typemeta": False, "new": False, "fields": {},
                   "later": set(), "where": where}
            rest = words[2:]
            while rest:
                if rest[0] == "like":
                    cur["like"], rest = rest[1], rest[2:]
                elif rest[0] in ("typemeta", "new"):
                    cur[rest[0]], rest = True, rest[1:]
                else:
                    fail(f"{where}: {rest[0]}?")
            if name in facts["messages"]:
                fail(f"{where}: {name} twice")
            facts["messages"][name] = cur
        else:
            if cur is None:
                fail(f"{where}: a field before any message")
            number, json_name, card, omit = words[:4]
            if json_name == '""':
                json_name = ""  # an inlined struct's (Go's `json:",inline"`)
            if card not in ("1", "?", "*", "map", "~") or omit not in ("omitempty", "-"):
                fail(f"{where}: {line.strip()!r}")
            opts = dict(w.split("=", 1) for w in words[4:])
            if set(opts) - {"type", "proto", "as"} or "type" in opts and "as" in opts:
                fail(f"{where}: {line.strip()!r}")
            if int(number) in cur["fields"]:
                fail(f"{where}: field {number} twice in force")
            cur["fields"][int(number)] = {
                "json": json_name, "card": card, "omitempty": omit == "omitempty",
                "type": opts.get("type"), "proto": opts.get("proto"),
                "as": opts.get("as"), "where": where}
    for m in facts["messages"].values():
        # A field of another release that this one has otherwise (a
        # pointer since a later one) stays.
        m["later"] -= set(m["fields"])
    return facts


# --- The schema -----------------------------------------------------------

def build(crate, crate_kinds, v120, facts):
    """schema_v1_36.json's {kinds, messages}."""
    old_ci = {k.lower(): k for k in v120["messages"]}
    fact_ci = {k.lower(): k for k in facts["messages"]}
    crate_ci = {k.lower(): k for k in crate}
    # The Go name of each crate struct (prost CamelCases it: HostIp):
    # v1.20's, else the facts'.
    go_name = {c: old_ci.get(c.lower()) or fact_ci.get(c.lower()) for c in crate}

    def type_of(ty, where):
        """The schema type of the crate's proto type `ty`."""
        if ty in SCALARS:
            return SCALARS[ty]
        full = go_name.get(ty) or ty
        for special, t in SPECIAL.items():
            if full.lower() == special.lower():
                return t
        short = full.rsplit(".", 1)[1]
        if short.lower() == ITEMS.lower():
            return "items"
        for union, t in UNIONS.items():
            if short.lower() == union.lower():
                return f"{t}:{full.rsplit('.', 1)[0]}.JSONSchemaProps"
        if not go_name.get(ty):
            fail(f"{where}: no Go name for the crate's {ty} (add a `message` to the facts)")
        return go_name[ty]

    def is_message(t):
        return "/" in t and ":" not in t

    def derived_card(label, ty):
        return {"repeated": "*", "map": "map"}.get(label) or ("?" if ty == "bytes" else None)

    def message(name):
        """The schema entry of the Go struct `name`."""
        old = v120["messages"].get(old_ci.get(name.lower(), ""))
        fact = facts["messages"].get(name) or {
            "like": None, "typemeta": False, "new": False, "fields": {},
            "later": set(), "where": name}
        # Only a message reached is checked: the facts of the messages of
        # kinds a release does not serve (resource.k8s.io/v1 in 1.33) are
        # not its crate's.
        if fact["new"] == (name.lower() in crate_ci):
            fail(f"{fact['where']}: {name} is {'' if fact['new'] else 'not '}in the crate")
        like = None
        if fact["like"]:
            like = v120["messages"].get(fact["like"])
            if like is None:
                fail(f"{fact['where']}: no {fact['like']} in schema.json")
        if old is None and like is None and not fact["fields"] and not fact["typemeta"]:
            fail(f"{name}: a message new since v1.20 with no facts")
        base = old if old is not None else like
        out = [f for f in base if f[1] == 0] if base is not None else []
        if base is None and fact["typemeta"]:
            out += [["kind", 0, "-", "", False], ["apiVersion", 0, "-", "", False]]
        crate_fields = [] if fact["new"] else [
            f for f in crate[crate_ci[name.lower()]] if f[1] not in fact["later"]]
        numbers = {f[1] for f in crate_fields}
        for n, f in fact["fields"].items():
            if (n in numbers) == bool(f["type"]):
                fail(f"{f['where']}: field {n} is {'' if f['type'] else 'not '}in the crate")
        for rname, number, label, ty in crate_fields:
            where = f"{name}.{rname} ({number})"
            derived = derived_card(label, ty)
            prev = next((f for f in (base or []) if f[1] == number), None)
            if prev is not None and old is None and not same(prev[0], rname):
                prev = None  # `like`'s field of that number is another one
            f = fact["fields"].get(number)
            if f is not None:
                if f["proto"] != rname if f["proto"] else not same(f["json"], rname):
                    fail(f"{f['where']}: {f['json']} is not the crate's {rname}")
                if derived and f["card"] != derived or not derived and f["card"] not in ("1", "?", "~"):
                    fail(f"{f['where']}: {f['card']} for a {label} {ty}")
                if f["as"]:
                    # The release's message of the field is another than the
                    # crate's (replaced since: PVC's dataSourceRef).
                    if ty in SCALARS:
                        fail(f"{f['where']}: as= for the crate's {ty}")
                    t = f["as"]
                else:
                    t = type_of(ty, where)
                out.append([f["json"], number, f["card"], t, f["omitempty"]])
            elif prev is not None:
                json_name, card, t = prev[0], prev[2], prev[3]
                if derived and card != derived:
                    fail(f"{where}: v1.20's {card} for a {label} {ty}")
                if json_name and not same(json_name, rname):
                    fail(f"{where}: v1.20 names it {json_name}")
                if is_message(t):
                    # The crate's: a message renamed since v1.20 (Handler).
                    t = type_of(ty, where)
                    if not is_message(t):
                        fail(f"{where}: v1.20's {prev[3]}, the crate's {ty}")
                elif ty in SCALARS and SCALARS[ty] != t:
                    # Else v1.20's: a special type, a union, or a named
                    # slice the crate calls a message (Verbs).
                    fail(f"{where}: v1.20's {t}, the crate's {ty}")
                out.append([json_name, number, card, t, prev[4]])
            else:
                fail(f"{where}: a field added since v1.20 with no facts")
        # Fields the crate lacks, in the order the facts give them; one
        # v1.20 had (a field removed before the crate's release) where
        # v1.20 declared it.
        for number, f in fact["fields"].items():
            if f["type"]:
                field = [f["json"], number, f["card"], f["type"], f["omitempty"]]
                olds = [g[1] for g in old or []]
                if number in olds:
                    before = [g for g in olds[:olds.index(number)] if g]
                    at = max([i + 1 for i, g in enumerate(out) if g[1] in before] or [
                        len([g for g in out if g[1] == 0])])
                    out.insert(at, field)
                else:
                    out.append(field)
        return out

    for (av, kind), c in crate_kinds.items():
        m = facts["kinds"].get(f"{av}/{kind}")
        if m and go_name.get(c) and go_name[c] != m:
            fail(f"{av}/{kind}: the crate's {c} is {go_name[c]}, not {m}")
    messages = {}
    todo = list(facts["kinds"].values())
    while todo:
        name = todo.pop()
        if name in messages:
            continue
        entry = message(name)
        messages[name] = entry
        for f in entry:
            t = f[3].split(":", 1)[1] if ":" in f[3] and not f[3].startswith("unsupported:") else f[3]
            if is_message(t):
                todo.append(t)
    return {"kinds": dict(sorted(facts["kinds"].items())),
            "messages": dict(sorted(messages.items()))}


# --- The check against k8s-openapi ---------------------------------------

# The k8s-openapi each release is checked against: 0.29.0 (the
# workspace's) has modules v1_33 to v1_37, 0.25.0 v1_30 to v1_33 (its v1_33
# has the same fields and resources as 0.29.0's).
OPENAPI_0_29 = ("k8s-openapi", "0.29.0",
                "ab0d13801242174b1f3966907c3f32039f2d6b36c7ce82c61225d66ed5d1eb70")
OPENAPI_0_25 = ("k8s-openapi", "0.25.0",
                "aa60a41b57ae1a0a071af77dbcf89fc9819cfe66edaf2beeb204c34459dcf0b2")
# Older releases, each checked against the newest k8s-openapi with a module
# of it: 0.19.0 (v1_20 to v1_27), 0.20.0 (v1_22 to v1_28), 0.22.0 (v1_24
# to v1_30), 0.24.0 (v1_28 to v1_32), 0.25.0 (v1_30 to v1_33).
OPENAPI_0_19 = ("k8s-openapi", "0.19.0",
                "95578de7d6eac4fba42114bc751e38c59a739968769df1be56feba6f17fd148e")
OPENAPI_0_20 = ("k8s-openapi", "0.20.0",
                "edc3606fd16aca7989db2f84bb25684d0270c6d6fa1dbcd0025af7b4130523a6")
OPENAPI_0_22 = ("k8s-openapi", "0.22.0",
                "19501afb943ae5806548bc3ebd7f3374153ca057a38f480ef30adfde5ef09755")
OPENAPI_0_24 = ("k8s-openapi", "0.24.0",
                "2c75b990324f09bef15e791606b7b7a296d02fc88a344f6eba9390970a870ad5")
OPENAPI = {21: OPENAPI_0_19, 22: OPENAPI_0_20, 23: OPENAPI_0_20,
           24: OPENAPI_0_22, 25: OPENAPI_0_22, 26: OPENAPI_0_22, 27: OPENAPI_0_22,
           28: OPENAPI_0_24, 29: OPENAPI_0_24, 30: OPENAPI_0_25, 31: OPENAPI_0_25,
           32: OPENAPI_0_25,
           33: OPENAPI_0_29, 34: OPENAPI_0_29, 35: OPENAPI_0_29, 36: OPENAPI_0_29}
# JSON names k8s-openapi spells otherwise than `same` expects.
OPENAPI_NAMES = {"$ref": "ref_path"}
# Where v1.36's schema is knowingly not k8s-openapi's v1_36 (the facts
# were read from Go sources older than 1.36.0's, and an object using a
# field the schema lacks is refused, so forwarded): (message, field) the
# schema has and v1_36 has not ("-"), or v1_36 has and the schema has not.
OPENAPI_V1_36: set = set()


# Messages k8s-openapi names otherwise in a release: v1.21's and v1.22's
# Handler, which 1.23 split into LifecycleHandler and ProbeHandler of the
# same fields (the schemas name them so in every release: the name is no
# part of the protobuf).
OPENAPI_RENAMED = {(m, n): "api/core/v1.Handler" for n in (21, 22)
                   for m in ("api/core/v1.LifecycleHandler", "api/core/v1.ProbeHandler")}


# Kinds every release's schema has that k8s-openapi has no resource of
# (not served as resources: reviews, internal and metadata-only objects),
# and resources of the group versions served that no schema writes.
KINDS_NOT_IN_OPENAPI = {
    "apiextensions.k8s.io/v1/ConversionReview", "meta.k8s.io/v1/PartialObjectMetadata",
    "v1/PodStatusResult", "v1/RangeAllocation", "v1/SerializedReference"}
OPENAPI_KINDS_NOT_WRITTEN = {
    "v1/APIGroupList", "v1/APIResourceList", "v1/ComponentStatus", "v1/Status"}
# Those of betas served until a release (the last one).
KINDS_NOT_IN_OPENAPI_UNTIL = {"apiextensions.k8s.io/v1beta1/ConversionReview": 21}
OPENAPI_KINDS_NOT_WRITTEN_UNTIL = {"policy/v1beta1/Eviction": 21}
# And those of a release on (k8s-openapi's v1_21 has no policy/v1 Eviction).
OPENAPI_KINDS_NOT_WRITTEN_SINCE = {"policy/v1/Eviction": 22}
# Messages of one Go type under two names: 1.28's admissionregistration
# v1beta1 Rule and RuleWithOperations are Go aliases of v1's (the crate's
# v1beta1 webhooks hold v1's), 1.21's were their own structs of the same
# fields and tags.
SAME_TYPES = {"api/admissionregistration/v1beta1.RuleWithOperations":
              "api/admissionregistration/v1.RuleWithOperations"}


def parse_openapi_kinds(root, release):
    """{apiVersion/kind} of the resources of k8s-openapi's module v1_<release>."""
    out = set()
    for dirpath, _, files in os.walk(os.path.join(root, "src", f"v1_{release}")):
        for f in files:
            text = open(os.path.join(dirpath, f)).read()
            for r in re.finditer(r"impl crate::Resource for (\w+) \{(.*?)\n\}", text, re.S):
                av = re.search(r'API_VERSION: &\'static str = "([^"]*)"', r.group(2)).group(1)
                kind = re.search(r'KIND: &\'static str = "([^"]*)"', r.group(2)).group(1)
                out.add(f"{av}/{kind}")
    return out


def check_openapi_kinds(schema, kinds, release, served):
    """Fails unless the schema's kinds (but lists, options, watch events
    and statuses) are k8s-openapi's resources of the group versions the
    release serves (the facts'), but for the known exceptions."""
    ours = {k for k in schema["kinds"]
            if not re.search(r"(Options|WatchEvent|List|Status)$", k)}
    if {k.rsplit("/", 1)[0] for k in schema["kinds"]} - set(served):
        fail(f"v1.{release}'s kinds of group versions not served")
    theirs = {k for k in kinds if k.rsplit("/", 1)[0] in served}
    not_in = KINDS_NOT_IN_OPENAPI | {
        k for k, last in KINDS_NOT_IN_OPENAPI_UNTIL.items() if release <= last}
    not_written = OPENAPI_KINDS_NOT_WRITTEN | {
        k for k, last in OPENAPI_KINDS_NOT_WRITTEN_UNTIL.items() if release <= last} | {
        k for k, first in OPENAPI_KINDS_NOT_WRITTEN_SINCE.items() if release >= first}
    if ours - theirs != not_in or theirs - ours != not_written:
        fail(f"v1.{release}'s kinds are not k8s-openapi's v1_{release}: "
             f"{sorted((ours - theirs) ^ not_in)} "
             f"{sorted((theirs - ours) ^ not_written)}")


def parse_openapi(root, release):
    """{package.Struct: {field}} of k8s-openapi's module v1_<release>."""
    base = os.path.join(root, "src", f"v1_{release}")
    out = {}
    for dirpath, _, files in sorted(os.walk(base)):
        rel = os.path.relpath(dirpath, base).split(os.sep)
        pkg = "/".join([TOP.get(rel[0], rel[0])] + rel[1:])
        for f in files:
            if f == "mod.rs" or not f.endswith(".rs"):
                continue
            m = re.search(r"^pub struct (\w+) \{(.*?)^\}", open(os.path.join(dirpath, f)).read(), re.S | re.M)
            if m:
                fields = {}
                for fm in re.finditer(r"^\s*pub (?:r#)?(\w+):(.*)$", m.group(2), re.M):
                    # The struct a field holds (the last crate:: path of its
                    # type: a map's or a vector's items), as a schema name.
                    ty = re.findall(r"crate::((?:\w+::)+)(\w+)", fm.group(2))
                    fields[fm.group(1)] = "/".join(
                        TOP.get(p, p) for p in ty[-1][0].split("::")[:-1]) + "." + ty[-1][1] if ty else None
                out[f"{pkg}.{m.group(1)}"] = fields
    return out


def check_openapi(schema, openapi, release):
    """Fails unless each message of `schema` that k8s-openapi's v1_<release>
    has a struct of has its fields."""
    msgs = schema["messages"]

    def keys(name, skips, depth=0):
        """Its JSON keys; with `skips`, TypeMeta's too (k8s-openapi has
        them as fields of a struct that is not a kind's)."""
        out = []
        for json_name, number, _, ty, _ in msgs[name]:
            if number == 0 and not skips:
                continue
            if json_name == "" and depth < 8:
                out += keys(ty, skips, depth + 1)  # an inlined struct's keys
            else:
                out.append(json_name)
        return out

    def renamed(name):
        """k8s-openapi's name of the message `name` in this release."""
        return OPENAPI_RENAMED.get((name, release), name)

    problems = []
    for name in msgs:
        theirs = openapi.get(renamed(name))
        if theirs is None:
            continue
        # A field holding a message holds k8s-openapi's struct of it (a
        # type replaced between releases: PVC's dataSourceRef).
        for json_name, number, _, ty, _ in msgs[name]:
            if not json_name or "/" not in ty or ":" in ty:
                continue
            held = [theirs[t] for t in theirs if same(json_name, t)]
            if held and held[0] and SAME_TYPES.get(held[0], held[0]).lower() != renamed(ty).lower():
                problems.append((name, f"{json_name}:{held[0]}"))
        extra = {o for o in keys(name, False) if not any(
            OPENAPI_NAMES.get(o) == t or same(o, t) for t in theirs)}
        missing = {t for t in theirs if not any(
            OPENAPI_NAMES.get(o) == t or same(o, t) for o in keys(name, True))}
        for what in [(name, "-" + o) for o in extra] + [(name, t) for t in missing]:
            if release == 36 and what in OPENAPI_V1_36:
                continue
            problems.append(what)
    if problems:
        fail(f"v1.{release} is not k8s-openapi's v1_{release}: " +
             ", ".join(f"{m} {f}" for m, f in sorted(problems)))


def main():
    args = sys.argv[1:]
    check = "--check" in args
    release = 36
    if "--release" in args:
        i = args.index("--release")
        if i + 1 >= len(args) or not args[i + 1].isdigit() or int(args[i + 1]) not in CRATES:
            fail(f"--release takes one of {sorted(CRATES)}")
        release = int(args[i + 1])
    root = fetch_crate(CRATE, *CRATES[release])
    crate, crate_kinds = parse_crate(root)
    v120 = json.load(open(os.path.join(HERE, "schema.json")))
    facts = parse_facts(os.path.join(HERE, "schema_v1_36.facts"), release)
    # Kinds: v1.20's in the group versions served, and the facts'.
    kinds = {k: m for k, m in v120["kinds"].items()
             if k.rsplit("/", 1)[0] in facts["served"]}
    for k, m in facts["kinds"].items():
        if m == "-":
            kinds.pop(k, None)  # (not served in every release)
        else:
            kinds[k] = m
    facts["kinds"] = kinds
    schema = build(crate, crate_kinds, v120, facts)
    openapi = fetch_crate(*OPENAPI[release])
    check_openapi(schema, parse_openapi(openapi, release), release)
    check_openapi_kinds(schema, parse_openapi_kinds(openapi, release), release, facts["served"])
    text = json.dumps(schema, separators=(",", ":")) + "\n"
    path = os.path.join(HERE, f"schema_v1_{release}.json")
    if check:
        if open(path).read() != text:
            fail(f"{path} is not what the facts and the crate make: rerun without --check")
        return
    with open(path + ".new", "w") as f:
        f.write(text)
    os.rename(path + ".new", path)


if __name__ == "__main__":
    main()
