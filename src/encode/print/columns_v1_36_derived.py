#!/usr/bin/env python3
"""Regenerates columns_v1_36_derived.json: the Table column definitions of
printers v1.36 was not recorded printing, derived from their sources.
Usage, from the repository's root:

    src/encode/print/columns_v1_36_derived.py > src/encode/print/columns_v1_36_derived.json

A printer's columns are printers.go's constants: names, types, formats and
priorities as written in its AddHandlers, descriptions either written there
or read from the API's docs (`<Type>{}.SwaggerDoc()["field"]`). No v1.36
printers.go is stored where this was made; the newest read is PRINTERS_GO
below (it imports resource.k8s.io/v1, so 1.34 or newer, and lacks 1.35's
node architecture, so older than v1.36). Its column definitions of the 29
printers v1.36.2 was recorded printing have the recorded names, types,
formats and priorities (compared by reading), and every description it
writes as a literal for them is the recorded one (checked below).

The API's docs at v1.36 are read from the OpenAPI descriptions that the
k8s-openapi crate (0.29.0, a dependency of this project through
kube-client) carries for v1.36 (src/v1_36, its schemars impls), generated
from Kubernetes' api/openapi-spec at 1.36. Those are made from the same Go
comments as SwaggerDoc() by the same rules (kube-openapi's copy of
fmtRawDoc), and the method is checked here first: every recorded column
whose description comes from a served type's docs (105 of them, and 41
literals) is derived the same way and must equal the recording, or this
script fails.

Where v1.36 may take a description from another API version than the
newest printers.go read does (the recording shows it reads deployments',
replica sets' and daemon sets' from apps/v1 where that copy reads
extensions/v1beta1), a column lists every candidate and is derived only if
they all agree at v1.36; printers whose candidates differ are left out
(network policies, CSRs, controller revisions, lease candidates), as are
printers that changed after that copy (pod certificate requests) or whose
cells cannot be checked (admission policy bindings' param selectors): those
Tables stay the upstream's to print.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from columns_v1_36_openapi import parse as parse_openapi  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

PRINTERS_GO = {
    "repo": "michaelasp/kubernetes",
    "path": "pkg/printers/internalversion/printers.go",
    "commit": "212194ab8a9e7b32eb1035cde155572bb8823b92",
}
AGGREGATOR_GO = {
    "repo": "mmorel-35/kubernetes",
    "path": "staging/src/k8s.io/kube-aggregator/pkg/registry/apiservice/etcd/etcd.go",
    "commit": "0b0abd6c11b6103e3f00dfe46975d1494c484a11",
}
OPENAPI = "k8s-openapi 0.29.0 (crates.io), src/v1_36: Kubernetes 1.36's OpenAPI descriptions"

META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CORE = "io.k8s.api.core.v1."
STORAGE = "io.k8s.api.storage.v1."
FLOW = "io.k8s.api.flowcontrol.v1."
RESOURCE = "io.k8s.api.resource.v1."

CONTAINERS = "Names of each container in the template."
IMAGES = "Images referenced by each container in the template."


def lit(text):
    return ("literal", text)


def doc(*candidates):
    """printers.go's `<Type>{}.SwaggerDoc()[field]`: (definition, field)
    pairs, every version v1.36 may read it from."""
    return ("doc", candidates)


NAME = ("Name", "string", "name", 0, doc((META, "name")))
AGE = ("Age", "string", "", 0, doc((META, "creationTimestamp")))


def col(name, ty, desc, priority=0, fmt=""):
    return (name, ty, fmt, priority, desc)


WEBHOOKS = [
    NAME,
    col("Webhooks", "integer", lit("Webhooks indicates the number of webhooks registered in this configuration")),
    AGE,
]
PARAM_KIND = lit("ParamKind specifies the kind of resources used to parameterize this policy")

# Transcribed from PRINTERS_GO's AddHandlers (apiservices: AGGREGATOR_GO's
# ConvertToTable). "recorded" reuses a recorded type's columns: one
# printer serves every version of its type.
PRINTERS = {
    "/v1/podtemplates": [
        NAME,
        col("Containers", "string", lit(CONTAINERS)),
        col("Images", "string", lit(IMAGES)),
        col("Pod Labels", "string", lit("The labels for the pod template.")),
    ],
    "/v1/replicationcontrollers": [
        NAME,
        col("Desired", "integer", doc((CORE + "ReplicationControllerSpec", "replicas"))),
        col("Current", "integer", doc((CORE + "ReplicationControllerStatus", "replicas"))),
        col("Ready", "integer", doc((CORE + "ReplicationControllerStatus", "readyReplicas"))),
        AGE,
        col("Containers", "string", lit(CONTAINERS), 1),
        col("Images", "string", lit(IMAGES), 1),
        col("Selector", "string", doc((CORE + "ReplicationControllerSpec", "selector")), 1),
    ],
    "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": WEBHOOKS,
    "admissionregistration.k8s.io/v1/validatingwebhookconfigurations": WEBHOOKS,
    "admissionregistration.k8s.io/v1/validatingadmissionpolicies": [
        NAME,
        col("Validations", "integer", lit("Validations indicates the number of validation rules defined in this configuration")),
        col("ParamKind", "string", PARAM_KIND),
        AGE,
    ],
    "admissionregistration.k8s.io/v1/mutatingadmissionpolicies": [
        NAME,
        col("Mutations", "integer", lit("Mutation indicates the number of mutations rules defined in this configuration")),
        col("ParamKind", "string", PARAM_KIND),
        AGE,
    ],
    "apiregistration.k8s.io/v1/apiservices": [
        NAME,
        col("Service", "string", lit("The reference to the service that hosts this API endpoint.")),
        col("Available", "string", lit("Whether this service is available.")),
        AGE,
    ],
    "autoscaling/v1/horizontalpodautoscalers": ("recorded", "autoscaling/v2/horizontalpodautoscalers"),
    "events.k8s.io/v1/events": ("recorded", "/v1/events"),
    "networking.k8s.io/v1/ingressclasses": [
        NAME,
        col("Controller", "string", lit("Controller that is responsible for handling this class")),
        col("Parameters", "string", lit("A reference to a resource with additional parameters")),
        AGE,
    ],
    "networking.k8s.io/v1/ipaddresses": [
        NAME,
        col("ParentRef", "string", doc(
            ("io.k8s.api.networking.v1beta1.IPAddressSpec", "parentRef"),
            ("io.k8s.api.networking.v1.IPAddressSpec", "parentRef"))),
    ],
    "networking.k8s.io/v1/servicecidrs": [
        NAME,
        col("CIDRs", "string", doc(
            ("io.k8s.api.networking.v1beta1.ServiceCIDRSpec", "cidrs"),
            ("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs"))),
        AGE,
    ],
    # `metav1.ObjectMeta{}.SwaggerDoc()["handler"]`: ObjectMeta has no such
    # field, so the description is empty (v1.20 served it so).
    "node.k8s.io/v1/runtimeclasses": [
        NAME,
        col("Handler", "string", ("absent", META, "handler")),
        AGE,
    ],
    "flowcontrol.apiserver.k8s.io/v1/flowschemas": [
        NAME,
        col("PriorityLevel", "string", doc((FLOW + "PriorityLevelConfigurationReference", "name"))),
        col("MatchingPrecedence", "string", doc((FLOW + "FlowSchemaSpec", "matchingPrecedence"))),
        col("DistinguisherMethod", "string", doc((FLOW + "FlowSchemaSpec", "distinguisherMethod"))),
        AGE,
        col("MissingPL", "string", lit("references a broken or non-existent PriorityLevelConfiguration")),
    ],
    "flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations": [
        NAME,
        col("Type", "string", doc((FLOW + "PriorityLevelConfigurationSpec", "type"))),
        col("NominalConcurrencyShares", "string", doc((FLOW + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"))),
        col("Queues", "string", doc((FLOW + "QueuingConfiguration", "queues"))),
        col("HandSize", "string", doc((FLOW + "QueuingConfiguration", "handSize"))),
        col("QueueLengthLimit", "string", doc((FLOW + "QueuingConfiguration", "queueLengthLimit"))),
        AGE,
    ],
    "storage.k8s.io/v1/csidrivers": [
        NAME,
        col("AttachRequired", "boolean", doc((STORAGE + "CSIDriverSpec", "attachRequired"))),
        col("PodInfoOnMount", "boolean", doc((STORAGE + "CSIDriverSpec", "podInfoOnMount"))),
        col("StorageCapacity", "boolean", doc((STORAGE + "CSIDriverSpec", "storageCapacity"))),
        col("TokenRequests", "string", doc((STORAGE + "CSIDriverSpec", "tokenRequests"))),
        col("RequiresRepublish", "boolean", doc((STORAGE + "CSIDriverSpec", "requiresRepublish"))),
        col("Modes", "string", doc((STORAGE + "CSIDriverSpec", "volumeLifecycleModes"))),
        AGE,
    ],
    "storage.k8s.io/v1/csinodes": [
        NAME,
        col("Drivers", "integer", lit("Drivers indicates the number of CSI drivers registered on the node")),
        AGE,
    ],
    "storage.k8s.io/v1/volumeattachments": [
        NAME,
        col("Attacher", "string", doc((STORAGE + "VolumeAttachmentSpec", "attacher")), fmt="name"),
        col("PV", "string", doc((STORAGE + "VolumeAttachmentSource", "persistentVolumeName"))),
        col("Node", "string", doc((STORAGE + "VolumeAttachmentSpec", "nodeName"))),
        col("Attached", "boolean", doc((STORAGE + "VolumeAttachmentStatus", "attached"))),
        AGE,
    ],
    "storage.k8s.io/v1/csistoragecapacities": [
        NAME,
        col("StorageClassName", "string", doc((STORAGE + "CSIStorageCapacity", "storageClassName"))),
        col("Capacity", "string", doc((STORAGE + "CSIStorageCapacity", "capacity"))),
    ],
    "storage.k8s.io/v1/volumeattributesclasses": [
        NAME,
        col("DriverName", "string", doc(
            (STORAGE + "VolumeAttributesClass", "driverName"),
            ("io.k8s.api.storage.v1beta1.VolumeAttributesClass", "driverName"))),
        AGE,
    ],
    "resource.k8s.io/v1/deviceclasses": [NAME, AGE],
    "resource.k8s.io/v1/resourceclaims": [
        NAME,
        col("State", "string", lit("A summary of the current state (allocated, pending, reserved, etc.).")),
        AGE,
    ],
    "resource.k8s.io/v1/resourceclaimtemplates": [NAME, AGE],
    "resource.k8s.io/v1/resourceslices": [
        NAME,
        col("Node", "string", doc(
            (RESOURCE + "ResourceSliceSpec", "nodeName"),
            ("io.k8s.api.resource.v1beta2.ResourceSliceSpec", "nodeName"),
            ("io.k8s.api.resource.v1beta1.ResourceSliceSpec", "nodeName"))),
        col("Driver", "string", doc(
            (RESOURCE + "ResourceSliceSpec", "driver"),
            ("io.k8s.api.resource.v1beta2.ResourceSliceSpec", "driver"),
            ("io.k8s.api.resource.v1beta1.ResourceSliceSpec", "driver"))),
        col("Pool", "string", doc(
            (RESOURCE + "ResourcePool", "name"),
            ("io.k8s.api.resource.v1beta2.ResourcePool", "name"),
            ("io.k8s.api.resource.v1beta1.ResourcePool", "name"))),
        AGE,
    ],
}
CLUSTER_TRUST_BUNDLES = [
    NAME,
    col("SignerName", "string", doc(
        ("io.k8s.api.certificates.v1beta1.ClusterTrustBundleSpec", "signerName"),
        ("io.k8s.api.certificates.v1alpha1.ClusterTrustBundleSpec", "signerName"))),
]
PRINTERS["certificates.k8s.io/v1alpha1/clustertrustbundles"] = CLUSTER_TRUST_BUNDLES
PRINTERS["certificates.k8s.io/v1beta1/clustertrustbundles"] = CLUSTER_TRUST_BUNDLES

# The check of the method: the recorded printers' columns as PRINTERS_GO
# defines them, descriptions from docs of types v1.36 serves (columns whose
# source type is no longer served, such as extensions/v1beta1's, are not
# derivable here and are left out) and the literal ones.
RECORDED_SOURCES = {
    "/v1/pods": {
        "Ready": lit("The aggregate readiness state of this pod for accepting traffic."),
        "Status": lit("The aggregate status of the containers in this pod."),
        "Restarts": lit("The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
        "IP": doc((CORE + "PodStatus", "podIP")),
        "Node": doc((CORE + "PodSpec", "nodeName")),
        "Nominated Node": doc((CORE + "PodStatus", "nominatedNodeName")),
        "Readiness Gates": doc((CORE + "PodSpec", "readinessGates")),
    },
    "/v1/nodes": {
        "Status": lit("The status of the node"),
        "Roles": lit("The roles of the node"),
        "Version": doc((CORE + "NodeSystemInfo", "kubeletVersion")),
        "Internal-IP": doc((CORE + "NodeStatus", "addresses")),
        "External-IP": doc((CORE + "NodeStatus", "addresses")),
        "OS-Image": doc((CORE + "NodeSystemInfo", "osImage")),
        "Kernel-Version": doc((CORE + "NodeSystemInfo", "kernelVersion")),
        "Container-Runtime": doc((CORE + "NodeSystemInfo", "containerRuntimeVersion")),
    },
    "/v1/events": {
        "Last Seen": doc((CORE + "Event", "lastTimestamp")),
        "Type": doc((CORE + "Event", "type")),
        "Reason": doc((CORE + "Event", "reason")),
        "Object": doc((CORE + "Event", "involvedObject")),
        "Subobject": doc((CORE + "ObjectReference", "fieldPath")),
        "Source": doc((CORE + "Event", "source")),
        "Message": doc((CORE + "Event", "message")),
        "First Seen": doc((CORE + "Event", "firstTimestamp")),
        "Count": doc((CORE + "Event", "count")),
    },
    "/v1/namespaces": {"Status": lit("The status of the namespace")},
    "/v1/secrets": {"Type": doc((CORE + "Secret", "type")), "Data": doc((CORE + "Secret", "data"))},
    "/v1/configmaps": {"Data": doc((CORE + "ConfigMap", "data"))},
    "/v1/endpoints": {"Endpoints": doc((CORE + "Endpoints", "subsets"))},
    "/v1/services": {
        "Type": doc((CORE + "ServiceSpec", "type")),
        "Cluster-IP": doc((CORE + "ServiceSpec", "clusterIP")),
        "External-IP": doc((CORE + "ServiceSpec", "externalIPs")),
        "Port(s)": doc((CORE + "ServiceSpec", "ports")),
        "Selector": doc((CORE + "ServiceSpec", "selector")),
    },
    "/v1/persistentvolumes": {
        "Capacity": doc((CORE + "PersistentVolumeSpec", "capacity")),
        "Access Modes": doc((CORE + "PersistentVolumeSpec", "accessModes")),
        "Reclaim Policy": doc((CORE + "PersistentVolumeSpec", "persistentVolumeReclaimPolicy")),
        "Status": doc((CORE + "PersistentVolumeStatus", "phase")),
        "Claim": doc((CORE + "PersistentVolumeSpec", "claimRef")),
        "StorageClass": lit("StorageClass of the pv"),
        "VolumeAttributesClass": lit("VolumeAttributesClass of the pv"),
        "Reason": doc((CORE + "PersistentVolumeStatus", "reason")),
        "VolumeMode": doc((CORE + "PersistentVolumeSpec", "volumeMode")),
    },
    "/v1/persistentvolumeclaims": {
        "Status": doc((CORE + "PersistentVolumeClaimStatus", "phase")),
        "Volume": doc((CORE + "PersistentVolumeClaimSpec", "volumeName")),
        "Capacity": doc((CORE + "PersistentVolumeClaimStatus", "capacity")),
        "Access Modes": doc((CORE + "PersistentVolumeClaimStatus", "accessModes")),
        "StorageClass": lit("StorageClass of the pvc"),
        "VolumeAttributesClass": lit("VolumeAttributesClass of the pvc"),
        "VolumeMode": doc((CORE + "PersistentVolumeClaimSpec", "volumeMode")),
    },
    "/v1/resourcequotas": {
        "Request": lit("Request represents a minimum amount of cpu/memory that a container may consume."),
        "Limit": lit("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
    },
    "apps/v1/deployments": {
        "Ready": lit("Number of the pod with ready state"),
        "Containers": lit(CONTAINERS),
        "Images": lit(IMAGES),
    },
    "apps/v1/replicasets": {"Containers": lit(CONTAINERS), "Images": lit(IMAGES)},
    "apps/v1/statefulsets": {
        "Ready": lit("Number of the pod with ready state"),
        "Containers": lit(CONTAINERS),
        "Images": lit(IMAGES),
    },
    "apps/v1/daemonsets": {
        "Node Selector": doc((CORE + "PodSpec", "nodeSelector")),
        "Containers": lit(CONTAINERS),
        "Images": lit(IMAGES),
    },
    "batch/v1/jobs": {
        "Status": lit("Status of the job."),
        "Completions": doc(("io.k8s.api.batch.v1.JobStatus", "succeeded")),
        "Duration": lit("Time required to complete the job."),
        "Containers": lit(CONTAINERS),
        "Images": lit(IMAGES),
        "Selector": doc(("io.k8s.api.batch.v1.JobSpec", "selector")),
    },
    "batch/v1/cronjobs": {
        "Containers": lit(CONTAINERS),
        "Images": lit(IMAGES),
        "Selector": doc(("io.k8s.api.batch.v1.JobSpec", "selector")),
    },
    "coordination.k8s.io/v1/leases": {"Holder": doc(("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"))},
    "networking.k8s.io/v1/ingresses": {
        "Class": lit("The name of the IngressClass resource that should be used for additional configuration"),
        "Hosts": lit("Hosts that incoming requests are matched against before the ingress rule"),
        "Address": lit("Address is a list containing ingress points for the load-balancer"),
        "Ports": lit("Ports of TLS configurations that open"),
    },
    "policy/v1/poddisruptionbudgets": {
        "Min Available": lit("The minimum number of pods that must be available."),
        "Max Unavailable": lit("The maximum number of pods that may be unavailable."),
        "Allowed Disruptions": lit("Calculated number of pods that may be disrupted at this time."),
    },
    "rbac.authorization.k8s.io/v1/rolebindings": {
        "Users": lit("Users in the roleBinding"),
        "Groups": lit("Groups in the roleBinding"),
        "ServiceAccounts": lit("ServiceAccounts in the roleBinding"),
    },
    "rbac.authorization.k8s.io/v1/clusterrolebindings": {
        "Users": lit("Users in the clusterRoleBinding"),
        "Groups": lit("Groups in the clusterRoleBinding"),
        "ServiceAccounts": lit("ServiceAccounts in the clusterRoleBinding"),
    },
    "scheduling.k8s.io/v1/priorityclasses": {
        "Value": doc(("io.k8s.api.scheduling.v1.PriorityClass", "value")),
        "Global-Default": doc(("io.k8s.api.scheduling.v1.PriorityClass", "globalDefault")),
        "PreemptionPolicy": doc(("io.k8s.api.scheduling.v1.PriorityClass", "preemptionPolicy")),
    },
    "storage.k8s.io/v1/storageclasses": {
        "Provisioner": doc((STORAGE + "StorageClass", "provisioner")),
        "ReclaimPolicy": doc((STORAGE + "StorageClass", "reclaimPolicy")),
        "VolumeBindingMode": doc((STORAGE + "StorageClass", "volumeBindingMode")),
        "AllowVolumeExpansion": doc((STORAGE + "StorageClass", "allowVolumeExpansion")),
    },
}


def k8s_openapi_v1_36():
    """src/v1_36 of the k8s-openapi crate this project builds with."""
    if len(sys.argv) > 1:
        return sys.argv[1]
    return k8s_openapi("v1_36")


def k8s_openapi(release):
    """src/<release> (`v1_33` … `v1_36`) of the k8s-openapi crate this
    project builds with."""
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--offline", "--format-version", "1"],
        cwd=os.path.join(HERE, "..", "..", ".."), check=True, capture_output=True, text=True,
    ).stdout)
    for p in meta["packages"]:
        if p["name"] == "k8s-openapi":
            assert p["version"] == "0.29.0", p["version"]
            return os.path.join(os.path.dirname(p["manifest_path"]), "src", release)
    raise SystemExit("k8s-openapi is not among the dependencies")


DOCS = parse_openapi(k8s_openapi_v1_36())


def describe(spec):
    """A description and where it came from."""
    kind = spec[0]
    if kind == "literal":
        return spec[1], "literal in printers.go"
    if kind == "absent":
        _, definition, field = spec
        assert field not in DOCS[definition], (definition, field)
        return "", f"{definition} has no field {field}: SwaggerDoc() gives \"\""
    texts = {}
    for definition, field in spec[1]:
        if field not in DOCS.get(definition, {}):
            continue
        texts.setdefault(DOCS[definition][field], []).append(f"{definition}.{field}")
    if len(texts) != 1:
        raise SystemExit(f"{spec}: the candidates do not agree at v1.36: {texts}")
    (text, where), = texts.items()
    return text, "OpenAPI at 1.36: " + ", ".join(where)


def recorded():
    ref = os.path.join(HERE, "..", "..", "..", "..", "shared", "reference", "apiserver-v1.36")
    import gzip
    index = json.load(open(os.path.join(ref, "index.json")))
    out = {}
    for e in index["entries"]:
        if e["file"].endswith(".table.gz"):
            path = e["request"].split()[1].split("?")[0].strip("/").split("/")
            gvr = f"/{path[1]}/{path[2]}" if path[0] == "api" else f"{path[1]}/{path[2]}/{path[3]}"
            out[gvr] = json.load(gzip.open(os.path.join(ref, e["file"])))["columnDefinitions"]
    return out


def check_method(rec):
    """Every recorded printer's Name and Age, and every other recorded
    column with a source above, derives to its recording."""
    checked = {"doc": 0, "literal": 0}
    for gvr, cols in rec.items():
        if [c["name"] for c in cols] == ["Name", "Created At"] or gvr.startswith("ref.example.com/"):
            continue  # the default convertor's, and the custom resource's
        sources = {**RECORDED_SOURCES.get(gvr, {}), "Name": NAME[4], "Age": AGE[4]}
        for c in cols:
            if c["name"] not in sources:
                continue
            text, _ = describe(sources[c["name"]])
            if text != c["description"]:
                raise SystemExit(f"{gvr} {c['name']}: derived {text!r}, recorded {c['description']!r}")
            checked[sources[c["name"]][0]] += 1
    return checked


def main():
    rec = recorded()
    checked = check_method(rec)
    printed = {}
    for gvr, cols in sorted(PRINTERS.items()):
        if gvr in rec:
            continue  # the recording wins
        if isinstance(cols, tuple):
            printed[gvr] = [
                {**c, "source": f"the recorded {cols[1]} (the same printer)"} for c in rec[cols[1]]
            ]
            continue
        out = []
        for name, ty, fmt, priority, spec in cols:
            text, source = describe(spec)
            out.append({"name": name, "type": ty, "format": fmt, "description": text,
                        "priority": priority, "source": source})
        printed[gvr] = out
    json.dump({
        "sources": {
            "printers.go": PRINTERS_GO,
            "apiservices": AGGREGATOR_GO,
            "descriptions": OPENAPI,
            "checked": f"recorded v1.36.2 column descriptions derived alike and equal: "
                       f"{checked['doc']} from the API's docs, {checked['literal']} literals",
        },
        "printed": printed,
    }, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
