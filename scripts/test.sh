#!/usr/bin/env bash
# Runs every test of the collection on this machine, setting it up first:
#   unit           pytest over parsers, editors and modules (tests/unit), with nothing on PATH but the
#                  venv and the commands of Debian's essential packages: a unit test needs no real tool
#   unit-2.21      the unit tests on ansible-core 2.21 (Python 3.12, requirements-ansible-2.21.txt)
#   sanity         ansible-test sanity, no ignore entries
#   sanity-2.21    ansible-test sanity of ansible-core 2.21; its pylint reads the code that runs under a user's
#                  ansible-core, not the tests and benchmarks (sanity_2_21)
#   lint           ansible-lint, production profile
#   integration    real ibstat/containerd/runc/dkms/systemd on fixture trees (tests/integration); it is
#                  integration-1 (the files of INTEGRATION_1) and integration-2 (every other file)
#   demo-2.21      the demo's site integration test (tests/integration/test_site_demo.py) on ansible-core 2.21
#   molecule       every molecule scenario on podman hosts running systemd (extensions/molecule)
# Pass stage names to run only those, one after the other: scripts/test.sh unit lint
# Without names, the stages run in three lanes at once (LANES: each lane's stages one after the other);
# the first lane's output is shown as it comes, the others' when they end. The lanes are balanced by
# the stages' times alone (CONTRIBUTING.md), so that no core waits for one long lane at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
eval "$("$ROOT/scripts/setup.sh" --test)"
# A machine may set PYTHONDONTWRITEBYTECODE: every Python process the tests start (a module run, a fake
# server, a tool) would then compile its sources again. Their bytecode goes to the set-up's cache, not the tree.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$RDMA_NODE_CACHE/pycache"

STAGES=("$@")
PYTEST=(python -m pytest -q -p no:cacheprovider)
# The integration files of the second lane (the fake Kubernetes and AWX APIs, the bandwidth check); the third lane
# runs every other file, a new one included.
INTEGRATION_1=(test_k8s_quarantine_fake_api.py test_awx_controller_config.py test_bandwidth_check_role.py test_k8s_rdma_fake_api.py test_pod_proof_fake_api.py)
# The full run's lanes; on 2 cores, every venv and ansible-test's sanity venvs made anew (2026-11-28, night), they ended
# after 1786 s, 1745 s and 1745 s (56 min of CPU in 30): the run is bound by its CPU time, not by how the lanes wait.
# The first lane also builds the molecule image on a new machine.
LANES=("unit sanity molecule sanity-2.21" "unit-2.21 demo-2.21 integration-1" "lint integration-2")

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

# sanity_2_21: every sanity test of ansible-core 2.21. pylint, more than half of the stage's time (136 s of
# 230 s, 2026-11-28), reads here the code that runs under a user's ansible-core, not the tests and the
# benchmarks: the sanity stage lints those on 2.19, and the unit-2.21 stage runs the unit tests on 2.21.
sanity_2_21() {
  PATH="$RDMA_NODE_VENV_2_21/bin:$PATH" "$ROOT/scripts/sanity.sh" --skip-test pylint
  PATH="$RDMA_NODE_VENV_2_21/bin:$PATH" "$ROOT/scripts/sanity.sh" --test pylint --exclude tests/ --exclude benchmarks/
}

run_stage() {
  local name=$1 start
  start=$(date +%s)
  printf '\n=== %s\n' "$name"
  case "$name" in
    unit)        unit_tests "$(dirname "$(dirname "$(command -v python)")")" ;;
    unit-2.21)   unit_tests "$RDMA_NODE_VENV_2_21" ;;
    sanity)      "$ROOT/scripts/sanity.sh" ;;
    sanity-2.21) sanity_2_21 ;;
    lint)        ansible-lint --offline -q ;;
    integration) "${PYTEST[@]}" tests/integration ;;
    integration-1) "${PYTEST[@]}" "${INTEGRATION_1[@]/#/tests/integration/}" ;;
    integration-2) "${PYTEST[@]}" tests/integration "${INTEGRATION_1[@]/#/--ignore=tests/integration/}" ;;
    demo-2.21)   PATH="$RDMA_NODE_VENV_2_21/bin:$PATH" "${PYTEST[@]}" tests/integration/test_site_demo.py ;;
    molecule)    "$ROOT/extensions/molecule/run.sh" ;;
    *) echo "unknown stage: $name (known: unit unit-2.21 sanity sanity-2.21 lint integration integration-1 integration-2 demo-2.21 molecule)" >&2; return 2 ;;
  esac
  printf '=== %s passed in %ss\n' "$name" "$(( $(date +%s) - start ))"
}

# run_lanes LANE...: each LANE (stage names separated by spaces) one stage after the other, stopping at the first
# that fails; the lanes at once. The first lane's output is shown as it comes, each other lane's is kept
# in a log and printed when that lane ends. Fails when any stage failed.
run_lanes() {
  local lane logs=() pids=() status=0 i
  for lane in "$@"; do
    if [ ${#pids[@]} -eq 0 ]; then
      logs+=("")
      run_lane "$lane" &
    else
      logs+=("$(mktemp)")
      run_lane "$lane" >"${logs[-1]}" 2>&1 &
    fi
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
    if [ -n "${logs[$i]}" ]; then
      cat "${logs[$i]}"
      rm -f "${logs[$i]}"
    fi
  done
  return "$status"
}

# In a subshell of its own (run_lanes puts it in the background): a function tested by || would run
# with errexit off and hide a failed stage.
run_lane() {
  local stage
  # shellcheck disable=SC2086  # one word per stage
  for stage in $1; do
    run_stage "$stage"
  done
}

if [ ${#STAGES[@]} -eq 0 ]; then
  start=$(date +%s)
  run_lanes "${LANES[@]}"
  printf '\n=== every stage passed in %ss\n' "$(( $(date +%s) - start ))"
else
  for stage in "${STAGES[@]}"; do
    run_stage "$stage"
  done
fi
