#!/usr/bin/env bash
# Runs every test of the collection on this machine, setting it up first:
#   unit         pytest over parsers, editors and modules (tests/unit)
#   sanity       ansible-test sanity, no ignore entries
#   lint         ansible-lint, production profile
#   integration  real ibstat/containerd/runc/dkms/systemd on fixture trees (tests/integration)
#   molecule     every molecule scenario on podman hosts running systemd (extensions/molecule)
# Pass stage names to run only those: scripts/test.sh unit lint
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
eval "$("$ROOT/scripts/setup.sh" --test)"

STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(unit sanity lint integration molecule)

run_stage() {
  local name=$1 start
  start=$(date +%s)
  printf '\n=== %s\n' "$name"
  case "$name" in
    unit)        python -m pytest -q -p no:cacheprovider tests/unit ;;
    sanity)      "$ROOT/scripts/sanity.sh" ;;
    lint)        ansible-lint --offline -q ;;
    integration) python -m pytest -q -p no:cacheprovider tests/integration ;;
    molecule)    "$ROOT/extensions/molecule/run.sh" ;;
    *) echo "unknown stage: $name (known: unit sanity lint integration molecule)" >&2; return 2 ;;
  esac
  printf '=== %s passed in %ss\n' "$name" "$(( $(date +%s) - start ))"
}

for stage in "${STAGES[@]}"; do
  run_stage "$stage"
done
