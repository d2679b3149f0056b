"""Make this working tree importable as ``ansible_collections.rdma.node`` for pytest, and put the
tests' own helpers (tests/) and the shared tools (tools/) on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from testpaths import COLLECTIONS_ROOT, TOOLS  # noqa: E402  (needs the line above)

for path in (COLLECTIONS_ROOT, TOOLS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
