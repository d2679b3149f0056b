#!/usr/bin/env bash
# Builds the execution environment image (meta/execution-environment.yml) on this machine, with no
# registry and no Galaxy, then runs the demo's site.yml inside it with ansible-runner. Not part of the
# test command: it takes minutes (debootstrap, apt and pip inside the build).
#   1. a Debian base image with python3 and pip (debootstrap), cached by the hash of this script;
#   2. the collection tarball (ansible-galaxy collection build);
#   3. the build context (ansible-builder create), with kubernetes.core taken from the installed
#      `ansible` package instead of Galaxy (ansible-galaxy --offline);
#   4. podman build, then `ansible-runner run` of playbooks/site.yml on the demo inventory in the image.
# Needs root, podman, debootstrap, and the venv of scripts/setup.sh on PATH (ansible-builder, ansible-galaxy).
# Usage: scripts/build-ee.sh [IMAGE_TAG]   (default rdma-node-ee:local)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TAG=${1:-rdma-node-ee:local}
BASE=localhost/rdma-node-ee-base:bookworm
WORK=$(mktemp -d /tmp/rdma-node-ee.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export CONTAINERS_CONF=${CONTAINERS_CONF:-$WORK/containers.conf}
[ -f "$CONTAINERS_CONF" ] || printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\n' > "$CONTAINERS_CONF"
log() { printf 'build-ee: %s\n' "$*" >&2; }
start=$(date +%s)

# 1. Base image. ansible-builder's scripts call "$PKGMGR install -y ..." and "$PKGMGR clean all" (dnf's
# words): a small wrapper gives apt-get the same words.
base_hash=$(sed -n '/^# 1. Base image/,/^podman tag/p' "$0" | sha256sum | cut -c1-12)
if ! podman image exists "$BASE-$base_hash"; then
  log "debootstrap of the base image"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" >/dev/null
  chroot "$WORK/rootfs" apt-get update -qq
  chroot "$WORK/rootfs" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
  # ansible-builder runs `python3 -m ensurepip`, which Debian leaves out of its system Python (it is
  # in python3-venv, disabled there); pip is already there from python3-pip, so the module only has to say so.
  mkdir -p "$WORK/rootfs/usr/lib/python3.11/ensurepip"
  : > "$WORK/rootfs/usr/lib/python3.11/ensurepip/__init__.py"
  printf 'import sys\nimport pip  # noqa: F401 (python3-pip provides it)\nsys.exit(0)\n' \
    > "$WORK/rootfs/usr/lib/python3.11/ensurepip/__main__.py"
  # pip inside the build reaches the package index through whatever this machine trusts (a proxy's CA).
  cp /etc/ssl/certs/ca-certificates.crt "$WORK/rootfs/etc/ssl/certs/ca-certificates.crt"
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$WORK/rootfs/etc/pip.conf"
  cat > "$WORK/rootfs/usr/local/bin/apt-dnf" <<'SH'
#!/bin/sh
# dnf's words for apt-get, for ansible-builder's scripts: install -y PKG..., clean all.
case "$1" in
  install) shift; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(printf '%s\n' "$@" | grep -v '^-') ;;
  clean) apt-get clean && rm -rf /var/lib/apt/lists/* ;;
  *) exec apt-get "$@" ;;
esac
SH
  chmod 755 "$WORK/rootfs/usr/local/bin/apt-dnf"
  tar -C "$WORK/rootfs" -c . | podman import - "$BASE-$base_hash" >/dev/null
  rm -rf "$WORK/rootfs"
fi
podman tag "$BASE-$base_hash" "$BASE"

# 2. The collection, under the name meta/execution-environment.yml reads.
mkdir -p "$WORK/checkout/build"
cp -r "$ROOT/meta" "$WORK/checkout/meta"
ansible-galaxy collection build --output-path "$WORK/checkout/build" "$ROOT" >/dev/null
mv "$WORK/checkout/build"/rdma-node-*.tar.gz "$WORK/checkout/build/rdma-node.tar.gz"

# 3. The build context; kubernetes.core from the installed ansible package: its directory holds
# MANIFEST.json and FILES.json, so a tar of it is a collection artifact that ansible-galaxy installs,
# once FILES.json lists only what the package ships (it leaves out .github and the like).
k8s_core=$(python -c 'import ansible_collections.kubernetes.core as m; print(list(m.__path__)[0])')
cp -r "$k8s_core" "$WORK/kubernetes.core"
find "$WORK/kubernetes.core" -name __pycache__ -prune -exec rm -rf {} +
python - "$WORK/kubernetes.core" <<'PY'
import json, os, sys
root = sys.argv[1]
files = json.load(open(os.path.join(root, "FILES.json")))
files["files"] = [f for f in files["files"] if f["name"] == "." or os.path.lexists(os.path.join(root, f["name"]))]
json.dump(files, open(os.path.join(root, "FILES.json"), "w"))
PY
tar -czf "$WORK/checkout/build/kubernetes-core.tar.gz" -C "$WORK/kubernetes.core" --transform "s,^\./,," .
python - "$WORK/checkout/meta" <<'PY'
import sys, yaml
meta = sys.argv[1]
ee = yaml.safe_load(open(meta + "/execution-environment.yml"))
ee["additional_build_files"].append({"src": "../build/kubernetes-core.tar.gz", "dest": "collections"})
yaml.safe_dump(ee, open(meta + "/execution-environment.yml", "w"))
galaxy = yaml.safe_load(open(meta + "/ee-galaxy-requirements.yml"))
galaxy["collections"] = [c for c in galaxy["collections"] if c["name"] != "kubernetes.core"]
galaxy["collections"].append({"name": "collections/kubernetes-core.tar.gz", "type": "file"})
yaml.safe_dump(galaxy, open(meta + "/ee-galaxy-requirements.yml", "w"))
PY
ansible-builder create -f "$WORK/checkout/meta/execution-environment.yml" --context "$WORK/context" --output-filename Containerfile >/dev/null

# 4. The image, then the demo inside it as AWX would run it (ansible-runner in the container).
log "podman build of $TAG"
podman build -q -f "$WORK/context/Containerfile" -t "$TAG" --build-arg EE_BASE_IMAGE="$BASE" \
  --build-arg PKGMGR=/usr/local/bin/apt-dnf --build-arg ANSIBLE_GALAXY_CLI_COLLECTION_OPTS=--offline "$WORK/context" >/dev/null
built=$(date +%s)
mkdir -p "$WORK/job/project" "$WORK/job/inventory" "$WORK/job/env" "$WORK/reports"
cp -r "$ROOT/playbooks" "$WORK/job/project/"
# The demo inventory: its simulated_nodes plugin builds the node roots under inventory/.nodes when the job starts.
cp -r "$ROOT/inventories/demo/demo.simulated_nodes.yml" "$ROOT/inventories/demo/group_vars" "$WORK/job/inventory/"
printf 'ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS: ignore\n' > "$WORK/job/env/envvars"
printf 'fleet_report_dir: /var/lib/rdma-node/reports\n' > "$WORK/job/env/extravars"
set +e
podman run --rm --user 0 -v "$WORK/job:/runner:Z" -v "$WORK/reports:/var/lib/rdma-node/reports:Z" "$TAG" \
  ansible-runner run /runner -p playbooks/site.yml >"$WORK/runner.log" 2>&1
rc=$?
set -e
tail -n 8 "$WORK/runner.log"
log "image built in $((built - start)) s, demo run in $(( $(date +%s) - built )) s, ansible-runner rc $rc (2: the demo's faulty hosts)"
ls -l "$WORK/reports"
[ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]
