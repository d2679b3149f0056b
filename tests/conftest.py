"""Make this working tree importable as ``ansible_collections.rdma.node`` for pytest.

Inside ansible-test's layout (.../ansible_collections/rdma/node) nothing is needed; anywhere else a
symlink in a temporary collections root stands in for an installed collection.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from testpaths import COLLECTION_ROOT, TOOLS  # noqa: E402  (needs the line above)


def _collections_root() -> Path:
    if COLLECTION_ROOT.parent.name == "rdma" and COLLECTION_ROOT.parents[1].name == "ansible_collections":
        return COLLECTION_ROOT.parents[2]
    configured = os.environ.get("RDMA_NODE_COLLECTIONS")
    if configured and (Path(configured) / "ansible_collections/rdma/node").resolve() == COLLECTION_ROOT:
        return Path(configured)
    root = Path(tempfile.mkdtemp(prefix="rdma-node-collections-"))
    (root / "ansible_collections/rdma").mkdir(parents=True)
    (root / "ansible_collections/rdma/node").symlink_to(COLLECTION_ROOT)
    return root


COLLECTIONS_ROOT = _collections_root()
if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))

# tools/ holds the sysfs tree builder and archive reader that tests, the demo and benchmarks share.
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
