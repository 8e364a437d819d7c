"""The service's pages on a machine without internet, in a real headless Chromium: the API
reference at /docs/ is drawn from /openapi.json with nothing fetched from elsewhere, the
dashboard links to it, and a FAILED job shows why it failed.

Needs the system Chromium (``apt-get install -y chromium``) and the ``playwright`` package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tests.workloads.browser import MARKS, launch, sync_api
from tests.workloads.service_helpers import running_service

pytestmark = MARKS


def test_docs_and_dashboard_work_offline_and_show_why_a_job_failed(tmp_path: Path) -> None:
    with running_service(tmp_path, backend="local", cluster="1x2", policy="fifo") as service:
        failed = service.submit("doomed", 1, 1, ["sh", "-c", "exit 3"])
        jobs = service.wait(lambda js: all(j["state"] == "FAILED" for j in js))
        reason = next(j["reason"] for j in jobs if j["id"] == failed)
        assert reason
        host = urlparse(service.url).hostname
        with sync_api.sync_playwright() as p:
            browser = launch(p)
            try:
                page = browser.new_page()
                page.set_default_timeout(60_000)
                elsewhere: list[str] = []
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))

                def offline(route: Any) -> None:
                    if urlparse(route.request.url).hostname == host:
                        route.continue_()
                    else:  # no internet here
                        elsewhere.append(route.request.url)
                        route.abort()

                page.route("**/*", offline)
                page.goto(service.url + "/")
                page.wait_for_selector(f'#finished tr[data-job-id="{failed}"]')
                row = page.eval_on_selector(
                    f'#finished tr[data-job-id="{failed}"]',
                    "r => [...r.cells].map(c => c.textContent.trim())",
                )
                assert row[3] == "FAILED" and row[-1] == reason
                page.click("a.docs[href='docs/']")
                # The dashboard marks its body loaded too: wait for the docs page itself.
                page.wait_for_url(service.url + "/docs/")
                page.wait_for_function(
                    "document.body !== null && Number(document.body.dataset.loaded || 0) > 0"
                )
                shown = page.eval_on_selector_all(
                    "[data-endpoint]", "es => es.map(e => e.dataset.endpoint)"
                )
                assert {"GET /jobs", "POST /jobs", "DELETE /jobs/{job_id}", "GET /cluster"} <= set(
                    shown
                )
                body = page.text_content("[data-endpoint='POST /jobs']") or ""
                assert "gpus" in body and "command" in body
                assert elsewhere == [] and errors == []
            finally:
                browser.close()
