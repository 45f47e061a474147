#!/bin/sh
# Builds deploy/Dockerfile with podman into one image for proxy, admin and ledger, and prints its
# size and the build time.
#   deploy/image/build.sh                                   # base built locally from Debian packages
#   NODE_IMAGE=docker.io/library/node:24.21.0-slim deploy/image/build.sh   # the public base
# IMAGE names the result (default localhost/inr-gateway:dev). On a host whose container runtime
# needs settings, export CONTAINERS_CONF=deploy/image/containers.conf first (docs/deploy.md).
set -eu
repo_root=$(cd "$(dirname "$0")/../.." && pwd)
# podman itself must work first (its OCI runtime and settings: CONTAINERS_CONF): otherwise every
# `podman image exists` below fails as if the image were missing, and the failure comes only after
# the downloads ('default OCI runtime "runc" not found' without Debian's runc).
podman info >/dev/null
image=${IMAGE:-localhost/inr-gateway:dev}
if [ -z "${NODE_IMAGE:-}" ]; then
  node_version=$(sed -n 's/^ *"node": "\([0-9.]*\)",\{0,1\}$/\1/p' "$repo_root/package.json")
  NODE_IMAGE=localhost/gateway-node:$node_version-slim
  podman image exists "$NODE_IMAGE" || sh "$repo_root/deploy/image/build-local-base.sh" >/dev/null
  pull=--pull=never
else
  pull=--pull=missing
fi
# A host that reaches the registry through a TLS-intercepting proxy trusts its CA through
# NODE_EXTRA_CA_CERTS: the build's RUN steps get the same file, mounted, never copied.
ca_opts=
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  ca_opts="--volume $NODE_EXTRA_CA_CERTS:/run/build-ca/ca.crt:ro --build-arg NODE_EXTRA_CA_CERTS=/run/build-ca/ca.crt"
fi
started=$(date +%s)
# The build's RUN steps download pnpm and the locked packages from the npm registry: host
# networking reaches it wherever the host does.
# shellcheck disable=SC2086 # ca_opts is a list of options
podman build $ca_opts $pull --network host \
  -f "$repo_root/deploy/Dockerfile" --ignorefile "$repo_root/deploy/Dockerfile.dockerignore" \
  --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$image" "$repo_root"
finished=$(date +%s)
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "built $image from $NODE_IMAGE in $((finished - started)) s; size $size bytes ($((size / 1000000)) MB)"
