"""Back ends by name, for the service's ``--backend`` option."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dlsched.backends.base import Backend
from dlsched.backends.fake import FakeBackend
from dlsched.backends.local import LocalBackend

BACKENDS = ("local", "fake")


def create_backend(name: str, root: Path, instance: str, clock: Callable[[], float]) -> Backend:
    """``local``: processes under ``root``; ``fake``: in memory on ``clock``. ``instance``
    names this service's processes (see :mod:`dlsched.backends.local`)."""
    if name == "local":
        return LocalBackend(root, instance, clock)
    if name == "fake":
        return FakeBackend(clock)
    raise ValueError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
