"""Where the tests find the collection, its fixtures and its tools."""

from __future__ import annotations

from pathlib import Path

COLLECTION_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = COLLECTION_ROOT / "tests" / "fixtures"
TOOLS = COLLECTION_ROOT / "tools"
