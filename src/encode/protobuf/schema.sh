#!/bin/sh
# Regenerates schema.json from the Go types of the v1.20 kube-apiserver that
# ../shared/tools/real-apiserver/build unpacked and built (its source tree,
# GOPATH and Go 1.19). Usage: src/encode/protobuf/schema.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${KUBECACHE_REAL_APISERVER_ROOT:-$HOME/.cache/kubecache-real-apiserver}
export PATH=/usr/lib/go-1.19/bin:$PATH GOPATH=$ROOT/.gopath GOCACHE=$ROOT/.gocache
export GO111MODULE=off GOFLAGS= GOPROXY=off GOSUMDB=off CGO_ENABLED=0
K=$GOPATH/src/k8s.io/kubernetes
D=$K/cmd/kubecache-protoschema
mkdir -p "$D"
trap 'rm -rf "$D"' EXIT
cp "$HERE/schema.go" "$D/main.go"
cd "$K"
go run ./cmd/kubecache-protoschema > "$HERE/schema.json.new"
mv "$HERE/schema.json.new" "$HERE/schema.json"
