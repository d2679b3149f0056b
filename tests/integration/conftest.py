"""Fixtures shared by the integration tests."""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture
def spec_file(tmp_path):
    """A loadable base runtime spec: containerd's own default, from the real ctr."""
    spec = tmp_path / "rdma-spec.json"
    proc = subprocess.run(["ctr", "oci", "spec"], capture_output=True, text=True, timeout=60, check=True)
    spec.write_text(proc.stdout)
    return spec
