"""Back ends by name, for the service's ``--backend`` option."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dlsched.backends.base import Backend
from dlsched.backends.fake import FakeBackend
from dlsched.backends.local import LocalBackend
from dlsched.backends.slurm import SlurmBackend

BACKENDS = ("local", "fake", "slurm", "ray")


def create_backend(name: str, root: Path, instance: str, clock: Callable[[], float]) -> Backend:
    """``local``: processes under ``root``; ``fake``: in memory on ``clock``; ``slurm``: batch
    jobs of the Slurm cluster that ``$SLURM_CONF`` (or the system's configuration) names, with
    working directories under ``root`` (see :mod:`dlsched.backends.slurm`). ``instance`` names
    this service's processes (see :mod:`dlsched.backends.local`). ``ray``: the Ray cluster at
    ``$RAY_ADDRESS`` (none: a one-node Ray instance started here), with working directories
    under ``root`` (see :mod:`dlsched.backends.ray_backend`; needs ``dlsched[ray]``)."""
    if name == "local":
        return LocalBackend(root, instance, clock)
    if name == "fake":
        return FakeBackend(clock)
    if name == "slurm":
        return SlurmBackend(root, instance, clock)
    if name == "ray":
        from dlsched.backends.ray_backend import RayBackend  # ray is an optional extra

        return RayBackend(root, instance, clock)
    raise ValueError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
