"""The pinned environments agree with each other and with what the collection claims.

The demo's small venv (requirements-demo.txt) must run the same versions as the development venv
(requirements.txt), and meta/runtime.yml must claim exactly the ansible-core range whose ends CI runs:
the pins of requirements.txt and requirements-ansible-2.21.txt.
"""

from __future__ import annotations

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from testpaths import COLLECTION_ROOT


def pins(name):
    found = {}
    for line in (COLLECTION_ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            package, version = line.split("==")
            found[package.lower()] = version
    return found


def test_the_demo_runs_the_versions_of_the_development_venv():
    development, demo = pins("requirements.txt"), pins("requirements-demo.txt")
    assert "ansible-core" in demo
    assert {package: version for package, version in demo.items() if development.get(package) != version} == {}


def test_requires_ansible_is_the_range_ci_tests():
    claimed = SpecifierSet(yaml.safe_load((COLLECTION_ROOT / "meta/runtime.yml").read_text())["requires_ansible"])
    tested = [Version(pins(name)["ansible-core"]) for name in ("requirements.txt", "requirements-ansible-2.21.txt")]
    assert all(version in claimed for version in tested), (claimed, tested)
    oldest, newest = min(tested), max(tested)
    assert Version("%d.%d.0" % (oldest.major, oldest.minor)) in claimed
    assert Version("%d.%d.0" % (oldest.major, oldest.minor - 1)) not in claimed
    assert Version("%d.%d.0" % (newest.major, newest.minor + 1)) not in claimed
