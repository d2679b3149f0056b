"""Where the tests find the collection, its fixtures and its tools, the collections root that
makes this working tree importable as ``ansible_collections.rdma.node``, and the development
collection ``rdma.demo`` (the demo's simulated nodes, never part of the built rdma.node)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

COLLECTION_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = COLLECTION_ROOT / "tests" / "fixtures"
TOOLS = COLLECTION_ROOT / "tools"
# The collections root of rdma.demo: the simulated_nodes inventory plugin and its tree builder.
DEMO_COLLECTIONS_ROOT = TOOLS / "collections"
DEMO_INVENTORY = COLLECTION_ROOT / "inventories" / "demo"


def _collections_root() -> Path:
    """Inside ansible-test's layout (.../ansible_collections/rdma/node) the tree is already in place;
    anywhere else a symlink in a collections root (scripts/setup.sh's, or a temporary one) stands in
    for an installed collection."""
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
# ANSIBLE_COLLECTIONS_PATH of every run the tests start: rdma.node from this tree, and rdma.demo.
COLLECTIONS_PATH = os.pathsep.join((str(COLLECTIONS_ROOT), str(DEMO_COLLECTIONS_ROOT)))

CONTAINERD_CONFIGS = FIXTURES / "containerd" / "config_toml"


def containerd_config_copy(tmp_path: Path, name: str, mode: int = 0o640) -> Path:
    """A fixture config.toml copied to ``tmp_path/etc/<name>`` with ``mode``, for a test to edit."""
    target = tmp_path / "etc" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((CONTAINERD_CONFIGS / name).read_bytes())
    target.chmod(mode)
    return target


def demo_hosts() -> list:
    """The demo inventory's host names, sorted, as its description lists them in node_groups."""
    groups = yaml.safe_load((DEMO_INVENTORY / "demo.simulated_nodes.yml").read_text())["node_groups"]
    return sorted(host for members in groups.values() for host in members)


def demo_inventory_copy(target: Path) -> Path:
    """The demo inventory directory copied to ``target`` without its built node roots (``.nodes*``):
    a run against the copy builds its own, after the test has edited the description if it needs to."""
    shutil.copytree(DEMO_INVENTORY, target, ignore=shutil.ignore_patterns(".nodes*"))
    return target


def checkout_copy(target: Path) -> Path:
    """A copy of this checkout as a fresh clone has it: the files git knows (tracked, and new ones it
    does not ignore), with .gitignore; nothing a run or a build left here."""
    listed = subprocess.run(["git", "-C", str(COLLECTION_ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (os.fsdecode(entry) for entry in listed)):
        source = COLLECTION_ROOT / name
        if source.is_file() or source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name, follow_symlinks=False)
    return target


def forget_collections_root(checkout: Path) -> None:
    """Remove the collections root that scripts/setup.sh made for ``checkout`` in the shared cache."""
    cache = Path(os.environ.get("RDMA_NODE_CACHE") or Path.home() / ".cache" / "rdma-node")
    shutil.rmtree(cache / "collections" / hashlib.sha256(str(checkout).encode()).hexdigest()[:12], ignore_errors=True)
