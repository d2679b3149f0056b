# shellcheck shell=bash
# Source it, from any directory: `source scripts/env.sh`. Puts this checkout's environment in force in
# the current shell, so that every command of README.md and CONTRIBUTING.md works as written:
# ansible-playbook, ansible-galaxy, ansible-doc, ansible-builder, ansible-test, molecule, pytest of the
# pinned venv on PATH, and this checkout (rdma.node) and the demo's development collection (rdma.demo)
# on the collections path. The first time, it creates the venv (about two minutes).
_rdma_node_root=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
if _rdma_node_env=$("$_rdma_node_root/scripts/setup.sh" --dev); then
  eval "$_rdma_node_env"
else
  echo "scripts/env.sh: the set-up failed (see above); nothing was changed in this shell." >&2
fi
unset _rdma_node_root _rdma_node_env
