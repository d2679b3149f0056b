#!/usr/bin/env bash
# The main job on the built-in demo inventory: four simulated GPU nodes with planted faults
# (inventories/demo, whose node roots the development collection rdma.demo builds). Sets up what the
# demo runs (a small venv, requirements-demo.txt), runs rdma.node.site on the nodes with Ansible's output
# kept in a log, and prints what the checks found and the verdict: exit 0 when every failure is one of
# the planted faults, non-zero on a real failure.
# With -e rdma_remediate=true the memlock remediation acts on the simulated nodes' own files and
# containerds only (inventories/demo/group_vars/all.yml); it needs containerd and runc, which the demo
# installs from Debian when it runs as root, and refuses before running anything otherwise.
# Extra arguments go to ansible-playbook (-v also shows Ansible's output; --limit ib-a100; ...).
# RDMA_NODE_REPORT_DIR overrides where the report is written (reports/demo of this checkout).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEMO="$ROOT/inventories/demo"
DEMO_SCRIPTS="$ROOT/tools/collections/ansible_collections/rdma/demo/scripts"
REPORT_DIR=${RDMA_NODE_REPORT_DIR:-$ROOT/reports/demo}

# Whether the arguments ask for the remediation: -e/--extra-vars with rdma_remediate set to a true
# value, as key=value, JSON or YAML, inline or in an @file.
wants_remediation() {
  local value next=false arg
  for arg in "$@"; do
    if $next; then value=$arg; next=false
    else
      case "$arg" in
        -e|--extra-vars) next=true; continue ;;
        --extra-vars=*) value=${arg#--extra-vars=} ;;
        -e*) value=${arg#-e} ;;
        *) continue ;;
      esac
    fi
    [[ $value == @* && -f ${value#@} ]] && value=$(cat "${value#@}")
    if printf '%s' "$value" | grep -Eiq "rdma_remediate[\"']?[[:space:]]*[:=][[:space:]]*[\"']?(true|yes|on|1)\b"; then
      return 0
    fi
  done
  return 1
}

shows_ansible_output() {
  local arg
  for arg in "$@"; do
    [[ $arg =~ ^-v+$ || $arg == --verbose ]] && return 0
  done
  return 1
}

# The commands that are not installed, of those named.
missing_commands() {
  local name missing=()
  for name in "$@"; do
    command -v "$name" >/dev/null || missing+=("$name")
  done
  local IFS=,; printf "%s" "${missing[*]}" | sed "s/,/ and /g"
}

remediate=false
if wants_remediation "$@"; then
  remediate=true
  lacking=$(missing_commands containerd runc)
  if [ -n "$lacking" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    "$ROOT/scripts/setup.sh" --demo-remediation >/dev/null || true
    lacking=$(missing_commands containerd runc)
  fi
  if [ -n "$lacking" ]; then
    echo "demo: the remediation (-e rdma_remediate=true) restarts each simulated node's own containerd, and this machine" \
         "lacks $lacking: install containerd and runc (apt-get install containerd runc), or run the demo as root on Debian" \
         "so that it installs them; nothing was run." >&2
    exit 2
  fi
fi
environment=$("$ROOT/scripts/setup.sh" --demo)
eval "$environment"

# The simulated nodes boot with their containerd running, as a node's containerd.service would: the
# remediation then restarts a running containerd, also when an earlier demo run remediated the node
# already and its containerd was stopped since.
if $remediate; then
  ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED=1 ansible-inventory -i "$DEMO" --list >/dev/null  # builds the node roots
  for node in "$DEMO"/.nodes/*/; do
    python "$DEMO_SCRIPTS/simulated_containerd.py" start "$node" >/dev/null
  done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$REPORT_DIR"
rm -f "$REPORT_DIR"/fleet-report.json "$REPORT_DIR"/fleet-report.md "$REPORT_DIR"/fleet-report.html
log="$REPORT_DIR/ansible-playbook.log"

# Ansible's output goes to the log (and to the terminal with -v); the junit callback records every
# failed task for the verdict; an inventory that cannot be parsed stops the run instead of leaving it
# without hosts.
export ANSIBLE_NOCOLOR=1 ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED=1
export ANSIBLE_CALLBACKS_ENABLED=ansible.builtin.junit JUNIT_OUTPUT_DIR="$work/junit" JUNIT_HIDE_TASK_ARGUMENTS=1
command=(ansible-playbook -i "$DEMO" rdma.node.site -e "fleet_report_dir=$REPORT_DIR" "$@")
printf 'rdma.node demo: %s\n' "${command[*]}"
set +e
if shows_ansible_output "$@"; then
  "${command[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
else
  "${command[@]}" >"$log" 2>&1
  rc=$?
fi
set -e
printf '\n'

summary=(python "$DEMO_SCRIPTS/demo_summary.py" --report "$REPORT_DIR" --inventory "$DEMO/demo.simulated_nodes.yml"
         --junit "$work/junit" --rc "$rc" --log "$log")
$remediate && summary+=(--remediated)
exec "${summary[@]}"
