"""The official Python client (PyPI `kubernetes`) through kubecache and
direct: a consistent list, a consistent get right after a write made
straight upstream, and a watch (list, then watch from its version) that
sees a second write. Prints one JSON document of what it read.

usage: python_client.py KUBECACHE_URL UPSTREAM_URL NAMESPACE
"""
import json
import sys

from kubernetes import client, watch


def api(host):
    c = client.Configuration()
    c.host = host
    return client.CoreV1Api(client.ApiClient(c))


through, upstream, ns = sys.argv[1], sys.argv[2], sys.argv[3]
cached, direct = api(through), api(upstream)

def names(items):
    return sorted(i.metadata.name for i in items)

out = {}
# A write straight upstream, then a consistent get and list through kubecache.
made = direct.create_namespaced_config_map(
    ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-1"), data={"k": "v"}))
got = cached.read_namespaced_config_map("py-1", ns)
out["get"] = [got.metadata.name, got.metadata.resource_version == made.metadata.resource_version]
listed = cached.list_namespaced_config_map(ns)
out["list"] = names(listed.items)
out["list_direct"] = names(direct.list_namespaced_config_map(ns).items)
out["list_version_not_older"] = int(listed.metadata.resource_version) >= int(made.metadata.resource_version)

# A watch through kubecache: the state, then a second write made upstream.
w = watch.Watch()
events = []
for ev in w.stream(cached.list_namespaced_config_map, ns, timeout_seconds=5):
    events.append([ev["type"], ev["object"].metadata.name])
    if ev["object"].metadata.name == "py-1" and len(events) == len(out["list"]):
        direct.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-2")))
    if ev["object"].metadata.name == "py-2":
        w.stop()
out["watch"] = events
print(json.dumps(out))
