#!/usr/bin/env bash
# Runs every test of the collection on this machine, setting it up first:
#   unit         pytest over parsers, editors and modules (tests/unit), with nothing on PATH but the
#                venv and the commands of Debian's essential packages: a unit test needs no real tool
#   unit-2.21    the unit tests on ansible-core 2.21 (Python 3.12, requirements-ansible-2.21.txt)
#   sanity       ansible-test sanity, no ignore entries
#   sanity-2.21  ansible-test sanity of ansible-core 2.21
#   lint         ansible-lint, production profile
#   integration  real ibstat/containerd/runc/dkms/systemd on fixture trees (tests/integration)
#   demo-2.21    the demo's site integration test (tests/integration/test_site_demo.py) on ansible-core 2.21
#   molecule     every molecule scenario on podman hosts running systemd (extensions/molecule)
# Pass stage names to run only those, one after the other: scripts/test.sh unit lint
# Without names, the integration stage, the longest, runs beside all the others (which run one after the
# other, their output shown as it comes); its own output is printed when it ends. It keeps about one of
# two cores busy: much of its time is spent waiting on the real tools it drives.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
eval "$("$ROOT/scripts/setup.sh" --test)"

STAGES=("$@")
PYTEST=(python -m pytest -q -p no:cacheprovider)

# A directory of links to the commands of Debian's essential packages (coreutils, bash, grep, sed,
# findutils, util-linux, ...), which every Debian system has: the unit tests' PATH besides the venv.
essential_commands() {
  local dir=$1 command
  mkdir -p "$dir"
  dpkg-query -W -f='${Package} ${Essential}\n' | awk '$2 == "yes" {print $1}' | xargs dpkg -L 2>/dev/null \
    | grep -E '^/(usr/)?s?bin/[^/]+$' | sort -u | while read -r command; do
      [ -f "$command" ] && [ -x "$command" ] && ln -sf "$command" "$dir/"
    done
}

# unit_tests VENV: the unit tests with that venv's Python, on the essential commands only.
unit_tests() {
  local venv=$1 essential status=0
  essential=$(mktemp -d)
  essential_commands "$essential"
  PATH="$venv/bin:$essential" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit || status=$?
  rm -rf "$essential"
  return "$status"
}

run_stage() {
  local name=$1 start
  start=$(date +%s)
  printf '\n=== %s\n' "$name"
  case "$name" in
    unit)        unit_tests "$(dirname "$(dirname "$(command -v python)")")" ;;
    unit-2.21)   unit_tests "$RDMA_NODE_VENV_2_21" ;;
    sanity)      "$ROOT/scripts/sanity.sh" ;;
    sanity-2.21) PATH="$RDMA_NODE_VENV_2_21/bin:$PATH" "$ROOT/scripts/sanity.sh" ;;
    lint)        ansible-lint --offline -q ;;
    integration) "${PYTEST[@]}" tests/integration ;;
    demo-2.21)   PATH="$RDMA_NODE_VENV_2_21/bin:$PATH" "${PYTEST[@]}" tests/integration/test_site_demo.py ;;
    molecule)    "$ROOT/extensions/molecule/run.sh" ;;
    *) echo "unknown stage: $name (known: unit unit-2.21 sanity sanity-2.21 lint integration demo-2.21 molecule)" >&2; return 2 ;;
  esac
  printf '=== %s passed in %ss\n' "$name" "$(( $(date +%s) - start ))"
}

# run_beside LONG STAGE...: LONG in the background into its log while the others run one after the other
# (stopping at the first that fails); LONG's log is printed when it ends. Fails when any stage failed.
run_beside() {
  local long=$1 log pid others status=0
  shift
  log=$(mktemp)
  run_stage "$long" >"$log" 2>&1 &
  pid=$!
  # In the background too: a subshell tested by || would run with errexit off and hide a failed stage.
  (for stage in "$@"; do run_stage "$stage"; done) &
  others=$!
  wait "$others" || status=1
  wait "$pid" || status=1
  cat "$log"
  rm -f "$log"
  return "$status"
}

if [ ${#STAGES[@]} -eq 0 ]; then
  start=$(date +%s)
  run_beside integration unit unit-2.21 sanity sanity-2.21 lint molecule demo-2.21
  printf '\n=== every stage passed in %ss\n' "$(( $(date +%s) - start ))"
else
  for stage in "${STAGES[@]}"; do
    run_stage "$stage"
  done
fi
