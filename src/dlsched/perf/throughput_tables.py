"""Measured throughput tables of the ElasticFlow evaluation: iterations per second by GPU count.

ElasticFlow (Gu et al., ASPLOS'23) describes a job by a model, a global batch size and a number
of iterations, and moves it forward by ``throughput[model][batch][g]`` iterations per second
while it holds ``g`` GPUs. The tables (``data/profiles/elasticflow/<class>/<model>.csv``, one
row per global batch, columns 1, 2, 4, ..., 64 GPUs) are strong-scaling curves measured on
A100 GPUs by the ElasticFlow authors and on T4 GPUs by the Pollux authors; an empty, ``nan``
or 0 cell means the job cannot run at that size.

A job of such a table is an elastic job whose ``application`` is ``elasticflow/<model>``
(:data:`TABLE_PREFIX`). It runs only at the tables' GPU counts and only on GPU types that have
a table: every other size or type is refused, not extrapolated. Which table a node's GPUs read
follows its profile variant (:func:`table_class`).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

TABLE_PREFIX = "elasticflow/"
"""The ``application`` prefix of a job described by a throughput table."""
TABLE_GPUS = (1, 2, 4, 8, 16, 32, 64)
"""The GPU counts the tables were measured at (a job runs only at these)."""
TABLE_CLASSES = ("A100", "T4")
_VARIANT_CLASS = {"dgx": "A100", "dgx-ext": "A100", "t4": "T4"}
_MAX_ROWS = 64


class TableError(ValueError):
    """A job or GPU type the throughput tables do not describe."""


def is_table_application(application: str | None) -> bool:
    return application is not None and application.startswith(TABLE_PREFIX)


def table_class(variant: str) -> str | None:
    """The table class (``A100``, ``T4``) of a profile variant, None if it has no tables."""
    return _VARIANT_CLASS.get(variant)


@dataclass(frozen=True, slots=True)
class ThroughputCurve:
    """Iterations per second of one model at one global batch on one GPU class, by GPU count
    (only the runnable counts of :data:`TABLE_GPUS` are keys)."""

    model: str
    gpu_class: str
    global_bsz: int
    rates: tuple[tuple[int, float], ...]

    def rate(self, gpus: int) -> float | None:
        """Iterations per second at ``gpus`` GPUs; None where the table has no measurement."""
        for count, value in self.rates:
            if count == gpus:
                return value
        return None

    @property
    def sizes(self) -> tuple[int, ...]:
        """The runnable GPU counts, ascending."""
        return tuple(c for c, _ in self.rates)

    @property
    def largest(self) -> int:
        return self.rates[-1][0]


@cache
def _table(gpu_class: str, model: str) -> dict[int, ThroughputCurve] | None:
    """The curves of ``model`` on ``gpu_class`` by global batch; None without a table."""
    folder = resources.files("dlsched") / "data" / "profiles" / "elasticflow" / gpu_class
    entry = folder / f"{model}.csv"
    if not entry.is_file():
        return None
    curves: dict[int, ThroughputCurve] = {}
    rows = list(csv.reader(entry.read_text(encoding="utf-8").splitlines()))
    header = rows[0]
    counts = [int(c) for c in header[1:]]
    for row in rows[1 : _MAX_ROWS + 1]:
        if not row:
            continue
        batch = int(row[0])
        rates = []
        for count, cell in zip(counts, row[1:], strict=False):
            value = float(cell) if cell.strip() else math.nan
            if math.isfinite(value) and value > 0:
                rates.append((count, value))
        if rates:
            curves[batch] = ThroughputCurve(model, gpu_class, batch, tuple(rates))
    return curves


def table_models(gpu_class: str) -> tuple[str, ...]:
    """The models with a table on ``gpu_class``, by name."""
    folder = resources.files("dlsched") / "data" / "profiles" / "elasticflow" / gpu_class
    return tuple(sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".csv")))


def throughput_curve(application: str, global_bsz: int, gpu_class: str) -> ThroughputCurve:
    """The curve of a table job (``elasticflow/<model>`` at ``global_bsz``) on ``gpu_class``;
    :class:`TableError` naming what is missing otherwise."""
    if not is_table_application(application):
        raise TableError(f"application {application!r} is not {TABLE_PREFIX}<model>")
    model = application[len(TABLE_PREFIX) :]
    if gpu_class not in TABLE_CLASSES:
        raise TableError(
            f"no ElasticFlow throughput tables for GPU class {gpu_class!r}; tables exist for "
            f"{', '.join(TABLE_CLASSES)}"
        )
    curves = _table(gpu_class, model)
    if curves is None:
        raise TableError(
            f"{application}: no {gpu_class} throughput table; {gpu_class} tables: "
            f"{', '.join(table_models(gpu_class))}"
        )
    curve = curves.get(global_bsz)
    if curve is None:
        raise TableError(
            f"{application}: global batch {global_bsz} not in the {gpu_class} table; "
            f"measured: {', '.join(str(b) for b in sorted(curves))}"
        )
    return curve


def table_problem(application: str, global_bsz: int) -> str | None:
    """Why no table of any GPU class describes ``application`` at ``global_bsz`` (None if one
    does)."""
    problems = []
    for gpu_class in TABLE_CLASSES:
        try:
            throughput_curve(application, global_bsz, gpu_class)
            return None
        except TableError as exc:
            problems.append(str(exc))
    return "; ".join(problems)


def elasticflow_max_gpus(curve: ThroughputCurve) -> int:
    """The largest GPU count ElasticFlow's scheduler gives a job of ``curve`` (the per-model
    limits of the ElasticFlow artifact's simulator, pkusys/ElasticFlow commit 04a0109a, as
    summarised in the shared traces' README), never beyond the table's largest runnable count.
    Baselines instead use :func:`baseline_max_gpus`."""
    m, b = curve.model, curve.global_bsz
    if curve.gpu_class == "A100":
        limits = {
            ("gpt2", 128): 16,
            ("gpt2", 256): 32,
            ("bert", 64): 8,
            ("bert", 128): 16,
            ("inception3", 64): 16,
            ("inception3", 128): 32,
            ("resnet50", 64): 32,
            ("vgg16", 64): 32,
        }
        cap = b if m == "deepspeech2" else limits.get((m, b), min(b, 64))
    else:
        by_model = {"bert": 16, "cifar10": 16, "yolov3": 4, "ncf": 1}
        cap = 32 if (m, b) == ("deepspeech2", 320) else by_model.get(m, 64)
    return max([c for c in curve.sizes if c <= cap], default=curve.sizes[0])


def baseline_max_gpus(curve: ThroughputCurve) -> int:
    """The largest GPU count a baseline gives a job of ``curve``: the largest runnable column,
    capped at 64 and at the global batch (one example per GPU at least)."""
    cap = min(64, curve.global_bsz)
    return max([c for c in curve.sizes if c <= cap], default=curve.sizes[0])
