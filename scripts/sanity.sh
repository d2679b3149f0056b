#!/usr/bin/env bash
# ansible-test needs the collection at .../ansible_collections/rdma/node: copy the files git
# knows (tracked and not ignored) there and run sanity on that copy, with the ansible-test and the
# Python of the venv first on PATH (scripts/test.sh runs it for ansible-core 2.19 and 2.21).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAGE="${RDMA_NODE_CACHE:?run scripts/setup.sh first}/ansible-test-$$/ansible_collections/rdma/node"
STAGE_TOP="${STAGE%/ansible_collections/rdma/node}"
trap 'rm -rf "$STAGE_TOP"' EXIT
mkdir -p "$STAGE"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$ROOT" && rsync -a --ignore-missing-args --from0 --files-from=- ./ "$STAGE/")
cd "$STAGE"
ansible-test sanity --python "$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" --venv --requirements "$@"
