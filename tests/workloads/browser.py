"""Driving the system Chromium for the dashboard tests (``apt-get install -y chromium`` and the
``playwright`` package; never ``playwright install``: the tests drive the system browser).
Importing this module skips the importing test module where playwright or the service extra
is missing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/lib/chromium/chromium")

sync_api = pytest.importorskip("playwright.sync_api")
pytest.importorskip("fastapi")

MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs apt-get install -y chromium"),
]
"""The ``pytestmark`` of a module of browser tests."""


def launch(playwright: Any) -> Any:
    """A headless system Chromium."""
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
    )


@contextmanager
def dashboard_page(url: str) -> Iterator[Any]:
    """A page of a headless system Chromium (1280 × 1000, 60-s timeouts) opened at ``url``;
    the browser is closed after."""
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(url)
            yield page
        finally:
            browser.close()
