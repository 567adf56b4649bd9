#!/usr/bin/env python3
"""Regenerates columns_v1_35.json … columns_v1_21.json: Table column
definitions as kube-apiserver v1.35 to v1.21 serve them, for the printers
whose every column can be derived. Usage, from the repository's root:

    src/encode/print/columns_v1_32_to_35.py 35 > src/encode/print/columns_v1_35.json
    src/encode/print/columns_v1_32_to_35.py 34 > src/encode/print/columns_v1_34.json
    src/encode/print/columns_v1_32_to_35.py 33 > src/encode/print/columns_v1_33.json
    src/encode/print/columns_v1_32_to_35.py 32 > src/encode/print/columns_v1_32.json
    src/encode/print/columns_v1_32_to_35.py 31 > src/encode/print/columns_v1_31.json
    src/encode/print/columns_v1_32_to_35.py 30 > src/encode/print/columns_v1_30.json
    src/encode/print/columns_v1_32_to_35.py 29 > src/encode/print/columns_v1_29.json
    src/encode/print/columns_v1_32_to_35.py 28 > src/encode/print/columns_v1_28.json
    src/encode/print/columns_v1_32_to_35.py 27 > src/encode/print/columns_v1_27.json
    src/encode/print/columns_v1_32_to_35.py 26 > src/encode/print/columns_v1_26.json
    src/encode/print/columns_v1_32_to_35.py 25 > src/encode/print/columns_v1_25.json
    src/encode/print/columns_v1_32_to_35.py 24 > src/encode/print/columns_v1_24.json
    src/encode/print/columns_v1_32_to_35.py 23 > src/encode/print/columns_v1_23.json
    src/encode/print/columns_v1_32_to_35.py 22 > src/encode/print/columns_v1_22.json
    src/encode/print/columns_v1_32_to_35.py 21 > src/encode/print/columns_v1_21.json
    src/encode/print/columns_v1_32_to_35.py --check   # fails if any file differs

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
- A printer with a column whose source is a type 1.33 to 1.35 do not serve
  (extensions/v1beta1's deployments, replica sets and daemon sets,
  batch/v1beta1's cron jobs, autoscaling/v2beta1's HPAs, discovery/v1beta1's
  endpoint slices, rbac/v1beta1's role bindings) has those texts from
  dated copies of the types (OLD_API_DOCS): 21 of its 28 columns read as
  v1.36.2's recording does, 7 differ. Their rows are v1.36's: both
  printers.go copies read (1baf7abe and 212194ab) print them identically,
  character for character, and 1.36's one change to them (#136100) is
  their descriptions' sources.

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

v1.32 (no recording either) is v1.33 less what 1.33 changed. Goend/
kubernetes@247a91cd is 1.32's printers.go (resource.k8s.io/v1beta1,
coordination v1alpha2, MutatingAdmissionPolicy printers and priority
classes' PreemptionPolicy, #126529, all 1.32; none of CHANGELOG-1.33's
printer changes) but for a local edit of its pod printer; its column
definitions differ from yongruilin's 144a7980 (early 1.33 development)
only by resource quotas' Age, which #129419 (opened after v1.32.0, release
note NONE) moved last: v1.32 prints Name, Age, Request, Limit, as v1.20
does (V1_32_COLUMNS; the row likewise, printers/policy.rs). 1.32 served
neither networking.k8s.io/v1's IP addresses and service CIDRs (GA in
1.33) nor certificates v1beta1's cluster trust bundles (#128499, 1.33):
left out. Descriptions are 1.32's API docs, k8s-openapi 0.25.0's v1_32
(the crate's older layout, read by columns_v1_36_openapi.parse_builder,
which reads 0.25.0's v1_33 exactly as 0.29.0's is read: 626 definitions,
3,121 texts, every one the same), but for the printers reading unserved API versions:
extensions/v1beta1's texts at 1.32 are k8s.io/api v0.32.1's
(kubeadapt/kubeadapt-k8s-pulse@2d3917ec vendors it; its `#` in URLs,
scrubbed there, restored as v1.20's recorded texts have them), before
#128546's "non-terminating" wording (EXTENSIONS_V1_32: all but replica
sets' Current read as v1.20 recorded them, whose "oberved" was fixed
since); batch/v1beta1, autoscaling/v2beta1, discovery/v1beta1 and
rbac/v1beta1 read as at 1.33 (the same in v0.32.1's copies).

v1.31 (no recording either) is v1.32 less what 1.32 changed.
stlaz/kubernetes@fa39e2a1 is 1.31's printers.go (pods' terminal-phase
guard, #122038, and the nil-safe sidecar check, #124906, both 1.31;
resource.k8s.io v1alpha3 and coordination v1alpha1; none of 1.32's), and
read whole against Goend's 247a91cd it differs, for types served by
default, only by priority classes' PreemptionPolicy column (#126529,
CHANGELOG-1.32), which 1.31 does not print (V1_31_COLUMNS; the row
likewise); the rest are alpha printers (MutatingAdmissionPolicy, DRA,
lease candidates) and import paths. Descriptions are k8s-openapi 0.25.0's
v1_31; the printers reading unserved API versions read as at 1.32: the
served twins of extensions/v1beta1's and batch/v1beta1's types
(apps/v1's Deployment, ReplicaSet and DaemonSet, batch/v1's CronJob) have
the same texts in v1_31 as in v1_32, autoscaling/v2beta1's have not
changed since about 1.16, discovery/v1beta1's and rbac/v1beta1's are the
same from about 1.20 to 1.35.

v1.30 (no recording either) has v1.31's columns, with 1.30's API docs
(k8s-openapi 0.25.0's v1_30): ivanvc/kubernetes@16caa9ec, 1.30's
development (jobs' Status #123226, cron jobs' Timezone #122231, HPA targets
naming their metric #122804, flowcontrol v1, PV/PVC VolumeAttributesClass;
none of 1.31's changes), read whole against stlaz's fa39e2a1 differs, for
types served by default, only by a row: a deleted pod in a terminal phase
is still "Terminating" (#122038 is 1.31's; printers/core.rs). The copy is
from just before 1.30's code freeze; the printer changes CHANGELOG-1.30
lists after it are alpha printers (StorageVersionMigration, #123344).

v1.29 (no recording either) is v1.30 less what 1.30 changed:
iscas-fork/kubernetes@c6446be5 has 1.29's printers (flowcontrol v1
#121089 and the ServiceCIDR printer #116516, both in CHANGELOG-1.29's
v1.29.0; none of 1.30's), and read whole against ivanvc's 16caa9ec it
differs, but for its own import aliases, only by CHANGELOG-1.30's three
printer changes: jobs' Status column (#123226) and cron jobs' Timezone
column (#122231), left out here (V1_29_COLUMNS; the rows likewise), and
HPA targets naming their metric (#122804: a row). Its PV and PVC printers
have the VolumeAttributesClass column, as every copy with that API (alpha
in 1.29, #121104, merged at 1.29's code freeze, release note NONE) has;
no PR adding the column apart from it was found. Descriptions are
k8s-openapi 0.24.0's v1_29.

v1.28 (no recording either) is v1.29 less what 1.29 changed. Two copies
on release-1.28 agree: yylt/kubernetes@7ca6f88a (a fork whose
kube_features.go has SidecarContainers "alpha: v1.28" and no 1.29 gate;
its pod printer locally reverted to an integer Restarts, not used) and
yangsoon/apiserver@68d65c56 (k8s.io/* pinned at v0.28.6; its printPod
line for line that of aojea/kubernetes@5c75e9e9, a later working copy
read whole against iscas-fork's c6446be5). 1.28's printPod is 1.29's
(the sidecar counting of #116429, the restarts guard, the Initialized
condition). Against 1.29 it lacks: PVs' and PVCs' VolumeAttributesClass
column (#121104, 1.29; V1_28_COLUMNS, the rows likewise), flowcontrol v1
(#121089, 1.29): its flow schemas and priority levels are served at
v1beta3 and v1beta2, printed with v1beta3's docs (V1_28_FLOWCONTROL: the
v1 printers' columns, their descriptions v1beta3's; a v1beta2 priority
level's shares are its assuredConcurrencyShares, as the conversion to the
internal type makes them), and the alpha ServiceCIDR and
VolumeAttributesClass printers (not served by default). It has the
alpha ClusterCIDR printer (networking v1alpha1, removed by #121229 in
1.29; not served by default, so not printed here). Descriptions are
k8s-openapi 0.24.0's v1_28.

v1.27 (no recording either) has v1.28's columns, with 1.27's API docs
(k8s-openapi 0.22.0's v1_27). No copy pinned to 1.27 was found; four
were read whole, their lengths accounting for every difference:
sanposhiho/kubernetes@059ce4e8 (June 2023, its go.mod's kube-openapi is
the one CHANGELOG-1.28's v1.28.0-alpha.2 bumps to) differs from 1.28's
only by #116429 (sidecars in printPod) and #119215 (admission policy
bindings' ParamRef cell, v1alpha1 in 1.27, not served by default), both
1.28's; pohly/kubernetes@120fe8a8 (mid-March 2023, around 1.27's branch)
differs from it only by three printers CHANGELOG-1.27 lists (cluster
trust bundles #113218, IP addresses #115075, DRA v1alpha2 #116299), all
alpha. So 1.27's pods print without sidecars: no restartable init
container counted, restarts from the containers alone once initialized
(the last restart's age still the latest of all), and "0 (5m ago)"
possible (no restarts guard), as printers/core.rs says.

v1.26 (no recording either) has v1.27's columns but for cluster trust
bundles (certificates v1alpha1, #113218, 1.27; V1_26_LEFT_OUT), with
1.26's API docs (k8s-openapi 0.22.0's v1_26), and v1.27's rows. A helper
read ahmedtd/kubernetes@4a52a06c (1.26 development, before #113274),
igusher/kubernetes@cdeefb60 (after the DRA merge, the pod security
policy printer still registered) and pohly's 120fe8a8 whole, their
lengths accounting for every character: between 4a52a06c and 120fe8a8
the printers of types served by default changed only by pods'
SchedulingGated reason (#113274, KEP-3521, 1.26); the rest are alpha
printers (cluster trust bundles, IP addresses and DRA v1alpha2, all
CHANGELOG-1.27's; admission policies, new in 1.26 at v1alpha1), the
removal of the pod security policy printer (an API not served since
1.25) and output-neutral edits. So 1.26 prints served types as 1.27
does, whichever side of that window its branch was cut.

v1.25 (no recording either) is v1.26 less what 1.26 changed, dated by
CHANGELOG-1.26: pods' SchedulingGated reason (#113274; printers/core.rs),
flowcontrol v1beta3 and the NominalConcurrencyShares it renamed (#112306):
1.25 serves flow schemas and priority levels at v1beta1 and v1beta2,
described from v1beta2's docs, a priority level's shares column
AssuredConcurrencyShares (V1_25_FLOWCONTROL; its text SwaggerDoc's, cut at
the comment's "---", which reproduces v1.20's recorded one exactly), and
the alpha admission policy (#112883) and DRA (#111023) printers. A helper
read hj-johannes-lee/kubernetes@43767baa (master of late March to
mid-April 2022: its ClusterCIDRConfig printer came with #108290 and went
with #109436) and ahmedtd's 4a52a06c whole, lengths accounting for every
character: between them the printers of types served by default changed
only by #112306 and output-neutral edits (#110408, 1.25's cell types; an
endpoints formatter rewritten; ClusterCIDR renames, alpha). No copy pinned
to 1.25 was found. extensions/v1beta1's replica sets' Current still reads
"oberved" at 1.25 (EXTENSIONS_V1_25): its served twin has the typo at 1.25
and not at 1.26, as v1.20's recorded text has it. Descriptions are
k8s-openapi 0.22.0's v1_25.

v1.24 (no recording either) prints as v1.25 for the types printed here,
with 1.24's API docs (k8s-openapi 0.22.0's v1_24: every text these
columns read is the same as v1_25's). hj-johannes-lee/kubernetes@43767baa
is from within 1.24's code freeze (after #108290 merged, before #109436
reverted it on 2022-04-12; master took only v1.24 milestone work until
v1.24.0), so no 1.25 change is in it, and read against 1.25's it differs
by CHANGELOG-1.25's #110408 (int64 cells: the same JSON; in 1.24.3 too)
and #109090 (the alpha ClusterCIDR printer) alone. Types 1.24 serves and
1.25 does not (pod security policies, batch/v1beta1 cron jobs,
autoscaling/v2beta1 and discovery/v1beta1) have no columns here: their
Tables are forwarded.

v1.23 (no recording) prints as v1.24 but for CHANGELOG-1.24's printer
changes: storage.k8s.io/v1 CSI storage capacities are 1.24's (#108445,
which also ungated CSI drivers' StorageCapacity column, on by default in
1.23: the same output), a deployment's selector that does not convert
fails 1.23's Table (#107559: its cell, not its columns), and subresources
print Tables from 1.24 (#103516; kubecache forwards subresources). Events
are left out: #105009 (a series' count without the +1, release note NONE)
is in every copy from January 2022 on and not in enj/kubernetes@126873a4,
and whether it merged before 1.23's code freeze is not established.
Descriptions are 1.23's API docs (k8s-openapi 0.20.0's v1_23): a PV's and
a PVC's fields, a service account's Secrets and a node's runtime version
read as 1.23 wrote them. enj@126873a4 (July to October 2021) and
haoruan/kubernetes@17d66376 (January to March 2022) were read whole, and
against hj-johannes-lee@43767baa (1.24) their lengths differ by the dated
changes alone.

v1.22 prints as v1.23 but for what 1.23 added: flowcontrol v1beta2
(#104399) and autoscaling/v2 (#102534) are not served, and an event
series' count is one more (#105009 came after v1.22.0). Descriptions are
k8s-openapi 0.20.0's v1_22. The copy is enj@126873a4 with #103001 (the
CSI drivers' token columns ungated; the gate is GA and on in 1.22), as
nikhita/kubernetes@8f795ed9 has it.

v1.21 prints as v1.22 but for 1.22's pods' Restarts (#100142, CHANGELOG-
1.22: an integer, v1.20's column and printer) and a CSR's
RequestedDuration (#99494; CSRs are forwarded in every release here).
CSI drivers print 8 columns: CSIStorageCapacity and
CSIServiceAccountToken were beta and on by default in 1.21 (#99641,
#99298). Descriptions are k8s-openapi 0.19.0's v1_21. tiloso/kubernetes@
541e7186 is enj@126873a4 less #100142 and #99494, by length exactly.
Types 1.21 serves and 1.22 does not (the 15 v1beta1 resources 1.22
removed) have no columns here: their Tables are forwarded.

The served twins' texts of the fields printed from extensions/v1beta1 and
batch/v1beta1 (check_twin) are checked the same in each release's docs as
in v1.32's, the release whose texts of those types were read from a copy
of them.

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
sys.path.insert(0, os.path.join(HERE, "..", "protobuf"))
import columns_v1_36_derived as derived  # noqa: E402
from columns_v1_36_openapi import parse as parse_openapi  # noqa: E402
import schema_v1_36 as protobuf_schema  # noqa: E402  (its pinned crates)


def out_file(minor):
    return os.path.join(HERE, f"columns_v1_{minor}.json")




DOCS = {}


# The pinned k8s-openapi crate whose src/v1_<minor> holds each release's
# docs, by the newest release read from it; from 1.33 the workspace's
# 0.29.0 (columns_v1_36_derived.k8s_openapi).
OPENAPI_CRATES = [(21, "OPENAPI_0_19"), (23, "OPENAPI_0_20"), (27, "OPENAPI_0_22"),
                  (29, "OPENAPI_0_24"), (32, "OPENAPI_0_25")]


def openapi_crate(minor):
    """The (name, version, sha256) of the crate read for 1.`minor`, or
    None for the workspace's."""
    return next((getattr(protobuf_schema, c) for newest, c in OPENAPI_CRATES
                 if minor <= newest), None)


def openapi_version(minor):
    """The k8s-openapi release whose src/v1_<minor> is read (openapi_root)."""
    crate = openapi_crate(minor)
    return crate[1] if crate else "0.29.0"


def openapi_root(minor):
    """src/v1_<minor> of the k8s-openapi crate holding that release's docs."""
    crate = openapi_crate(minor)
    if crate is None:
        return derived.k8s_openapi(f"v1_{minor}")
    return os.path.join(protobuf_schema.fetch_crate(*crate), "src", f"v1_{minor}")


# The served twins of the unserved types whose texts the printers of
# releases older than 1.32 read as v1.32's (extensions/v1beta1's and
# batch/v1beta1's, whose comments were changed with their twins'): each
# field a release prints must read in its docs as in v1.32's.
TWIN_PREFIX = {"extensions/v1beta1 ": "io.k8s.api.apps.v1.",
               "batch/v1beta1 ": "io.k8s.api.batch.v1."}


def check_twin(field, minor):
    """Fails unless `field` (an OLD_API_DOCS source), printed at 1.`minor`,
    has a served twin that reads there as at 1.32 (or none: the texts of
    autoscaling/v2beta1, discovery/v1beta1 and rbac/v1beta1 did not change
    in these releases, see OLD_API_DOCS)."""
    prefix = next((p for p in TWIN_PREFIX if field.startswith(p)), None)
    if minor >= 32 or prefix is None:
        return
    definition, name = field[len(prefix):].split(".")
    twin = TWIN_PREFIX[prefix] + definition
    for minor_ in (minor, 32):
        if minor_ not in DOCS:
            DOCS[minor_] = parse_openapi(openapi_root(minor_))
    if minor <= 22 and prefix == "extensions/v1beta1 ":
        # v1.20's recorded text is printed (old_api_sources): the twin must
        # read at this release as at 1.20 (a type's versions are
        # documented together: 1.23 reworded apps/v1's numberReady).
        for minor_ in (minor, 20):
            if minor_ not in DOCS:
                DOCS[minor_] = parse_openapi(openapi_root(minor_))
        if DOCS[minor][twin].get(name) != DOCS[20][twin].get(name):
            raise SystemExit(f"{twin}.{name}'s docs at 1.{minor} are not 1.20's")
        return
    older = EXTENSIONS_V1_25.get(f"{definition}.{name}") if minor <= 25 else None
    if older is not None:
        # The older text printed: the twin must read so at that release.
        if DOCS[minor][twin].get(name) != older:
            raise SystemExit(f"{twin}.{name}'s docs at 1.{minor} are not EXTENSIONS_V1_25's")
        return
    if DOCS[minor][twin].get(name) != DOCS[32][twin].get(name):
        raise SystemExit(f"{twin}.{name}'s docs at 1.{minor} are not 1.32's: "
                         f"its unserved twin's may differ")


def describe(spec, minor):
    """A description at 1.`minor`, from its release's API docs."""
    if minor not in DOCS:
        DOCS[minor] = parse_openapi(openapi_root(minor))
    docs = DOCS[minor]
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
    # SwaggerDoc()'s text has no trailing newline (fmtRawDoc trims it).
    # The OpenAPI texts of enum fields from 1.24 to 1.26 end in "\n\n":
    # what stood before the "Possible enum values" list, which kube-openapi
    # adds and k8s-openapi cut.
    text = texts.pop().rstrip("\n")
    if kind == "swagger":
        # SwaggerDoc()'s text, which apimachinery's fmtRawDoc cuts at the
        # first "---" of the comment (the OpenAPI text goes on); v1.20's
        # recorded AssuredConcurrencyShares is exactly that cut.
        return text.split("---")[0]
    return text


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
# Printers whose descriptions 1.33 to 1.35 read from API versions those
# releases do not serve, so their OpenAPI documents lack the texts:
# printers.go at 1.33 (mortent/kubernetes@1baf7abe) and 1.35's development
# (michaelasp/kubernetes@212194ab) describe deployments, replica sets and
# daemon sets from extensions/v1beta1, cron jobs from batch/v1beta1, HPAs
# (v1 and v2: one printer) from autoscaling/v2beta1, endpoint slices from
# discovery/v1beta1 and role bindings from rbac/v1beta1. Their move to the
# served versions is kubernetes/kubernetes#136100 ("Remove dead api",
# opened 2026-01-08, after v1.35.0): 1.36 only (and v1.36.2 still reads
# rbac/v1beta1, whose text lacks rbac/v1's " This field is immutable.").
# The texts, as SwaggerDoc() renders those types' comments, are the same
# in stored copies of k8s.io/api from before v1.33.0 (yongruilin/kubernetes
# @571c3d28, after #128546's "non-terminating" wording) to after v1.35.0
# (kubernetes/api@426b1b99 and @aba12d41; batch: liggitt/kubernetes
# @94640da1; autoscaling/v2beta1, frozen since about 1.16, only from
# below: k8s.io/api v0.32 vendored in kubeadapt/kubeadapt-k8s-pulse
# @2d3917ec). Each entry: (the old type's field, its text); None where
# the text is the one v1.36.2 was recorded with, which the build checks.
OLD_API_DOCS = {
    "apps/v1/deployments": {
        "Up-to-date": ("extensions/v1beta1 DeploymentStatus.updatedReplicas", None),
        "Available": ("extensions/v1beta1 DeploymentStatus.availableReplicas", None),
        "Selector": ("extensions/v1beta1 DeploymentSpec.selector",
                     "Label selector for pods. Existing ReplicaSets whose pods are selected by this "
                     "will be the ones affected by this deployment."),
    },
    "apps/v1/replicasets": {
        "Desired": ("extensions/v1beta1 ReplicaSetSpec.replicas", None),
        "Current": ("extensions/v1beta1 ReplicaSetStatus.replicas", None),
        "Ready": ("extensions/v1beta1 ReplicaSetStatus.readyReplicas", None),
        "Selector": ("extensions/v1beta1 ReplicaSetSpec.selector",
                     "Selector is a label query over pods that should match the replica count. If "
                     "the selector is empty, it is defaulted to the labels present on the pod "
                     "template. Label keys and values that must match in order to be controlled by "
                     "this replica set. More info: https://kubernetes.io/docs/concepts/overview/"
                     "working-with-objects/labels/#label-selectors"),
    },
    "apps/v1/daemonsets": {
        "Desired": ("extensions/v1beta1 DaemonSetStatus.desiredNumberScheduled", None),
        "Current": ("extensions/v1beta1 DaemonSetStatus.currentNumberScheduled", None),
        "Ready": ("extensions/v1beta1 DaemonSetStatus.numberReady",
                  "The number of nodes that should be running the daemon pod and have one or more "
                  "of the daemon pod running and ready."),
        "Up-to-date": ("extensions/v1beta1 DaemonSetStatus.updatedNumberScheduled", None),
        "Available": ("extensions/v1beta1 DaemonSetStatus.numberAvailable", None),
        "Selector": ("extensions/v1beta1 DaemonSetSpec.selector",
                     "A label query over pods that are managed by the daemon set. Must match in "
                     "order to be controlled. If empty, defaulted to labels on Pod template. More "
                     "info: https://kubernetes.io/docs/concepts/overview/working-with-objects/"
                     "labels/#label-selectors"),
    },
    "batch/v1/cronjobs": {
        "Schedule": ("batch/v1beta1 CronJobSpec.schedule", None),
        "Timezone": ("batch/v1beta1 CronJobSpec.timeZone", None),
        "Suspend": ("batch/v1beta1 CronJobSpec.suspend", None),
        "Active": ("batch/v1beta1 CronJobStatus.active", None),
        "Last Schedule": ("batch/v1beta1 CronJobStatus.lastScheduleTime", None),
    },
    "autoscaling/v2/horizontalpodautoscalers": {
        "Reference": ("autoscaling/v2beta1 HorizontalPodAutoscalerSpec.scaleTargetRef", None),
        "Targets": ("autoscaling/v2beta1 HorizontalPodAutoscalerSpec.metrics",
                    "metrics contains the specifications for which to use to calculate the "
                    "desired replica count (the maximum replica count across all metrics will be "
                    "used).  The desired replica count is calculated multiplying the ratio "
                    "between the target value and the current value by the current number of "
                    "pods.  Ergo, metrics used must decrease as the pod count is increased, and "
                    "vice-versa.  See the individual metric source types for more information "
                    "about how each type of metric must respond."),
        "MinPods": ("autoscaling/v2beta1 HorizontalPodAutoscalerSpec.minReplicas", None),
        "MaxPods": ("autoscaling/v2beta1 HorizontalPodAutoscalerSpec.maxReplicas", None),
        "Replicas": ("autoscaling/v2beta1 HorizontalPodAutoscalerStatus.currentReplicas", None),
    },
    "discovery.k8s.io/v1/endpointslices": {
        "AddressType": ("discovery/v1beta1 EndpointSlice.addressType",
                        "addressType specifies the type of address carried by this "
                        "EndpointSlice. All addresses in this slice must be the same type. This "
                        "field is immutable after creation. The following address types are "
                        "currently supported: * IPv4: Represents an IPv4 Address. * IPv6: "
                        "Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain "
                        "Name."),
        "Ports": ("discovery/v1beta1 EndpointSlice.ports",
                  "ports specifies the list of network ports exposed by each endpoint in this "
                  "slice. Each port must have a unique name. When ports is empty, it indicates "
                  "that there are no defined ports. When a port is defined with a nil port "
                  "value, it indicates \"all ports\". Each slice may include a maximum of 100 "
                  "ports."),
        "Endpoints": ("discovery/v1beta1 EndpointSlice.endpoints", None),
    },
    "rbac.authorization.k8s.io/v1/rolebindings": {
        "Role": ("rbac/v1beta1 RoleBinding.roleRef", None),
    },
    "rbac.authorization.k8s.io/v1/clusterrolebindings": {
        "Role": ("rbac/v1beta1 ClusterRoleBinding.roleRef", None),
    },
}
OLD_API_DOCS["autoscaling/v1/horizontalpodautoscalers"] = OLD_API_DOCS[
    "autoscaling/v2/horizontalpodautoscalers"]


# extensions/v1beta1 at 1.32 (k8s.io/api v0.32.1), before #128546 (1.33),
# where its text is not 1.33's.
EXTENSIONS_V1_32 = {
    "DeploymentStatus.updatedReplicas":
        "Total number of non-terminated pods targeted by this deployment that have the "
        "desired template spec.",
    "DeploymentStatus.availableReplicas":
        "Total number of available pods (ready for at least minReadySeconds) targeted by "
        "this deployment.",
    "ReplicaSetSpec.replicas":
        "Replicas is the number of desired replicas. This is a pointer to distinguish between "
        "explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/"
        "concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller",
    "ReplicaSetStatus.replicas":
        "Replicas is the most recently observed number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
        "#what-is-a-replicationcontroller",
    "ReplicaSetStatus.readyReplicas": "The number of ready replicas for this replica set.",
}

# extensions/v1beta1 before 1.26, where its text is not 1.32's: the typo
# "oberved" that v1.20's recorded replica sets' Current has, which apps/v1
# (its served twin, fixed with it) still has at 1.25 and not at 1.26.
EXTENSIONS_V1_25 = {
    "ReplicaSetStatus.replicas":
        "Replicas is the most recently oberved number of replicas. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/"
        "#what-is-a-replicationcontroller",
}


V1_20_RECORDED = json.load(open(os.path.join(HERE, "columns.json"), encoding="utf-8"))


def old_api_sources(gvr, cols, minor):
    """The literal each OLD_API_DOCS column is described with; a text
    left None must be one v1.36.2 was recorded with (columns_v1_36.json
    holds it, and names the recording as its source). At 1.32,
    extensions/v1beta1's own texts where they differ."""
    recorded = {c["name"]: c["description"] for c in cols}
    out = {}
    for name, (field, text) in OLD_API_DOCS[gvr].items():
        if text is None:
            text = recorded[name]
        elif text == recorded[name]:
            raise SystemExit(f"{gvr} {name}: {field}'s text is v1.36's; write None")
        if minor <= 32 and field.startswith("extensions/v1beta1 "):
            text = EXTENSIONS_V1_32.get(field.split(" ", 1)[1], text)
        if minor <= 25 and field.startswith("extensions/v1beta1 "):
            text = EXTENSIONS_V1_25.get(field.split(" ", 1)[1], text)
        if minor <= 22 and field.startswith("extensions/v1beta1 "):
            # As the v1.20 apiserver was recorded describing it (check_twin).
            text = next(c["description"] for c in V1_20_RECORDED["printed"][gvr]
                        if c["name"] == name)
        out[name] = derived.lit(text)
    return out


# What 1.33 changed, undone for 1.32: resource quotas' Age back after the
# name (#129419), and the group versions 1.33 added.
V1_32_COLUMNS = {
    "/v1/resourcequotas": ["Name", "Age", "Request", "Limit"],
}
# What 1.30 changed, undone for 1.29: jobs' Status, cron jobs' Timezone.
V1_29_COLUMNS = {
    "batch/v1/jobs": ["Name", "Completions", "Duration", "Age", "Containers", "Images",
                      "Selector"],
    "batch/v1/cronjobs": ["Name", "Schedule", "Suspend", "Active", "Last Schedule", "Age",
                          "Containers", "Images", "Selector"],
}
# What 1.29 changed, undone for 1.28: PVs' and PVCs' VolumeAttributesClass.
V1_28_COLUMNS = {
    "/v1/persistentvolumes": ["Name", "Capacity", "Access Modes", "Reclaim Policy", "Status",
                              "Claim", "StorageClass", "Reason", "Age", "VolumeMode"],
    "/v1/persistentvolumeclaims": ["Name", "Status", "Volume", "Capacity", "Access Modes",
                                   "StorageClass", "Age", "VolumeMode"],
}
# And flowcontrol v1 (#121089): 1.28 serves the v1 printers' types at these
# versions, its printers.go describing them from v1beta3's docs.
V1_28_FLOWCONTROL = ("v1beta2", "v1beta3")
FLOWCONTROL_V1 = "flowcontrol.apiserver.k8s.io/v1/"
# 1.25 serves flowcontrol at v1beta1 and v1beta2 (v1beta3 and its
# NominalConcurrencyShares are 1.26's, #112306), its printers.go describing
# them from v1beta2's docs, a priority level's shares as
# AssuredConcurrencyShares (SwaggerDoc's text, cut at its "---").
V1_25_FLOWCONTROL = ("v1beta1", "v1beta2")
V1_25_SHARES = ("AssuredConcurrencyShares", ("swagger", (
    ("io.k8s.api.flowcontrol.v1beta2.LimitedPriorityLevelConfiguration",
     "assuredConcurrencyShares"),)))


def at_version(spec, old, new):
    """A column's source with its definitions' prefix `old` read as `new`."""
    if spec[0] not in ("doc", "swagger"):
        return spec
    return (spec[0], tuple((new + d[len(old):] if d.startswith(old) else d, f)
                           for d, f in spec[1]))


# What 1.32 changed, undone for 1.31: priority classes' PreemptionPolicy.
V1_31_COLUMNS = {
    "scheduling.k8s.io/v1/priorityclasses": ["Name", "Value", "Global-Default", "Age"],
}
V1_32_LEFT_OUT = {
    "networking.k8s.io/v1/ipaddresses": "networking.k8s.io/v1 IP addresses are 1.33's (GA)",
    "networking.k8s.io/v1/servicecidrs": "networking.k8s.io/v1 service CIDRs are 1.33's (GA)",
    "certificates.k8s.io/v1beta1/clustertrustbundles":
        "certificates v1beta1 cluster trust bundles are 1.33's (#128499)",
}
V1_23_LEFT_OUT = {
    "storage.k8s.io/v1/csistoragecapacities":
        "storage.k8s.io/v1 CSI storage capacities are 1.24's (#108445); 1.23 serves them at "
        "v1beta1, whose Tables are forwarded",
}
# Events at 1.23 alone: 1.22 adds one to a series' count, 1.24 does not.
V1_23_EVENTS_LEFT_OUT = {
    gvr: "whether v1.23.0 has #105009 (a series' count without the +1; release note NONE, "
         "not merged by 2021-09-27) is not established"
    for gvr in ("/v1/events", "events.k8s.io/v1/events")
}
V1_22_LEFT_OUT = {
    **{f"flowcontrol.apiserver.k8s.io/v1beta2/{r}": "flowcontrol v1beta2 is 1.23's (#104399)"
       for r in ("flowschemas", "prioritylevelconfigurations")},
    "autoscaling/v2/horizontalpodautoscalers": "autoscaling/v2 is 1.23's (#102534)",
}
# What 1.22 changed, undone for 1.21: pods' Restarts an integer (#100142),
# v1.20's column.
V1_21_RESTARTS = {"name": "Restarts", "type": "integer", "format": "",
                  "description": "The number of times the containers in this pod have been "
                                 "restarted.",
                  "priority": 0}
V1_26_LEFT_OUT = {
    "certificates.k8s.io/v1alpha1/clustertrustbundles":
        "certificates v1alpha1 cluster trust bundles are 1.27's (#113218)",
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


# The printers.go copies each release's printers were read from, and the
# changes dated between them: (the newest release they apply to, ...),
# newest first. A release's columns name every one that applies to it
# (the copies oldest first).
PRINTERS_GO_COPIES = [
    (34, "printers.go before v1.34.0", "mortent/kubernetes",
     "1baf7abec4d3aa499168d83dee8ef797eaee8050"),
    (33, "printers.go after v1.32's", "yongruilin/kubernetes",
     "144a7980762c245f12c2a7b457c8aaef18496071"),
    (32, "printers.go of v1.32", "Goend/kubernetes",
     "247a91cd (its pod printer locally edited: pods as 1.33's)"),
    (31, "printers.go of v1.31", "stlaz/kubernetes", "fa39e2a1eabdc0a127192526a457a10091e6a0da"),
    (30, "printers.go of v1.30", "ivanvc/kubernetes",
     "16caa9ec (1.30 development, before its code freeze)"),
    (29, "printers.go of v1.29", "iscas-fork/kubernetes", "c6446be5 (its own import aliases aside)"),
    (21, "printers.go of v1.21", "tiloso/kubernetes",
     "541e7186 (enj@126873a4 less #100142 and #99494, by length exactly; a one-character "
     "local edit aside)"),
    (22, "printers.go of v1.22", "enj/kubernetes",
     "126873a4 (#99494's author's branch, July to October 2021) with #103001, as "
     "nikhita/kubernetes@8f795ed9 has it"),
    (23, "printers.go of v1.23", "haoruan/kubernetes",
     "17d66376 (January to March 2022: #107559 in, #103516 and #108445 not; its local pod "
     "printer edit aside), read whole against enj@126873a4 and hj-johannes-lee@43767baa: "
     "their lengths differ by dated changes alone"),
    (24, "printers.go of v1.24", "hj-johannes-lee/kubernetes",
     "43767baa, within 1.24's code freeze (after #108290 merged, before its revert #109436 on "
     "2022-04-12; master took only v1.24 milestone work until v1.24.0), its local DRA "
     "prototype and ClusterCIDRConfig aside"),
    (25, "printers.go of v1.25", "hj-johannes-lee/kubernetes",
     "43767baa (master of late March to mid-April 2022, with a local prototype), read whole "
     "against ahmedtd/kubernetes@4a52a06c (1.26 development): for types served by default only "
     "1.26's changes between them but output-neutral edits"),
    (26, "printers.go of v1.26", "igusher/kubernetes",
     "cdeefb60 (after the DRA merge, the pod security policy printer still there), read whole "
     "against ahmedtd/kubernetes@4a52a06c (1.26 development) and pohly's 120fe8a8: for types "
     "served by default only SchedulingGated (#113274, 1.26) between them"),
    (27, "printers.go of v1.27", "sanposhiho/kubernetes",
     "059ce4e8 (June 2023, v1.28.0-alpha.2's window; its imports repackaged), read whole against "
     "pohly/kubernetes@120fe8a8 (mid-March 2023): only CHANGELOG-1.27's #113218, #115075, #116299 "
     "between them"),
    (28, "printers.go of v1.28", "yylt/kubernetes",
     "7ca6f88a (release-1.28; its pod printer locally reverted, pods as yangsoon/apiserver"
     "@68d65c56, k8s.io/* v0.28.6, and aojea/kubernetes@5c75e9e9 print them)"),
]
CHANGES_DATED = [
    (21, "CHANGELOG-1.22 (#100142 pods' Restarts with the last restart; #99494 CSRs' "
         "RequestedDuration; #103001 the CSI drivers' token columns ungated)"),
    (22, "CHANGELOG-1.23 (#104399 flowcontrol v1beta2, #102534 autoscaling/v2: new versions "
         "printed by the same printers); #105009 (events, after v1.22.0)"),
    (23, "CHANGELOG-1.24 (#108445 storage capacity GA, #107559 deployments' invalid selector, "
         "#103516 subresources' Tables)"),
    (34, "CHANGELOG-1.35 (v1.35.0-alpha.1: #117160, service accounts' Secrets column removed), "
         "CHANGELOG-1.34 (v1.34.0-beta.0: #132832, jobs' SuccessCriteriaMet)"),
    (33, "CHANGELOG-1.33 (v1.33.0: #130447, #128499, #129970), "
         "CHANGELOG-1.34 (v1.34.0: #132706 resource.k8s.io/v1, #131549 storage v1 VolumeAttributesClass)"),
    (32, "#129419 (resource quotas' Age last, opened after v1.32.0), "
         "CHANGELOG-1.33 (networking.k8s.io/v1 IP addresses and service CIDRs)"),
    (31, "CHANGELOG-1.32 (#126529, priority classes' PreemptionPolicy)"),
    (30, "CHANGELOG-1.31 (#122038, a finished pod never Terminating)"),
    (29, "CHANGELOG-1.30 (#123226 jobs' Status, #122231 cron jobs' Timezone, "
         "#122804 HPA targets naming their metric)"),
    (28, "CHANGELOG-1.29 (#121104 PVs' and PVCs' VolumeAttributesClass, #121089 flowcontrol v1)"),
    (27, "CHANGELOG-1.28 (#116429 sidecars in printPod; #119215 admission policy bindings' "
         "ParamRef cell, at v1alpha1 in 1.27, not served by default)"),
    (26, "CHANGELOG-1.27 (#113218 cluster trust bundles, #115075 IP addresses, #116299 DRA "
         "v1alpha2: all alpha)"),
    (24, "CHANGELOG-1.25 (#110408 int64 cells, output-neutral, in 1.24.3 too; #109090 "
         "ClusterCIDR printer, alpha)"),
    (25, "CHANGELOG-1.26 (#113274 SchedulingGated; #112306 flowcontrol v1beta3 and "
         "NominalConcurrencyShares; #112883 admission policies and #111023 DRA, alpha)"),
]


# Printers v1.36 leaves out (its printers.go reads networking/v1's and
# apps/v1's docs for them, after #136100: not established for 1.36 itself)
# that releases before it print as v1.20 was recorded printing them, their
# Name and Age from the release's docs and the column read from an unserved
# API version with that version's text at the release (dated copies):
# extensions/v1beta1's podSelector is v1.20's (unchanged in a 1.35-era
# types.go); apps/v1beta1's revision begins lower-case from 1.27 (k8s.io/api
# v0.26 vendored by DanielPickens/Astra@27cc04f6 against v0.27 by
# grafana/loki@1d397605, v0.32 and kubernetes/api@aba12d41).
# CSRs read certificates/v1beta1's docs (unserved from 1.22) in every copy
# from v1.20's to a 1.37-era one: signerName's, request's and conditions'
# texts are v1.20's in copies of 1.18 to 1.37's development; 1.22's
# RequestedDuration (#99494) reads expirationSeconds, whose text is the
# served v1 twin's wherever a v1beta1 copy was read (1.22/1.23's
# GoogleContainerTools/kpt-config-sync@5f19282a, 1.26's Astra, 1.32's
# kubeadapt, 1.37's development): described from v1's docs, as for 1.24
# and 1.25, of which no v1beta1 copy was read.
CSRS = "certificates.k8s.io/v1/certificatesigningrequests"
CSRS_V1BETA1 = "certificates.k8s.io/v1beta1/certificatesigningrequests"
BEFORE_V1_36 = {
    "networking.k8s.io/v1/networkpolicies": {"Pod-Selector": lambda minor: None},
    "apps/v1/controllerrevisions": {
        "Revision": lambda minor: None if minor <= 26 else
        "revision indicates the revision of the state represented by Data."},
    CSRS: {},
    # Served until 1.22 (CHANGELOG-1.22's removals).
    CSRS_V1BETA1: {},
}
REQUESTED_DURATION = ("doc", (("io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
                               "expirationSeconds"),))


def before_v1_36(gvr, minor):
    """v1.20's recorded columns of `gvr` as 1.`minor` describes them
    (BEFORE_V1_36; a text None is v1.20's)."""
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    own = {"Name": ("doc", ((meta, "name"),)), "Age": ("doc", ((meta, "creationTimestamp"),))}
    cols = []
    for c in V1_20_RECORDED["printed"][gvr]:
        c = {k: c[k] for k in ("name", "type", "format", "description", "priority")}
        if c["name"] in own:
            c["description"] = describe(own[c["name"]], minor)
        elif c["name"] in BEFORE_V1_36[gvr]:
            c["description"] = BEFORE_V1_36[gvr][c["name"]](minor) or c["description"]
        cols.append(c)
        if gvr == CSRS and c["name"] == "Requestor" and minor >= 22:
            cols.append({"name": "RequestedDuration", "type": "string", "format": "",
                         "description": describe(REQUESTED_DURATION, minor), "priority": 0})
    return cols


# What each release leaves out of v1.36's printers, and why: (whether the
# table applies to a release, {gvr: why}), the first that names a printer
# giving its reason.
LEFT_OUT = [
    (lambda minor: minor <= 34, V1_34_LEFT_OUT),
    (lambda minor: minor <= 33, V1_33_LEFT_OUT),
    (lambda minor: minor <= 32, V1_32_LEFT_OUT),
    (lambda minor: minor <= 26, V1_26_LEFT_OUT),
    (lambda minor: minor <= 23, V1_23_LEFT_OUT),
    (lambda minor: minor == 23, V1_23_EVENTS_LEFT_OUT),
    (lambda minor: minor <= 22, V1_22_LEFT_OUT),
]


def left_out_because(gvr, minor):
    """Why 1.`minor` leaves `gvr` out (LEFT_OUT), or None."""
    return next((why[gvr] for applies, why in LEFT_OUT if applies(minor) and gvr in why), None)


def build(minor):
    v1_36 = json.load(open(os.path.join(HERE, "columns_v1_36.json")))
    printed, left_out = {}, {}
    for gvr, cols in v1_36["printed"].items():
        why = left_out_because(gvr, minor)
        if why:
            left_out[gvr] = why
            continue
        if minor <= 34 and gvr in V1_34_COLUMNS:
            printed[gvr] = [
                {"name": n, "type": t, "format": f, "description": describe(d, minor), "priority": p}
                for n, t, f, p, d in V1_34_COLUMNS[gvr]
            ]
            continue
        src = sources(gvr)
        if gvr in OLD_API_DOCS:
            src = {**src, **old_api_sources(gvr, cols, minor)}
        for since, columns in ((32, V1_32_COLUMNS), (31, V1_31_COLUMNS), (29, V1_29_COLUMNS),
                               (28, V1_28_COLUMNS)):
            if minor <= since and gvr in columns:
                by_name = {c["name"]: c for c in cols}
                cols = [by_name[n] for n in columns[gvr]]
        for c in cols:
            if c["name"] in OLD_API_DOCS.get(gvr, {}):
                check_twin(OLD_API_DOCS[gvr][c["name"]][0], minor)
        missing = [c["name"] for c in cols if c["name"] not in src]
        if missing:
            left_out[gvr] = f"no 1.{minor} source for {', '.join(missing)}"
            continue
        if minor <= 25 and gvr.startswith(FLOWCONTROL_V1):
            # Until 1.23 (#104399) printers.go read v1beta1's docs, the
            # only version served: the same texts.
            docs_at = "io.k8s.api.flowcontrol.v1beta2." if minor >= 23 else \
                "io.k8s.api.flowcontrol.v1beta1."
            src = {n: at_version(d, derived.FLOW, docs_at) for n, d in src.items()}
            shares, source = V1_25_SHARES
            cols = [{**c, "name": shares} if c["name"] == "NominalConcurrencyShares" else c
                    for c in cols]
            src[shares] = at_version(source, "io.k8s.api.flowcontrol.v1beta2.", docs_at)
            for version in V1_25_FLOWCONTROL:
                at = gvr.replace("/v1/", f"/{version}/")
                why = left_out_because(at, minor)
                if why:
                    left_out[at] = why
                    continue
                printed[at] = [{**c, "description": describe(src[c["name"]], minor)} for c in cols]
            continue
        if minor <= 28 and gvr.startswith(FLOWCONTROL_V1):
            src = {n: at_version(d, derived.FLOW, "io.k8s.api.flowcontrol.v1beta3.")
                   for n, d in src.items()}
            for version in V1_28_FLOWCONTROL:
                at = gvr.replace("/v1/", f"/{version}/")
                printed[at] = [{**c, "description": describe(src[c["name"]], minor)} for c in cols]
            continue
        printed[gvr] = [{**c, "description": describe(src[c["name"]], minor)} for c in cols]
        if minor <= 21 and gvr == "/v1/pods":
            printed[gvr] = [V1_21_RESTARTS if c["name"] == "Restarts" else c
                            for c in printed[gvr]]
    if minor <= 35:
        for gvr in BEFORE_V1_36:
            if gvr == CSRS_V1BETA1 and minor >= 22:
                continue
            printed[gvr] = before_v1_36(gvr, minor)
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    sources_ = {
        "columns": "columns_v1_36.json (v1.36's printers: their columns did not change in 1.36)",
        "printers.go": derived.PRINTERS_GO,
        "descriptions": f"k8s-openapi {openapi_version(minor)} (crates.io), "
                        f"src/v1_{minor}: Kubernetes 1.{minor}'s OpenAPI descriptions",
    }
    for newest, key, repo, commit in reversed(PRINTERS_GO_COPIES):
        if minor <= newest:
            sources_[key] = {
                "repo": repo, "path": "pkg/printers/internalversion/printers.go", "commit": commit}
    dated = [text for newest, text in CHANGES_DATED if minor <= newest]
    if dated:
        sources_["changes dated"] = "; ".join(dated)
    sources_["descriptions from API versions the release does not serve"] = (
        "extensions/v1beta1, batch/v1beta1, autoscaling/v2beta1, discovery/v1beta1 and "
        "rbac/v1beta1, read by printers.go until kubernetes/kubernetes#136100 (1.36): "
        "k8s.io/api yongruilin/kubernetes@571c3d28, kubernetes/api@426b1b99 and @aba12d41, "
        "liggitt/kubernetes@94640da1, kubeadapt/kubeadapt-k8s-pulse@2d3917ec (v0.32 vendored)"
    )
    if minor <= 35:
        sources_["printed as v1.20 was recorded"] = (
            "network policies, controller revisions and CSRs (columns.json), Name and Age from "
            "the release's docs, Pod-Selector extensions/v1beta1's text and Revision apps/v1beta1's "
            "at the release, CSRs' RequestedDuration (from 1.22) certificates/v1's docs "
            "(BEFORE_V1_36)")
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
        for minor in range(21, 36):
            text = json.dumps(build(minor), indent=1, ensure_ascii=False) + "\n"
            if open(out_file(minor), encoding="utf-8").read() != text:
                raise SystemExit(f"columns_v1_{minor}.json is not what columns_v1_32_to_35.py makes")
            print(f"columns_v1_{minor}.json is up to date")
        return
    if ARGS not in ([str(m)] for m in range(21, 36)):
        raise SystemExit("usage: columns_v1_32_to_35.py 21|22|…|35|--check")
    sys.stdout.write(json.dumps(build(int(ARGS[0])), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
