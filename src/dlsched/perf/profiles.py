"""Measured training profiles of six applications (bundled under ``dlsched/data/profiles``).

One :class:`AppProfile` per application and GPU *variant* holds what was measured:

- step samples: seconds per optimizer step (``step_time``) and the part of it spent
  synchronizing gradients (``sync_time``) for a number of nodes, replicas (one per GPU) and a
  local (per-replica) batch size. Rows of ``placements.csv`` name the replicas on each node as a
  digit string ("13" = 1 replica on one node, 3 on another); rows of ``scalability.csv`` give
  only the node and replica counts.
- validation curves: per global batch size, one row per epoch with the statistically efficient
  progress, the iteration, a quality metric and the gradient square norm and variance.

Placement strings are necklaces: every measured string is the smallest of its cyclic
rotations ("132" and "123" are both measured and differ; "213" never appears), so a list of
per-node counts is looked up by :func:`canonical_placement`.

Variants (file suffix in the Sia artifact → GPU type, GPUs per node):
``t4`` (Pollux files, identical to Sia's unsuffixed and ``-aws`` files) → T4, 4;
``azure`` → V100, 8; ``dgx`` and ``dgx-ext`` → A100, 8 (``dgx-ext`` profiles more batch sizes);
``quad`` → RTX6000, 4; ``rtx`` → RTX2080Ti, 8. The validation curves are the same for every
variant and are read from the Pollux files.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Literal

APPLICATIONS: tuple[str, ...] = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
"""The profiled applications."""

ProfileSource = Literal["pollux", "sia"]


@dataclass(frozen=True, slots=True)
class GpuVariant:
    """A profiled machine type."""

    name: str  # the variant key (the Sia file suffix; "t4" for the Pollux files)
    gpu_type: str  # dlsched GPU type name, as in ClusterSpec node types
    gpus_per_node: int
    machine: str  # what was measured


VARIANTS: Mapping[str, GpuVariant] = MappingProxyType(
    {
        "t4": GpuVariant("t4", "T4", 4, "AWS g4dn.12xlarge, 4 x T4 (the Pollux testbed)"),
        "azure": GpuVariant("azure", "V100", 8, "Azure ND40rs_v2, 8 x V100 32 GB NVLink"),
        "dgx": GpuVariant("dgx", "A100", 8, "DGX-A100, 8 x A100 40 GB, few batch sizes"),
        "dgx-ext": GpuVariant("dgx-ext", "A100", 8, "DGX-A100, 8 x A100 40 GB, more batch sizes"),
        "quad": GpuVariant("quad", "RTX6000", 4, "4 x Quadro RTX 6000 workstation"),
        "rtx": GpuVariant("rtx", "RTX2080Ti", 8, "8 x RTX 2080 Ti server"),
    }
)
"""Every profiled variant by key."""

SOURCE_VARIANTS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"pollux": ("t4",), "sia": ("t4", "azure", "dgx", "dgx-ext", "quad", "rtx")}
)
"""The variants each published artifact measured."""


@dataclass(frozen=True, slots=True)
class StepSample:
    """One measured configuration."""

    placement: tuple[int, ...]  # replicas per node (canonical rotation); () if not given
    nodes: int  # len(placement) when a placement is given
    replicas: int  # sum(placement) when a placement is given
    local_bsz: int  # examples per replica per micro-step
    step_time: float  # seconds per optimizer step, gradient synchronization included
    sync_time: float  # seconds of step_time spent synchronizing gradients


@dataclass(frozen=True, slots=True)
class ValidationCurve:
    """Training at one global batch size; index e = the end of epoch e + 1."""

    global_bsz: int
    progress: tuple[float, ...]  # statistically efficient steps (at the initial batch) so far
    iteration: tuple[int, ...]  # optimizer steps so far
    metric: tuple[float, ...]  # validation metric after the epoch
    grad_sqr: tuple[float, ...]  # squared norm of the true gradient (estimate)
    grad_var: tuple[float, ...]  # gradient variance, normalized to the initial batch size


@dataclass(frozen=True, slots=True)
class AppProfile:
    """Everything measured for one application on one variant."""

    app: str
    variant: str
    gpu_type: str
    gpus_per_node: int
    placements: tuple[StepSample, ...]  # from placements*.csv, file order
    scalability: tuple[StepSample, ...]  # from scalability*.csv, file order
    validation: tuple[ValidationCurve, ...]  # sorted by global batch size

    @property
    def samples(self) -> tuple[StepSample, ...]:
        """All step samples, placements first."""
        return self.placements + self.scalability

    @property
    def local_bsz_range(self) -> tuple[int, int]:
        """Smallest and largest measured local batch size."""
        sizes = [s.local_bsz for s in self.samples]
        return min(sizes), max(sizes)

    @property
    def initial_bsz(self) -> int:
        """The smallest validated global batch size (scale 1 of the efficiency model)."""
        return self.validation[0].global_bsz

    @property
    def max_global_bsz(self) -> int:
        """The largest validated global batch size."""
        return self.validation[-1].global_bsz


def parse_placement(text: str) -> tuple[int, ...]:
    """Per-node replica counts of a placement string: one decimal digit per node."""
    if not text.isdigit():
        raise ValueError(f"bad placement string {text!r}: expected one digit per node")
    return tuple(int(c) for c in text)


def canonical_placement(counts: Iterable[int]) -> tuple[int, ...]:
    """The lookup key of per-node replica counts: zeros dropped, then the lexicographically
    smallest cyclic rotation (the form every measured placement string has)."""
    given = tuple(counts)
    if any(c < 0 for c in given):
        raise ValueError(f"negative replica count in {given!r}")
    kept = tuple(c for c in given if c > 0)
    if not kept:
        return ()
    return min(kept[i:] + kept[:i] for i in range(len(kept)))


def profiles_dir() -> Path:
    """The directory of bundled profiles (``pollux/`` and ``sia/`` below it)."""
    directory = resources.files("dlsched") / "data" / "profiles"
    if not isinstance(directory, Path):
        raise RuntimeError(f"dlsched's bundled data is not on the file system: {directory}")
    return directory


@functools.cache
def load_profile(app: str, variant: str = "t4") -> AppProfile:
    """The bundled profile of ``app`` on ``variant`` (see :data:`VARIANTS`).

    Raises ValueError for an unknown application or variant.
    """
    if app not in APPLICATIONS:
        raise ValueError(f"unknown application {app!r}; known: {', '.join(APPLICATIONS)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown GPU variant {variant!r}; known: {', '.join(VARIANTS)}")
    root = profiles_dir()
    if variant == "t4":
        step_dir, suffix = root / "pollux" / app, ""
    else:
        step_dir, suffix = root / "sia" / app, f"-{variant}"
    info = VARIANTS[variant]
    return AppProfile(
        app=app,
        variant=variant,
        gpu_type=info.gpu_type,
        gpus_per_node=info.gpus_per_node,
        placements=_read_steps(step_dir / f"placements{suffix}.csv", with_placement=True),
        scalability=_read_steps(step_dir / f"scalability{suffix}.csv", with_placement=False),
        validation=_read_validation(root / "pollux" / app),
    )


def profile_for_gpu_type(app: str, gpu_type: str) -> AppProfile:
    """The profile of ``app`` on GPU type ``gpu_type`` (case-insensitive); A100 uses the
    extended DGX profile."""
    wanted = gpu_type.strip().casefold()
    for key in ("t4", "azure", "dgx-ext", "quad", "rtx"):
        if VARIANTS[key].gpu_type.casefold() == wanted:
            return load_profile(app, key)
    known = sorted({v.gpu_type for v in VARIANTS.values()})
    raise ValueError(f"no profile for GPU type {gpu_type!r}; profiled: {', '.join(known)}")


def _int(text: str) -> int:
    # Some Sia files write batch sizes as "20.0".
    value = float(text)
    if value != int(value):
        raise ValueError(f"non-integral batch size {text!r}")
    return int(value)


def _read_steps(path: Path, *, with_placement: bool) -> tuple[StepSample, ...]:
    samples = []
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if with_placement:
                counts = parse_placement(row["placement"])
                placement = canonical_placement(counts)
                nodes, replicas = len(placement), sum(placement)
            else:
                placement = ()
                nodes, replicas = _int(row["num_nodes"]), _int(row["num_replicas"])
            samples.append(
                StepSample(
                    placement=placement,
                    nodes=nodes,
                    replicas=replicas,
                    local_bsz=_int(row["local_bsz"]),
                    step_time=float(row["step_time"]),
                    sync_time=float(row["sync_time"]),
                )
            )
    return tuple(samples)


_VALIDATION_FILE = re.compile(r"validation-(\d+)\.csv")


def _read_validation(directory: Path) -> tuple[ValidationCurve, ...]:
    curves = []
    for path in directory.iterdir():
        match = _VALIDATION_FILE.fullmatch(path.name)
        if match is None:
            continue
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        curves.append(
            ValidationCurve(
                global_bsz=int(match.group(1)),
                progress=tuple(float(r["progress"]) for r in rows),
                iteration=tuple(_int(r["iteration"]) for r in rows),
                metric=tuple(float(r["metric"]) for r in rows),
                grad_sqr=tuple(float(r["grad_sqr"]) for r in rows),
                grad_var=tuple(float(r["grad_var"]) for r in rows),
            )
        )
    if not curves:
        raise FileNotFoundError(f"no validation-<batch>.csv in {directory}")
    return tuple(sorted(curves, key=lambda c: c.global_bsz))
