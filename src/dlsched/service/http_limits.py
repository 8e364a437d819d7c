"""The HTTP server's resource bounds: what a client can hold of the service and for how long.

- At most ``max_connections`` connections are open at once; one more is closed as soon as it is
  accepted (no file descriptor is held for it), so idle clients can never use up the process's
  descriptors, which the control loop needs for the store and the back end.
- A connection must deliver a complete request (headers and body) within ``request_timeout_s``
  of being opened, or of its previous response: else it is closed. This bounds slow and idle
  clients alike (uvicorn alone times out only idle keep-alive connections that already sent a
  request).
- An idle keep-alive connection is closed after ``keep_alive_s``; a request's headers may not
  exceed ``max_header_bytes`` (h11's incomplete-event limit: larger gets 400); uvicorn's
  ``limit_concurrency`` (503 beyond it) is set just above the connection cap, so it bounds the
  requests in flight and never refuses a connection the cap let in.

The control loop runs in its own thread (:mod:`dlsched.service.control.loop`): the API's event
loop never runs it, so a flood of requests slows answers, not scheduling.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

FD_RESERVE = 256
"""Descriptors kept free of HTTP connections for the store, the back end and job files."""


@dataclass(frozen=True)
class HttpLimits:
    """See the module docstring."""

    max_connections: int = 1000
    request_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    max_header_bytes: int = 64 * 1024

    def fitted(self) -> HttpLimits:
        """These limits with ``max_connections`` lowered, if needed, to leave
        :data:`FD_RESERVE` descriptors free under the process's soft RLIMIT_NOFILE (raised
        to the hard limit first)."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or hard > soft:
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (ValueError, OSError):
                pass
        room = max(16, soft - FD_RESERVE)
        if self.max_connections <= room:
            return self
        return HttpLimits(room, self.request_timeout_s, self.keep_alive_s, self.max_header_bytes)


def protocol_class(limits: HttpLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the connection cap and request deadline of ``limits``."""

    class LimitedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections:
                transport.abort()
                return
            self._arm_deadline()

        def _arm_deadline(self) -> None:
            self._deadline = self.loop.call_later(limits.request_timeout_s, self._too_slow)

        def _too_slow(self) -> None:
            # Their state is DONE once a complete request was read (it is being answered).
            if self.conn.their_state is not h11.DONE and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            deadline = getattr(self, "_deadline", None)
            if deadline is not None:
                deadline.cancel()
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_deadline()

        def connection_lost(self, exc: Exception | None) -> None:
            deadline = getattr(self, "_deadline", None)
            if deadline is not None:
                deadline.cancel()
            super().connection_lost(exc)

    return LimitedH11Protocol


def server_config(app: Any, limits: HttpLimits) -> uvicorn.Config:
    """The uvicorn configuration of the service's API under ``limits``."""
    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        http=protocol_class(limits),
        limit_concurrency=limits.max_connections + 1,
        timeout_keep_alive=max(1, round(limits.keep_alive_s)),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        backlog=2048,
    )
