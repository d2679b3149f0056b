"""scripts/setup.sh and scripts/env.sh: two checkouts on one machine never run each other's code
(issue 23, item 7).

Two copies of this checkout, the second with another description of rdma.node.ib_facts; each
shell that sourced its own checkout's scripts/env.sh (the same shared cache, so the same venv) shows
its own checkout's module, through a collections root of its own that links to it.
"""

from __future__ import annotations

import os
import subprocess

from testpaths import checkout_copy, forget_collections_root


def shell_in(checkout, command):
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": ":".join(p for p in os.environ["PATH"].split(":") if "/venv-" not in p),
           "LANG": "C.UTF-8"}
    for name in ("PYENV_ROOT", "RDMA_NODE_CACHE"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return subprocess.run(["bash", "--noprofile", "--norc", "-c", "source scripts/env.sh && " + command], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_two_checkouts_each_run_their_own_collection(tmp_path):
    first, second = checkout_copy(tmp_path / "first"), checkout_copy(tmp_path / "second")
    module = second / "plugins/modules/ib_facts.py"
    text = module.read_text()
    assert "  - Reads C(class/infiniband)" in text
    module.write_text(text.replace("  - Reads C(class/infiniband)", "  - SECOND CHECKOUT. Reads C(class/infiniband)", 1))
    try:
        shown = {checkout: shell_in(checkout, "echo \"$ANSIBLE_COLLECTIONS_PATH\"; ansible-doc rdma.node.ib_facts") for checkout in (first, second)}
    finally:
        forget_collections_root(first)
        forget_collections_root(second)
    for checkout, run in shown.items():
        assert run.returncode == 0, run.stderr[-2000:]
    roots = {checkout: run.stdout.splitlines()[0].split(":")[0] for checkout, run in shown.items()}
    assert roots[first] != roots[second]
    assert all(root.endswith("/collections/" + os.path.basename(root)) for root in roots.values())
    assert "SECOND CHECKOUT" not in shown[first].stdout and "SECOND CHECKOUT" in shown[second].stdout
