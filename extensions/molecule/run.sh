#!/usr/bin/env bash
# Runs every molecule scenario of the collection (`molecule test --all` from the collection root):
# builds the host image first when it is not cached (build-image.sh), then prints the time taken.
# Needs the environment scripts/setup.sh prints: eval "$(scripts/setup.sh)"; extensions/molecule/run.sh
# Extra arguments go to molecule, for example: run.sh --scenario-name default (instead of --all).
# The scenarios' containers are removed by their names on every exit path.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export CONTAINERS_CONF="$HERE/containers.conf"
export NO_COLOR=1

remove_hosts() {
  local names
  names=$(sed -n 's/^  - name: \(rdma-[a-z0-9-]*\)$/\1/p' "$HERE"/*/molecule.yml)
  # shellcheck disable=SC2086  # one word per container name
  [ -n "$names" ] && podman rm --force --ignore --time 0 $names >/dev/null
}
trap remove_hosts EXIT

start=$(date +%s)
"$HERE/build-image.sh" >/dev/null
image_done=$(date +%s)

cd "$ROOT"
if [ $# -eq 0 ]; then
  set -- --all
fi
molecule test "$@"
end=$(date +%s)
printf 'molecule: passed in %ss (host image ready after %ss, scenarios %ss)\n' \
  "$((end - start))" "$((image_done - start))" "$((end - image_done))"
