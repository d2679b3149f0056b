#!/usr/bin/env bash
# Prepares this machine and prints the shell lines that put the environment in force; callers eval
# them (scripts/env.sh does it for an interactive shell). Safe to run again: each step is skipped when
# it is already done. One mode:
#   --demo              what scripts/demo.sh runs: a small venv (requirements-demo.txt)
#   --demo-remediation  --demo, plus containerd and runc from Debian: the demo's remediation starts each
#                       simulated node's own containerd (needs root, for apt-get)
#   --dev               the development venv (requirements.txt): every command of README.md and
#                       CONTRIBUTING.md (ansible-playbook, ansible-galaxy, ansible-doc, ansible-builder, ...)
#   --test (default)    --dev, plus the Debian packages the tests use (real ibstat, containerd, runc, dkms,
#                       podman, chromium, ...), a second venv with ansible-core 2.21 on Python 3.12
#                       (requirements-ansible-2.21.txt), and ansible-test's get-pip download made offline
# In every mode the venvs are kept in the cache (~/.cache/rdma-node, or RDMA_NODE_CACHE), keyed by the
# hash of their requirements file; this checkout is linked as rdma.node in a collections root of its
# own, and the development collection rdma.demo (tools/collections: the demo's simulated nodes) is put
# on the collections path beside it.
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
  rsync util-linux systemd procps
  bsdextrautils      # column -t: the parsers are tested on aligned pastes
)
DEMO_REMEDIATION_PACKAGES=(containerd runc)
# The development venvs leave their bytecode to the first import: pip would compile all of the ansible
# package's collections, most of which no command imports, and the tests keep their bytecode apart
# (PYTHONPYCACHEPREFIX, scripts/test.sh), where a venv's own would not be read. The demo's small venv
# is compiled, so that the demo and the benchmarks start alike on every machine.
NO_COMPILE=(--no-compile)

log() { printf 'setup: %s\n' "$*" >&2; }
fail() { printf 'setup: %s\n' "$*" >&2; exit 1; }

install_apt_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    fail "this needs the Debian packages ${missing[*]}; install them (apt-get install ${missing[*]}) or run this as root on Debian."
  fi
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# venv_path REQUIREMENTS: prints the path of the venv made from REQUIREMENTS (keyed by its hash).
venv_path() {
  printf '%s/venv-%s' "$CACHE" "$(sha256sum "$1" | cut -c1-12)"
}

# make_venv PYTHON REQUIREMENTS [PIP_OPTION...]: makes the venv of venv_path REQUIREMENTS with PYTHON
# and exactly REQUIREMENTS installed, unless it is there already. The mark is written last: a set-up
# stopped half-way (Ctrl-C, a lost download) leaves a venv that the next run makes again.
make_venv() {
  local python=$1 requirements=$2 venv
  shift 2
  venv=$(venv_path "$requirements")
  if [ ! -f "$venv/.rdma-node-installed" ]; then
    log "creating the Python venv $venv from $(basename "$requirements")"
    rm -rf "$venv"
    mkdir -p "$CACHE"
    "$python" -m venv "$venv"
    # pip's output is kept, and shown only when it fails (this machine's pip configuration warns about
    # local index paths that do not exist).
    if ! "$venv/bin/pip" install --disable-pip-version-check "$@" -r "$requirements" >"$venv/pip-install.log" 2>&1; then
      tail -n 30 "$venv/pip-install.log" >&2
      rm -rf "$venv"
      fail "installing $(basename "$requirements") into $venv failed (pip's last lines above)."
    fi
    touch "$venv/.rdma-node-installed"
  fi
}

# The Python 3.12 that ansible-core 2.20 and later need: pyenv's (the image keeps one), else python3.12.
python_3_12() {
  local version
  if command -v pyenv >/dev/null; then
    version=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.12\.[0-9]+$' | sort -V | tail -n 1 || true)
    if [ -n "$version" ] && [ -x "$(pyenv prefix "$version")/bin/python3.12" ]; then
      printf '%s' "$(pyenv prefix "$version")/bin/python3.12"
      return 0
    fi
  fi
  if python3.12 -c 'import venv' 2>/dev/null; then
    command -v python3.12
    return 0
  fi
  fail "ansible-core 2.21 needs Python 3.12: found none (pyenv versions, python3.12)."
}

link_collection() {
  # ansible-playbook and pytest import the working tree as rdma.node through this symlink, one
  # collections root per checkout: two checkouts on one machine never run each other's code.
  COLLECTIONS="$CACHE/collections/$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)"
  mkdir -p "$COLLECTIONS/ansible_collections/rdma"
  ln -sfn "$ROOT" "$COLLECTIONS/ansible_collections/rdma/node"
}

offline_get_pip() {
  # ansible-test --venv downloads get-pip.py (get_pip_24_2.py for ansible-core 2.19's ansible-test,
  # get_pip_25_2.py for 2.21's) for each venv it makes, ten or eleven per release on a new machine. The stand-in
  # installs the pip version asked for with the pip wheel that Python bundles for ensurepip, run from the
  # wheel: no download, and no setuptools and older pip installed first (ensurepip's way, kept for a
  # Python without that wheel).
  local shim_dir=$HOME/.ansible/test/cache name
  mkdir -p "$shim_dir"
  for name in get_pip_24_2.py get_pip_25_2.py; do
    cat > "$shim_dir/$name" <<'PY'
"""Stand-in for get-pip.py (scripts/setup.sh): installs what was asked for with the pip wheel bundled for ensurepip."""
import glob
import os
import subprocess
import sys

import ensurepip

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
bundled = sorted(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")))
if bundled and any(not a.startswith("-") for a in args):
    # Python compiles pip's modules when it first imports them.
    subprocess.check_call([sys.executable, os.path.join(bundled[-1], "pip"), "install", "--no-compile", *args])
else:
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
    if args:
        subprocess.check_call([sys.executable, "-m", "pip", "install", *args])
PY
  done
}

case "$MODE" in
  --demo)
    make_venv python3 "$ROOT/requirements-demo.txt"
    VENV=$(venv_path "$ROOT/requirements-demo.txt") ;;
  --demo-remediation)
    install_apt_packages "${DEMO_REMEDIATION_PACKAGES[@]}"
    make_venv python3 "$ROOT/requirements-demo.txt"
    VENV=$(venv_path "$ROOT/requirements-demo.txt") ;;
  --dev)
    make_venv python3 "$ROOT/requirements.txt" "${NO_COMPILE[@]}"
    VENV=$(venv_path "$ROOT/requirements.txt") ;;
  --test)
    # The Debian packages and the two venvs do not need each other: a new machine makes them at once,
    # and waits for its downloads once instead of three times.
    PYTHON_3_12=$(python_3_12)
    install_apt_packages "${APT_PACKAGES[@]}" &
    apt_job=$!
    make_venv python3 "$ROOT/requirements.txt" "${NO_COMPILE[@]}" &
    venv_job=$!
    make_venv "$PYTHON_3_12" "$ROOT/requirements-ansible-2.21.txt" "${NO_COMPILE[@]}"
    wait "$venv_job" || exit 1
    wait "$apt_job" || exit 1
    VENV=$(venv_path "$ROOT/requirements.txt")
    VENV_2_21=$(venv_path "$ROOT/requirements-ansible-2.21.txt")
    offline_get_pip ;;
  *) fail "unknown mode $MODE (known: --demo --demo-remediation --dev --test)" ;;
esac
link_collection

# The checkout first; in --dev (an interactive shell's, through scripts/env.sh) Ansible's default
# places after it, so that the user's own collections stay in reach and ansible-galaxy -p
# ~/.ansible/collections installs where Ansible looks.
SEARCHED="$COLLECTIONS:$ROOT/tools/collections"
[ "$MODE" = --dev ] && SEARCHED="$SEARCHED:\$HOME/.ansible/collections:/usr/share/ansible/collections"
cat <<ENV
export PATH="$VENV/bin:\$PATH"
export ANSIBLE_COLLECTIONS_PATH="$SEARCHED"
export RDMA_NODE_COLLECTIONS="$COLLECTIONS"
export RDMA_NODE_CACHE="$CACHE"
export ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS=ignore
ENV
if [ "$MODE" = --test ]; then
  printf 'export RDMA_NODE_VENV_2_21="%s"\nexport ANSIBLE_NOCOLOR=1\n' "$VENV_2_21"
fi
