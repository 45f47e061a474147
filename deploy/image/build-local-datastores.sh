#!/bin/sh
# Builds, from Debian's packages, local stand-ins for the public postgres and redis images that
# compose.yaml names, for a machine that reaches no container registry, and prints the settings
# that point compose.yaml at them. Builds the Debian base first if it is missing.
#   deploy/image/build-local-datastores.sh >> .env
set -eu
repo_root=$(cd "$(dirname "$0")/../.." && pwd)
# podman itself must work first (its OCI runtime and settings: CONTAINERS_CONF): otherwise every
# `podman image exists` below fails as if the image were missing, and the failure comes only after
# the downloads ('default OCI runtime "runc" not found' without Debian's runc).
podman info >/dev/null
debian_image=localhost/debian:bookworm-minbase
podman image exists "$debian_image" || sh "$repo_root/deploy/image/build-local-base.sh" >/dev/null
for target in postgres redis; do
  podman build --pull=never --quiet --network host --target "$target" \
    --build-arg "DEBIAN_IMAGE=$debian_image" -f "$repo_root/deploy/image/Containerfile.datastores" \
    -t "localhost/gateway-$target:bookworm" "$repo_root/deploy/image" >/dev/null
done
echo "POSTGRES_IMAGE=localhost/gateway-postgres:bookworm"
echo "REDIS_IMAGE=localhost/gateway-redis:bookworm"
