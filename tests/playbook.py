"""Kept for the tests that import ``run_playbook`` and ``PlaybookRun`` from here: see harness.py."""

from __future__ import annotations

from harness import PlaybookRun, run_playbook

__all__ = ["PlaybookRun", "run_playbook"]
