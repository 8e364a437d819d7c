"""A small client of the service's API, used by the CLI.

It finds the service through explicit arguments (``--url``, ``--token-file``), else
``DLSCHED_URL`` and ``DLSCHED_TOKEN`` (or ``DLSCHED_TOKEN_FILE``), else
``http://127.0.0.1:8765/`` and the token file ``state.db.token`` in the current directory (the
defaults of ``dlsched serve``). A refused request (401) says where the token was looked for.

It is built on the standard library's :mod:`http.client`, not on the ``service`` extra: the
machines jobs are submitted from need only ``pip install dlsched``, and ``dlsched submit`` or
``dlsched jobs`` imports nothing beyond it (an HTTP library such as httpx would add a tenth of
a second of imports to every call, and five packages to every install, for one JSON request).
It speaks HTTP/1.1 over one kept-alive connection, ``http://`` or ``https://`` (verified
against the system's certificates), to the URL itself: proxy variables (``HTTP_PROXY``...) are
not used, as the service is reached directly where jobs are submitted.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    """Calls the API at ``url`` (``http://HOST[:PORT][/PREFIX]`` or ``https://...``) with
    ``token`` (needed for submit and cancel), waiting at most ``timeout`` seconds for each
    connection and answer; ``token_from`` says where the token came from, for the message of a
    refused request. Every failure is a :class:`ClientError`: a URL of another scheme (when
    made), a service that cannot be reached or does not answer JSON, or an HTTP error status
    (its message carries the API's ``detail``). Not thread-safe: one client per thread."""

    def __init__(
        self, url: str, token: str | None, timeout: float = 30.0, token_from: str | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.token_from = token_from
        self.timeout = timeout
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ClientError(
                f"{url}: not a service URL; give http://HOST:PORT (or https://...) with --url "
                "or DLSCHED_URL"
            )
        self._scheme = parts.scheme
        self._netloc = parts.netloc
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> http.client.HTTPConnection:
        """The kept-alive connection, or a new one if the service has closed it since (it
        times idle connections out): the check httpx makes before reusing one."""
        conn = self._conn
        if conn is not None and conn.sock is not None:
            readable, _, _ = select.select([conn.sock], [], [], 0)
            if readable:  # end of file (closed by the service) or stray bytes: start anew
                self.close()
        if self._conn is None:
            if self._scheme == "https":
                self._conn = http.client.HTTPSConnection(self._netloc, timeout=self.timeout)
            else:
                self._conn = http.client.HTTPConnection(self._netloc, timeout=self.timeout)
        return self._conn

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """The decoded JSON answer to ``method path`` (``path`` already quoted; ``body`` sent
        as JSON, ``params`` as the query string); :class:`ClientError` otherwise (class
        docstring)."""
        target = self._prefix + path
        if params:
            target += "?" + urllib.parse.urlencode(params)
        headers = dict(self._headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn = self._connection()
            conn.request(method, target, body=payload, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            reason = str(exc) or type(exc).__name__
            raise ClientError(
                f"cannot reach the service at {self.url}: {reason}; is dlsched serve running "
                "there? Point the client elsewhere with --url or DLSCHED_URL"
            ) from None
        if response.will_close:
            self.close()
        text = data.decode("utf-8", errors="replace")
        try:
            answer = json.loads(text)
        except ValueError:
            answer = None
            if response.status < 400:
                raise ClientError(
                    f"{method} {path}: {self.url} answered HTTP {response.status} without "
                    "JSON; is it a dlsched service?"
                ) from None
        if response.status >= 400:
            detail = answer.get("detail", text) if isinstance(answer, dict) else text
            message = f"{method} {path}: HTTP {response.status}: {detail}"
            if response.status == 401 and self.token_from is not None:
                message += f". The token was taken from {self.token_from}; {TOKEN_FIX}"
            raise ClientError(message)
        return answer

    def submit(self, body: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/jobs", body=dict(body))
        return result

    def dry_run(self, body: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/jobs/dry-run", body=dict(body))
        return result

    def jobs(self, state: str | None = None, user: str | None = None) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("state", state), ("user", user)) if v}
        result: list[dict[str, Any]] = self._call("GET", "/jobs", params=params)
        return result

    def job(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/jobs/{_segment(job_id)}")
        return result

    def cancel(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("DELETE", f"/jobs/{_segment(job_id)}")
        return result

    def cluster(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/cluster")
        return result

    def metrics(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/metrics")
        return result


def _segment(text: str) -> str:
    """``text`` as one segment of a URL path (a ``/`` in a job id cannot reach another route)."""
    return urllib.parse.quote(text, safe="")
