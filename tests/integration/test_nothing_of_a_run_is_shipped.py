"""Nothing of a run lands in the product (issue 23, item 5).

In a copy of this checkout (the files git knows, with their .gitignore), the README's demo commands
run as a user runs them: ``scripts/demo.sh`` and ``ansible-playbook -i inventories/demo rdma.node.site``
from the checkout's directory. Then: the report of the plain command went to the user's state
directory, not into the checkout; everything the runs left in the checkout is ignored by git; and
``ansible-galaxy collection build`` of the checkout ships none of it (build_ignore and .gitignore in
step).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from testpaths import checkout_copy, forget_collections_root

VENV_BIN = Path(sys.executable).parent


def git(checkout, *args):
    return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def after_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("checkout-copy")
    checkout = checkout_copy(base / "rdma-node")
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    collections = base / "collections"
    (collections / "ansible_collections/rdma").mkdir(parents=True)
    (collections / "ansible_collections/rdma/node").symlink_to(checkout)
    env = dict(os.environ, XDG_STATE_HOME=str(base / "state"), ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS="ignore",
               ANSIBLE_COLLECTIONS_PATH="%s:%s" % (collections, checkout / "tools/collections"),
               PATH="%s:%s" % (VENV_BIN, os.environ["PATH"]))
    readme_command = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "inventories/demo", "rdma.node.site"], cwd=checkout,
                                    env=env, capture_output=True, text=True, timeout=600, check=False)
    # scripts/demo.sh sets itself up: its own collections root for this copy, in the shared cache, removed after.
    demo = subprocess.run([str(checkout / "scripts/demo.sh")], cwd=checkout, env=dict(env, PATH=os.environ["PATH"]),
                          capture_output=True, text=True, timeout=600, check=False)
    forget_collections_root(checkout)
    out = base / "build"
    built = subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(checkout)],
                           capture_output=True, text=True, env=env, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    (tarball,) = out.glob("rdma-node-*.tar.gz")
    with tarfile.open(tarball) as archive:
        members = sorted(archive.getnames())
    return {"base": base, "checkout": checkout, "readme_command": readme_command, "demo": demo, "members": members}


def test_the_runs_ran(after_runs):
    assert after_runs["readme_command"].returncode == 2, after_runs["readme_command"].stdout[-2000:]  # the planted faults
    assert after_runs["demo"].returncode == 0, after_runs["demo"].stdout[-2000:] + after_runs["demo"].stderr[-2000:]


def test_the_report_goes_to_the_users_state_directory_not_the_checkout(after_runs):
    reports = after_runs["base"] / "state/rdma-node/reports"
    assert sorted(p.name for p in reports.iterdir()) == ["fleet-report.html", "fleet-report.json", "fleet-report.md"]
    assert not (after_runs["checkout"] / "rdma-fleet-report").exists()


def test_everything_a_run_leaves_in_the_checkout_is_ignored_by_git(after_runs):
    untracked = [line for line in git(after_runs["checkout"], "status", "--porcelain", "--untracked-files=all").splitlines()
                 if line.startswith("??")]
    assert untracked == []
    ignored = git(after_runs["checkout"], "status", "--porcelain", "--ignored", "--untracked-files=all").splitlines()
    # What the runs made: the demo's node roots and its report (the README's command wrote nothing here).
    assert any(line.startswith("!! inventories/demo/.nodes") for line in ignored)
    assert "!! reports/demo/fleet-report.json" in ignored


def test_the_build_after_the_runs_ships_nothing_of_them(after_runs):
    ignored = [line[3:].rstrip("/") for line in
               git(after_runs["checkout"], "status", "--porcelain", "--ignored", "--untracked-files=all").splitlines()
               if line.startswith("!! ")]
    shipped = [member for member in after_runs["members"] if any(member == path or member.startswith(path + "/") for path in ignored)]
    assert shipped == []
    assert not [m for m in after_runs["members"] if m.startswith(("reports", "inventories/demo", "rdma-fleet-report"))]
