"""Pure functions from a :class:`Trace` to a new Trace: selections, sampling and time changes.

None of them modifies its input. Selections keep the submit order (the input is sorted, and every
selection keeps a subsequence), and they keep the times as they are: use :func:`rebase` to make the
first kept job arrive at 0.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dlsched.trace.schema import Trace, sort_by_submit
from dlsched.trace.walltime import parse_date_or_time

_ABSOLUTE_TIMES = ("submit_time", "start_time", "end_time", "deadline")


def time_window(trace: Trace, start: float, end: float) -> Trace:
    """The jobs submitted in ``[start, end)`` (seconds on the trace's own clock).

    Raises ValueError when ``end < start``; ``end == start`` gives an empty trace.
    """
    if not start <= end:
        raise ValueError(f"time window end {end} is before its start {start}")
    submit = trace.column("submit_time")
    keep = pc.and_(pc.greater_equal(submit, start), pc.less(submit, end))
    return _with_table(trace, trace.table.filter(keep))


def window_by_dates(trace: Trace, start: str, end: str) -> Trace:
    """The jobs submitted from wall-clock ``start`` (inclusive) to ``end`` (exclusive).

    Dates are ``YYYY-MM-DD`` (midnight) or ``YYYY-MM-DD HH:MM:SS``, read as UTC like the traces'
    own wall times. Raises ValueError when the trace has no wall-clock origin (its format gave
    only relative times) or a date does not parse.
    """
    if trace.origin_unix is None:
        raise ValueError(
            f"trace {trace.source!r} has no wall-clock origin; use time_window with seconds"
        )
    return time_window(
        trace,
        parse_date_or_time(start) - trace.origin_unix,
        parse_date_or_time(end) - trace.origin_unix,
    )


def filter_vcs(trace: Trace, vcs: Iterable[str]) -> Trace:
    """The jobs whose virtual cluster is one of ``vcs`` (jobs without a VC are dropped)."""
    if isinstance(vcs, str):
        raise TypeError("vcs must be a collection of VC names, not one string")
    wanted = pa.array(sorted(set(vcs)), type=pa.string())
    keep = pc.fill_null(pc.is_in(trace.column("vc"), value_set=wanted), False)
    return _with_table(trace, trace.table.filter(keep))


def gpu_jobs_only(trace: Trace) -> Trace:
    """The jobs that ask for at least one GPU (drops CPU jobs and pods)."""
    return _with_table(trace, trace.table.filter(pc.greater_equal(trace.column("num_gpus"), 1)))


def subsample(
    trace: Trace, *, fraction: float | None = None, n: int | None = None, seed: int = 0
) -> Trace:
    """A uniform random subset of the jobs, without replacement, in submit order.

    Give exactly one of ``fraction`` (0..1; keeps ``round(fraction * len(trace))`` jobs) or ``n``
    (0..len(trace)). The same ``seed`` and input always give the same subset.
    """
    total = len(trace)
    if (fraction is None) == (n is None):
        raise ValueError("give exactly one of fraction and n")
    if fraction is not None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be within 0..1, got {fraction}")
        n = round(fraction * total)
    assert n is not None
    if not 0 <= n <= total:
        raise ValueError(f"cannot keep {n} of {total} jobs")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(total, size=n, replace=False))
    return _with_table(trace, trace.table.take(pa.array(chosen, type=pa.int64())))


def scale_time(trace: Trace, submit_factor: float = 1.0, duration_factor: float = 1.0) -> Trace:
    """Multiply submit times by ``submit_factor`` and run times by ``duration_factor``.

    ``submit_factor < 1`` packs the arrivals closer (a heavier load); ``duration_factor`` scales
    ``duration`` and any ``work`` counted in seconds (work in iterations, samples or epochs is a
    job's size, not a time, and is kept). A deadline keeps its slack in proportion to the run
    time: ``submit' + (deadline - submit) × duration_factor``. Factors must be finite and
    positive. When any factor is not 1, the original cluster's ``start_time``/``end_time`` no
    longer describe the trace and become null; when ``submit_factor`` is not 1 the wall-clock
    origin no longer maps submit times to dates and becomes None.
    """
    for name, factor in (("submit_factor", submit_factor), ("duration_factor", duration_factor)):
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"{name} must be finite and positive, got {factor}")
    if submit_factor == 1.0 and duration_factor == 1.0:
        return trace
    table = trace.table
    n = table.num_rows
    work = table.column("work")
    in_seconds = pc.fill_null(pc.equal(table.column("work_unit"), "seconds"), False)
    submit = table.column("submit_time")
    slack = pc.multiply(pc.subtract(table.column("deadline"), submit), duration_factor)
    columns = {
        "submit_time": pc.multiply(submit, submit_factor),
        "deadline": pc.add(pc.multiply(submit, submit_factor), slack),
        "duration": pc.multiply(table.column("duration"), duration_factor),
        "work": pc.if_else(in_seconds, pc.multiply(work, duration_factor), work),
        "start_time": pa.nulls(n, pa.float64()),
        "end_time": pa.nulls(n, pa.float64()),
    }
    origin = trace.origin_unix if submit_factor == 1.0 else None
    return dataclasses.replace(trace, table=_set_columns(table, columns), origin_unix=origin)


def with_deadlines(
    trace: Trace, low: float, high: float, seed: int, best_effort: float = 0.0
) -> Trace:
    """Every job's deadline drawn as ElasticFlow's trace generator draws them:
    ``submit + U(low, high) × duration``, ``duration`` being the job's run time at its requested
    GPUs (``low = high`` gives every job the same slack ratio).

    The deadlines the trace had are all replaced. A job without a run time (a null ``duration``,
    or 0) gets none (null), as does, with probability ``best_effort``, any job: it becomes best
    effort. The draws come from ``numpy.random.default_rng(seed)`` in the trace's (submit) order:
    the same trace, bounds and seed always give the same deadlines, and ``best_effort`` changes
    which jobs have one, not their values. ValueError for a bound that is not finite, ``low <= 0``,
    ``high < low``, ``best_effort`` outside 0..1, or a deadline beyond
    :data:`~dlsched.trace.checks.MAX_SECONDS`.
    """
    from dlsched.trace.checks import MAX_SECONDS

    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"deadline bounds must be finite, got {low}:{high}")
    if not low > 0:
        raise ValueError(f"the lower deadline bound must be positive, got {low}")
    if not high >= low:
        raise ValueError(f"the upper deadline bound {high} is below the lower one {low}")
    if not 0.0 <= best_effort <= 1.0:
        raise ValueError(f"best_effort must be a probability within 0..1, got {best_effort}")
    table = trace.table
    n = table.num_rows
    rng = np.random.default_rng(seed)
    factors = rng.uniform(low, high, n)
    no_deadline = rng.random(n) < best_effort
    submit = table.column("submit_time").to_numpy()
    duration = pc.fill_null(table.column("duration"), 0.0).to_numpy()
    deadline = submit + factors * duration
    # A deadline must come after its submission: none for a job without a run time (or one so
    # short that the sum rounds back to the submit time).
    no_deadline |= ~(deadline > submit)
    late = np.flatnonzero(~no_deadline & (deadline > MAX_SECONDS))
    if late.size:
        i = int(late[0])
        raise ValueError(
            f"job {table.column('job_id')[i].as_py()!r}: deadline {deadline[i]:g} s is beyond "
            f"the limit of {MAX_SECONDS:g} s (the upper bound {high:g} is too large)"
        )
    values = pa.array(deadline, type=pa.float64(), mask=no_deadline)
    return _with_table(trace, _set_columns(table, {"deadline": values}))


def rebase(trace: Trace) -> Trace:
    """Shift all times so that the first job is submitted at 0; the origin moves with them."""
    if len(trace) == 0:
        return trace
    shift = float(trace.column("submit_time")[0].as_py())
    if shift == 0.0:
        return trace
    table = trace.table
    columns = {name: pc.subtract(table.column(name), shift) for name in _ABSOLUTE_TIMES}
    origin = None if trace.origin_unix is None else trace.origin_unix + shift
    return dataclasses.replace(trace, table=_set_columns(table, columns), origin_unix=origin)


def _set_columns(table: pa.Table, columns: dict[str, pa.ChunkedArray | pa.Array]) -> pa.Table:
    for name, values in columns.items():
        table = table.set_column(
            table.schema.get_field_index(name), table.schema.field(name), values
        )
    return table


def _with_table(trace: Trace, table: pa.Table) -> Trace:
    """``trace`` with a new table (already sorted), same source and origin."""
    return dataclasses.replace(trace, table=table)


def merge_traces(named: Sequence[tuple[str, Trace]], source: str = "merged") -> Trace:
    """One trace of several, each rebased to start at 0 and its job ids prefixed with its name
    and ``:`` (so ids stay unique); rows keep every field, ``kind`` included, and are ordered by
    submit time (ties: in the order given). ValueError for a name used twice or empty."""
    names = [name for name, _ in named]
    if not named or len(set(names)) != len(names) or any(not n for n in names):
        raise ValueError(f"merge needs distinct, non-empty names; got {names}")
    tables = []
    for name, trace in named:
        table = rebase(trace).table
        ids = pc.binary_join_element_wise(name, table.column("job_id"), ":")
        tables.append(_set_columns(table, {"job_id": ids}))
    merged = pa.concat_tables(tables)
    return Trace(sort_by_submit(merged), source)


WORKLOAD_PROFILES = ("lucid",)
"""Co-location profiles :func:`with_workloads` draws from."""


def with_workloads(trace: Trace, profiles: str, seed: int) -> Trace:
    """Every GPU job that names no ``application`` gets a workload drawn uniformly from the
    profiled workloads of ``profiles`` (``lucid``: the 66 model × batch size × precision runs of
    the Lucid artifact): its ``application`` (the model), ``batch_size`` and ``amp``. Jobs that
    name an application, and CPU-only jobs, are unchanged. Lucid annotated each Venus job with
    one of these workloads by its (unreleased) job name; a uniform draw stands in for that
    mapping. Draws come from ``numpy.random.default_rng(seed)`` in the trace's order.
    ValueError for unknown ``profiles``."""
    if profiles not in WORKLOAD_PROFILES:
        raise ValueError(
            f"unknown workload profiles {profiles!r}; expected one of "
            f"{', '.join(WORKLOAD_PROFILES)}"
        )
    from dlsched.perf.interference import lucid_interference

    choices = sorted(lucid_interference().profiles)
    table = trace.table
    n = table.num_rows
    pick = np.random.default_rng(seed).integers(0, len(choices), n)
    given = table.column("application").to_pylist()
    gpus = table.column("num_gpus").to_pylist()
    keep = [a is not None or g == 0 for a, g in zip(given, gpus, strict=True)]
    old_batch = table.column("batch_size").to_pylist()
    old_amp = table.column("amp").to_pylist()
    drawn = [choices[int(i)] for i in pick]
    columns = {
        "application": pa.array(
            [a if k else w.model for a, k, w in zip(given, keep, drawn, strict=True)], pa.string()
        ),
        "batch_size": pa.array(
            [b if k else w.batch_size for b, k, w in zip(old_batch, keep, drawn, strict=True)],
            pa.int64(),
        ),
        "amp": pa.array(
            [a if k else w.amp for a, k, w in zip(old_amp, keep, drawn, strict=True)], pa.bool_()
        ),
    }
    return _with_table(trace, _set_columns(table, columns))
