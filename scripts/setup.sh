#!/usr/bin/env bash
# Prepares this machine for the demo (--demo) or for every test (--test, the default).
# Safe to run again: each step is skipped when it is already done.
#   - Debian packages the tests use (real ibstat, containerd, runc, dkms, podman, chromium, ...)
#   - a Python venv from the pinned requirements.txt, kept in the cache and keyed by its hash
#   - the collection made importable as rdma.node (a symlink into a collections path), and the
#     development collection rdma.demo (tools/collections: the demo's simulated nodes) on that path
#   - ansible-test's get-pip download replaced by ensurepip, so sanity runs offline
# Prints the shell lines that put this environment in force; callers eval them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${RDMA_NODE_CACHE:-$HOME/.cache/rdma-node}
MODE=${1:---test}

APT_PACKAGES=(
  infiniband-diags   # real ibstat/ibstatus for the sysfs cross-check
  prometheus-node-exporter  # its infiniband collector cross-checks the counter facts
  prometheus         # promtool: lints node_exporter's exposition and tests the alert rules
  containerd runc    # ctr oci spec, containerd config dump, ctr run
  dkms linux-headers-amd64 build-essential  # real DKMS builds for an installed kernel
  podman debootstrap uidmap  # molecule hosts: Debian containers running systemd
  chromium           # headless screenshots of the HTML report
  shellcheck         # lets ansible-test sanity check the shell scripts
  numactl            # pins perftest to the HCA's NUMA node (bandwidth_check; taskset comes with util-linux)
  rsync util-linux systemd
  bsdextrautils      # column -t: the parsers are tested on aligned pastes
)

log() { printf 'setup: %s\n' "$*" >&2; }

install_apt_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

make_venv() {
  local hash venv
  hash=$(sha256sum "$ROOT/requirements.txt" | cut -c1-12)
  venv="$CACHE/venv-$hash"
  if [ ! -x "$venv/bin/ansible-playbook" ]; then
    log "creating the Python venv $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/requirements.txt" >&2
  fi
  VENV=$venv
}

link_collection() {
  # ansible-playbook and pytest import the working tree as rdma.node through this symlink, one
  # collections root per checkout: two checkouts on one machine never run each other's code.
  COLLECTIONS="$CACHE/collections/$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"
  mkdir -p "$COLLECTIONS/ansible_collections/rdma"
  ln -sfn "$ROOT" "$COLLECTIONS/ansible_collections/rdma/node"
}

offline_get_pip() {
  # ansible-test --venv downloads get-pip.py; ensurepip gives the same pip without a download.
  local shim_dir=$HOME/.ansible/test/cache
  mkdir -p "$shim_dir"
  cat > "$shim_dir/get_pip_24_2.py" <<'PY'
"""Stand-in for get-pip.py: bootstrap pip with ensurepip, then install what was asked for."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
if args:
    subprocess.check_call([sys.executable, "-m", "pip", "install", *args])
PY
}

[ "$MODE" = --test ] && install_apt_packages
make_venv
link_collection
[ "$MODE" = --test ] && offline_get_pip

cat <<ENV
export PATH="$VENV/bin:\$PATH"
export ANSIBLE_COLLECTIONS_PATH="$COLLECTIONS:$ROOT/tools/collections"
export RDMA_NODE_COLLECTIONS="$COLLECTIONS"
export RDMA_NODE_CACHE="$CACHE"
export ANSIBLE_NOCOLOR=1
ENV
