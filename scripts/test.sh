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
# Pass stage names to run only those: scripts/test.sh unit lint
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
eval "$("$ROOT/scripts/setup.sh" --test)"

STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(unit unit-2.21 sanity sanity-2.21 lint integration demo-2.21 molecule)
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

for stage in "${STAGES[@]}"; do
  run_stage "$stage"
done
