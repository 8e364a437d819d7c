"""A small client of the service's API, used by the CLI.

It finds the service through explicit arguments (``--url``, ``--token-file``), else
``DLSCHED_URL`` and ``DLSCHED_TOKEN`` (or ``DLSCHED_TOKEN_FILE``), else
``http://127.0.0.1:8765/`` and the token file ``state.db.token`` in the current directory (the
defaults of ``dlsched serve``). A refused request (401) says where the token was looked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8765/"
DEFAULT_TOKEN_FILE = Path("state.db.token")


class ClientError(RuntimeError):
    """The service refused a request or could not be reached; the message says why."""


@dataclass(frozen=True)
class Endpoint:
    """Where the client sends its requests: ``url``, the ``token`` (None when none was found;
    GETs need none) and ``token_from``, where the token was looked for, for messages."""

    url: str
    token: str | None
    token_from: str


TOKEN_FIX = (
    "point the client at the token file dlsched serve printed at start-up (by default "
    "<db>.token beside its database) with --token-file PATH or DLSCHED_TOKEN_FILE=PATH"
)


def resolve_endpoint(
    url: str | None, token_file: Path | None, environ: Mapping[str, str] | None = None
) -> Endpoint:
    """The service URL and token (module docstring for the order they are looked for in)."""
    env = os.environ if environ is None else environ
    base = (url or env.get("DLSCHED_URL") or DEFAULT_URL).rstrip("/")
    if token_file is not None:
        return Endpoint(base, _read_token(token_file), f"--token-file {token_file}")
    if env.get("DLSCHED_TOKEN"):
        return Endpoint(base, env["DLSCHED_TOKEN"].strip(), "$DLSCHED_TOKEN")
    if env.get("DLSCHED_TOKEN_FILE"):
        path = Path(env["DLSCHED_TOKEN_FILE"])
        return Endpoint(base, _read_token(path), f"$DLSCHED_TOKEN_FILE ({path})")
    default = DEFAULT_TOKEN_FILE.absolute()
    if DEFAULT_TOKEN_FILE.is_file():
        return Endpoint(base, _read_token(DEFAULT_TOKEN_FILE), f"the default token file {default}")
    return Endpoint(
        base,
        None,
        f"nowhere: no --token-file, no $DLSCHED_TOKEN or $DLSCHED_TOKEN_FILE, and no default "
        f"token file {default}",
    )


def _read_token(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ClientError(f"{path}: cannot read the token file: {exc.strerror}") from None


class ServiceClient:
    """Calls the API at ``url`` with ``token`` (needed for submit and cancel); ``token_from``
    says where the token came from, for the message of a refused request."""

    def __init__(
        self, url: str, token: str | None, timeout: float = 30.0, token_from: str | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.token_from = token_from
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
            raise ClientError(
                f"cannot reach the service at {self.url}: {exc}; is dlsched serve running "
                "there? Point the client elsewhere with --url or DLSCHED_URL"
            ) from None
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            message = f"{method} {path}: HTTP {response.status_code}: {detail}"
            if response.status_code == 401 and self.token_from is not None:
                message += f". The token was taken from {self.token_from}; {TOKEN_FIX}"
            raise ClientError(message)
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
