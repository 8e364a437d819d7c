"""Job kinds of a trace: which rows are rigid, elastic or parameter-server jobs, and the
kind-specific state the simulator keeps for each.

A row's ``kind`` column decides; when it is null the kind is inferred: a row with a run time
(``duration``, or ``work`` in seconds) is rigid; one naming an application of the Pollux
profiles with a batch size is elastic; one naming a network of the PS zoo with ``work`` in
samples is a parameter-server job; anything else is rigid (and set aside if it has no run
time). A malformed elastic or PS row is an error naming the trace, the job and the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from dlsched.perf.model import ELASTIC, KIND_NAMES, PS, RIGID
from dlsched.perf.profiles import APPLICATIONS
from dlsched.perf.throughput_tables import TABLE_PREFIX, is_table_application, table_problem

if TYPE_CHECKING:
    from dlsched.ps.job import PsJob


class KindError(ValueError):
    """A trace row cannot be the job kind it is (or is inferred to be)."""


@dataclass(frozen=True)
class KindColumns:
    """The per-row columns the kinds read, as Python lists."""

    kind: Sequence[int]
    application: Sequence[str | None]
    batch_size: Sequence[int | None]
    num_servers: Sequence[int | None]
    max_gpus: Sequence[int | None]
    max_servers: Sequence[int | None]


def row_kind(
    kind: str | None,
    duration: float | None,
    work: float | None,
    work_unit: str | None,
    application: str | None,
    batch_size: int | None,
) -> int:
    """The kind of one row (module docstring)."""
    if kind is not None:
        return KIND_NAMES.index(kind)
    if duration is not None or (work is not None and work_unit in (None, "seconds")):
        return RIGID
    if application is not None and batch_size is not None and application in APPLICATIONS:
        return ELASTIC
    if is_table_application(application) and batch_size is not None and work_unit == "iterations":
        return ELASTIC
    if application is not None and work_unit == "samples":
        # The PS zoo is imported only for a row that may be one of its networks: a rigid
        # trace never loads it.
        from dlsched.ps.zoo import MODEL_NAMES

        if application in MODEL_NAMES:
            return PS
    return RIGID


def kind_columns(table: pa.Table, source: str) -> KindColumns:
    """Every row's kind and the columns elastic and PS jobs read; :class:`KindError` for an
    unknown ``kind`` value."""
    n = table.num_rows
    kind = table.column("kind")
    if kind.null_count == n and table.column("duration").null_count == 0:
        # A plain replay trace (every row has a run time, none names a kind): no row to read.
        nothing: list[None] = [None] * n
        return KindColumns([RIGID] * n, nothing, nothing, nothing, nothing, nothing)
    kinds_text = kind.to_pylist()
    for i, k in enumerate(kinds_text):
        if k is not None and k not in KIND_NAMES:
            job = table.column("job_id")[i].as_py()
            raise KindError(
                f"trace {source}: job {job!r}: kind: {k!r} unknown; expected one of "
                f"{', '.join(KIND_NAMES)}"
            )
    cols = [
        table.column(name).to_pylist()
        for name in ("duration", "work", "work_unit", "application", "batch_size")
    ]
    kinds = [row_kind(k, *row) for k, *row in zip(kinds_text, *cols, strict=True)]
    return KindColumns(
        kinds,
        cols[3],
        cols[4],
        table.column("num_servers").to_pylist(),
        table.column("max_gpus").to_pylist(),
        table.column("max_servers").to_pylist(),
    )


def check_elastic(
    where: str,
    application: str | None,
    gpus: int,
    batch: int | None,
    work_unit: str | None = None,
) -> str:
    """The application of an elastic row; :class:`KindError` naming the field otherwise. A
    table job (``elasticflow/<model>``) needs its work in iterations."""
    if is_table_application(application):
        assert application is not None
        if work_unit != "iterations":
            raise KindError(
                f"{where}: work_unit: {work_unit!r}; a {TABLE_PREFIX}<model> job needs its work "
                "in iterations"
            )
        if batch is not None and batch >= 1:
            problem = table_problem(application, batch)
            if problem is not None:
                raise KindError(f"{where}: application: {problem}")
    elif application is None or application not in APPLICATIONS:
        raise KindError(
            f"{where}: application: {application!r} is not a profiled application; expected "
            f"one of {', '.join(APPLICATIONS)} or {TABLE_PREFIX}<model>"
        )
    if gpus < 1 or batch is None or batch < 1:
        raise KindError(
            f"{where}: num_gpus {gpus} / batch_size {batch}: expected positive integers"
        )
    return application


def ps_job(
    where: str,
    job_id: str,
    submit: float,
    application: str | None,
    batch: int | None,
    samples: float | None,
    workers: int,
    servers: int | None,
    max_workers: int | None,
    max_servers: int | None,
) -> PsJob:
    """The :class:`PsJob` of a PS row; :class:`KindError` naming the field otherwise. Absent
    limits default to the requested shape's (at least 8 workers and 4 PS, as the SMD
    workload)."""
    from dlsched.ps.job import PsJob
    from dlsched.ps.zoo import MODEL_NAMES, network

    if application is None or application not in MODEL_NAMES:
        raise KindError(
            f"{where}: application: {application!r} is not a network of the PS zoo; expected "
            f"one of {', '.join(MODEL_NAMES)}"
        )
    net = network(application)
    servers = servers if servers is not None else max(1, workers // 2)
    try:
        return PsJob(
            job_id,
            net,
            batch if batch is not None else net.batch,
            float(samples) if samples is not None else -1.0,
            submit,
            1.0,
            workers,
            servers,
            max_workers if max_workers is not None else max(8, workers),
            max_servers if max_servers is not None else max(4, servers),
        )
    except ValueError as exc:
        raise KindError(f"{where}: {exc}") from None
