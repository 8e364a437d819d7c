"""Back ends by name, for the service's ``--backend`` option."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from dlsched.backends.base import Backend
from dlsched.backends.fake import FakeBackend
from dlsched.backends.local import LocalBackend
from dlsched.backends.slurm import SlurmBackend
from dlsched.cluster.spec import NodeSpec

BACKENDS = ("local", "fake", "slurm", "ray")


def create_backend(
    name: str,
    root: Path,
    instance: str,
    clock: Callable[[], float],
    ray_address: str | None = None,
    nodes: Sequence[NodeSpec] = (),
) -> Backend:
    """``local``: processes under ``root``; ``fake``: in memory on ``clock``; ``slurm``: batch
    jobs of the Slurm cluster that ``$SLURM_CONF`` (or the system's configuration) names, with
    working directories under ``root`` (see :mod:`dlsched.backends.slurm`). ``instance`` names
    this service's processes (see :mod:`dlsched.backends.local`). ``ray``: the Ray cluster at
    ``ray_address``, else ``$RAY_ADDRESS`` (neither: a one-machine Ray instance started here
    that declares the identity resources of ``nodes``), with working directories under
    ``root`` (see :mod:`dlsched.backends.ray_backend`; needs ``dlsched[ray]``)."""
    if name == "local":
        return LocalBackend(root, instance, clock)
    if name == "fake":
        return FakeBackend(clock)
    if name == "slurm":
        return SlurmBackend(root, instance, clock)
    if name == "ray":
        from dlsched.backends.ray_backend import RayBackend  # ray is an optional extra

        return RayBackend(root, instance, clock, address=ray_address, local_nodes=nodes)
    raise ValueError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
