"""A small client of the service's API, used by the CLI.

It finds the service through explicit arguments, else ``DLSCHED_URL`` and ``DLSCHED_TOKEN``
(or ``DLSCHED_TOKEN_FILE``), else ``http://127.0.0.1:8765/`` and the token file beside
``state.db`` in the current directory (the defaults of ``dlsched serve``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8765/"
DEFAULT_TOKEN_FILE = Path("state.db.token")


class ClientError(RuntimeError):
    """The service refused a request or could not be reached; the message says why."""


def resolve_endpoint(
    url: str | None, token_file: Path | None, environ: Mapping[str, str] | None = None
) -> tuple[str, str | None]:
    """The service URL and token (None when none is found; GETs need none)."""
    env = os.environ if environ is None else environ
    base = url or env.get("DLSCHED_URL") or DEFAULT_URL
    token: str | None = None
    if token_file is not None:
        token = _read_token(token_file)
    elif env.get("DLSCHED_TOKEN"):
        token = env["DLSCHED_TOKEN"].strip()
    elif env.get("DLSCHED_TOKEN_FILE"):
        token = _read_token(Path(env["DLSCHED_TOKEN_FILE"]))
    elif DEFAULT_TOKEN_FILE.is_file():
        token = _read_token(DEFAULT_TOKEN_FILE)
    return base.rstrip("/"), token


def _read_token(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ClientError(f"{path}: cannot read the token file: {exc.strerror}") from None


class ServiceClient:
    """Calls the API at ``url`` with ``token`` (needed for submit and cancel)."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(f"cannot reach the service at {self.url}: {exc}") from None
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise ClientError(f"{method} {path}: HTTP {response.status_code}: {detail}")
        return response.json()

    def submit(self, body: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/jobs", json=dict(body))
        return result

    def jobs(self, state: str | None = None, user: str | None = None) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("state", state), ("user", user)) if v}
        result: list[dict[str, Any]] = self._call("GET", "/jobs", params=params)
        return result

    def job(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/jobs/{job_id}")
        return result

    def cancel(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("DELETE", f"/jobs/{job_id}")
        return result

    def cluster(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/cluster")
        return result

    def metrics(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/metrics")
        return result
