"""The parse_perftest filter loads the perftest parser only, not the process handling of the module."""

from __future__ import annotations

import json
import subprocess
import sys

from testpaths import COLLECTIONS_ROOT


def test_the_filter_does_not_import_the_runner():
    code = (
        "import json, sys\n"
        "from ansible_collections.rdma.node.plugins.filter.perftest import FilterModule\n"
        "FilterModule().filters()['parse_perftest']('')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ansible_collections.rdma.node'))))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(COLLECTIONS_ROOT), "PATH": "/usr/bin:/bin"})
    loaded = json.loads(run.stdout)
    assert "ansible_collections.rdma.node.plugins.module_utils._perftest_output" in loaded
    assert "ansible_collections.rdma.node.plugins.module_utils._perftest" not in loaded
