"""Molecule finds its scenarios without a critical message (issue 23, item 4).

Every molecule command looks up a scenario named ``default`` first; without one it printed
``CRITICAL 'extensions/molecule/default/molecule.yml' glob failed.  Exiting.`` and carried on. The
site scenario is that default now. ``molecule syntax`` is the cheapest command that takes the same
path (it checks a scenario's playbooks and starts no host).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testpaths import COLLECTION_ROOT


def test_a_molecule_command_prints_no_critical_message():
    env = dict(os.environ, NO_COLOR="1", PATH="%s:%s" % (Path(sys.executable).parent, os.environ["PATH"]),
               CONTAINERS_CONF=str(COLLECTION_ROOT / "extensions/molecule/containers.conf"))
    run = subprocess.run(["molecule", "syntax", "--scenario-name", "node_remediation"], cwd=COLLECTION_ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-3000:]
    assert "CRITICAL" not in output and "glob failed" not in output, output[-3000:]
    assert "node_remediation > syntax: Executed: Successful" in output
