"""Run ansible-playbook as an operator would, and read its results as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from testpaths import COLLECTION_ROOT, COLLECTIONS_ROOT

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


class PlaybookRun:
    """rc, the JSON callback's document, and convenience views of it."""

    def __init__(self, proc):
        self.rc = proc.returncode
        self.stderr = proc.stderr
        try:
            self.data = json.loads(proc.stdout)
        except ValueError:
            raise AssertionError("ansible-playbook printed no JSON (rc %d): %s %s" % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))

    @property
    def failed_hosts(self):
        return sorted(h for h, s in self.data["stats"].items() if s["failures"] or s["unreachable"])

    @property
    def changed_hosts(self):
        return sorted(h for h, s in self.data["stats"].items() if s["changed"])

    def task_results(self, name):
        """Per host results of the task whose name ends with ``name``."""
        for play in self.data["plays"]:
            for task in play["tasks"]:
                if task["task"]["name"].endswith(name):
                    return task["hosts"]
        raise AssertionError("no task named %r ran" % name)


def run_playbook(playbook, *args, env=None, collections_root=None):
    """Run ``playbook`` with the JSON callback: a path relative to the collection, or a playbook's
    FQCN (``rdma.node.site``), which ansible-playbook resolves through the collections path."""
    environment = dict(os.environ)
    environment.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collections_root or COLLECTIONS_ROOT),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": "ignore",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_SHOW_CUSTOM_STATS": "1",
    })
    environment.update(env or {})
    target = playbook if playbook.startswith("rdma.node.") else str(COLLECTION_ROOT / playbook)
    proc = subprocess.run([ANSIBLE_PLAYBOOK, target, *args],
                          capture_output=True, text=True, env=environment, timeout=600, check=False)
    return PlaybookRun(proc)
