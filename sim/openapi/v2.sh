#!/bin/sh
# Regenerates v2.json.gz, the OpenAPI v2 document the simulator serves, from
# a running v1.20 kube-apiserver's /openapi/v2 (../shared/tools/real-apiserver/up
# serves one at http://127.0.0.1:8080): its paths of the simulated resources
# (sim/src/simulator.rs, builtin_types) and of pods' logs, and every
# definition those paths reach through $refs, in the apiserver's order.
# Usage: sim/openapi/v2.sh [apiserver URL]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
URL=${1:-http://127.0.0.1:8080}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# A neutral User-Agent: the apiserver indents JSON for curl's.
curl -fsS -A kubecache-openapi -o "$TMP/full.json" "$URL/openapi/v2"
jq --indent 1 '
  def simulated: {"/api/v1/": ["namespaces", "nodes", "pods", "configmaps", "secrets", "services", "events"],
                  "/apis/apps/v1/": ["deployments"]};
  # A collection, an object, or a watch of either (in all namespaces or
  # one) of a simulated type, or a pod'"'"'s log.
  def kept: . as $p | any(simulated | to_entries[]; . as $g
    | ($p | startswith($g.key)) and
      ($p[($g.key | length):] | split("/")
        | if .[0] == "watch" then .[1:] else . end
        | if length >= 3 and .[0] == "namespaces" and .[1] == "{namespace}" then .[2:] else . end
        | . as $s | any($g.value[]; . == $s[0])
          and (length == 1 or . == [$s[0], "{name}"] or . == ["pods", "{name}", "log"])));
  def refs: [.. | objects | .["$ref"]? // empty | strings | split("/")[-1]] | unique;
  . as $doc
  | ($doc.paths | with_entries(select(.key | kept))) as $paths
  | ($paths | refs) as $roots
  | ({seen: $roots, todo: $roots}
     | until(.todo == [];
         ([.todo[] | $doc.definitions[.] | refs[]] | unique) as $next
         | .todo = ($next - .seen) | .seen += .todo)
     | .seen) as $names
  | {swagger, info, paths: $paths,
     definitions: ($doc.definitions | with_entries(select(.key as $k | any($names[]; . == $k)))),
     securityDefinitions, security}' "$TMP/full.json" > "$TMP/v2.json"
gzip -9n < "$TMP/v2.json" > "$TMP/v2.json.gz"
mv "$TMP/v2.json.gz" "$HERE/v2.json.gz"
