"""Paths and markers shared by the trace tests."""

from __future__ import annotations

from pathlib import Path

import pytest

# The shared traces sit beside the project checkout (see their README).
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"

requires_traces = pytest.mark.skipif(
    not TRACES.is_dir(), reason="the shared public traces are not available"
)
