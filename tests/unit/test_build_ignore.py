"""What git ignores in a checkout, the collection build leaves out too (issue 23, item 5).

Every entry of .gitignore names something a run, a test or a build leaves in the checkout; each must
be in galaxy.yml's build_ignore, or be a kind that ansible-galaxy never packs. The behaviour is tested
in tests/integration/test_nothing_of_a_run_is_shipped.py (a build after real runs); this keeps the two
lists in step where no run made the file.
"""

from __future__ import annotations

import yaml

from testpaths import COLLECTION_ROOT

# ansible-galaxy collection build leaves out *.pyc files and __pycache__ directories itself.
NEVER_PACKED = {"*.py[cod]", "__pycache__"}


def test_every_gitignore_entry_is_in_build_ignore():
    ignored = [line.strip().rstrip("/") for line in (COLLECTION_ROOT / ".gitignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    build_ignore = set(yaml.safe_load((COLLECTION_ROOT / "galaxy.yml").read_text())["build_ignore"])
    assert [entry for entry in ignored if entry not in build_ignore and entry not in NEVER_PACKED] == []
