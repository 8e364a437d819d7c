"""An ASGI layer in front of the API: a ``Host`` check, a bearer-token check, then a body size
limit.

It runs before any routing or body parsing. A request whose ``Host`` header names no allowed
host is answered 421 (a page on another site that rebinds its DNS name to this machine's
address would otherwise read every job's command line through ``GET /jobs``); the allowed
names are the loopback ones by default (:data:`DEFAULT_ALLOWED_HOSTS`) and ``*`` allows any.
An unauthenticated mutation is answered 401 whatever its body, and a body over the limit
(declared or streamed) is answered 413 without being read past the limit. GET, HEAD and
OPTIONS requests need no token, except under ``/jobs`` when the service has tenants
(:mod:`dlsched.service.api.tenants`). The sender the token names is left in the request's
scope under :data:`PRINCIPAL` for the endpoints.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from dlsched.service.api.tenants import Principal, Tokens

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY = 64 * 1024
DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "::1")
"""Host names a service answers by default: the loopback ones."""
ANY_HOST = "*"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PRINCIPAL = "dlsched.principal"
"""The scope key holding the request's :class:`Principal` (absent for a read without token)."""
TENANT_PATHS = ("/jobs",)
"""Paths that, in a service with tenants, answer only requests with a known token."""


async def _reply(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def host_name(header: bytes) -> str:
    """The host of a ``Host`` header without its port, lower case (``[::1]:80`` → ``::1``);
    empty when the header is not ASCII."""
    try:
        text = header.decode("ascii").strip().lower()
    except UnicodeDecodeError:
        return ""
    if text.startswith("["):
        return text[1:].split("]", 1)[0]
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class Guard:
    """Wraps ``app``: 421 for a ``Host`` not in ``allowed_hosts`` (``*``: any), 401 for a
    mutation (or, with tenants, any ``/jobs`` request) without ``Authorization: Bearer
    <token>`` naming one of ``tokens``, 413 for a body over ``max_body`` bytes (declared or
    streamed)."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Tokens,
        max_body: int = DEFAULT_MAX_BODY,
        allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.max_body = max_body
        self.allowed_hosts = frozenset(host_name(h.encode()) for h in allowed_hosts)
        self.any_host = ANY_HOST in allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if not self.any_host and host_name(headers.get(b"host", b"")) not in self.allowed_hosts:
            await _reply(
                send,
                421,
                "this service does not answer for that Host; allowed hosts: "
                + ", ".join(sorted(self.allowed_hosts))
                + " (dlsched serve --allow-host NAME adds one)",
                [],
            )
            return
        principal = self._principal(headers)
        if principal is not None:
            scope[PRINCIPAL] = principal
        elif self._needs_token(scope):
            await _reply(
                send,
                401,
                "authentication required: send 'Authorization: Bearer <token>' "
                "(the token is in the service's token file)",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        declared = headers.get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await _reply(send, 400, "content-length: expected a number of bytes", [])
                return
            if int(declared) > self.max_body:
                await _reply(send, 413, self._too_large(), [])
                return
        if scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        # Bodies are small: read the whole body here (at most max_body bytes), then replay it.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                await _reply(send, 413, self._too_large(), [])
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _principal(self, headers: dict[bytes, bytes]) -> Principal | None:
        auth = headers.get(b"authorization")
        return None if auth is None else self.tokens.identify(auth.decode("latin-1"))

    def _needs_token(self, scope: Scope) -> bool:
        if scope["method"] not in SAFE_METHODS:
            return True
        path = str(scope.get("path", ""))
        return self.tokens.tenanted and any(
            path == p or path.startswith(p + "/") for p in TENANT_PATHS
        )

    def _too_large(self) -> str:
        return f"request body too large: at most {self.max_body} bytes"
