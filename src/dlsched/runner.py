"""Composition of a whole experiment: load a trace, select jobs, resolve the cluster, simulate,
and write the run directory. The CLI and the benchmarks call this; it holds no policy logic."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dlsched import __version__
from dlsched.cluster.parse import resolve_cluster
from dlsched.extras import require, require_components
from dlsched.metrics.rundir import write_run
from dlsched.progress import ProgressFn
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.trace import transforms
from dlsched.trace.read import ReadResult, read_trace
from dlsched.trace.schema import Trace
from dlsched.trace.walltime import format_utc, parse_date_or_time


@dataclass(frozen=True)
class Selection:
    """Which jobs of a trace to replay. ``start``/``end`` are submit-time bounds: seconds from
    the trace origin, or dates (YYYY-MM-DD) when the trace has wall-clock times. Applied in
    field order: window, VCs, GPU jobs only, subsample, time scaling, deadlines (``deadlines``
    = ``"LOW:HIGH"``: every job's deadline becomes submit + U(LOW, HIGH) × its run time, and
    with probability ``best_effort`` none; :func:`dlsched.trace.transforms.with_deadlines`
    with the run's seed), workloads (``workloads``: a profiled workload for every GPU job that
    names none, :func:`dlsched.trace.transforms.with_workloads`).

    A selection that leaves no job of a trace that had some raises ValueError naming the
    option: a run of nothing is never a result. Messages name the command-line options."""

    start: str | None = None
    end: str | None = None
    vcs: tuple[str, ...] = ()
    gpu_only: bool = False
    subsample: float | None = None
    submit_scale: float = 1.0
    duration_scale: float = 1.0
    deadlines: str | None = None
    best_effort: float = 0.0
    workloads: str | None = None

    def check(self) -> None:
        """ValueError for values no trace can honour."""
        self.deadline_bounds()
        if self.workloads is not None and self.workloads not in transforms.WORKLOAD_PROFILES:
            raise ValueError(
                f"--workloads {self.workloads}: expected one of "
                f"{', '.join(transforms.WORKLOAD_PROFILES)}"
            )
        if self.subsample is not None:
            if not (self.subsample > 0 and math.isfinite(self.subsample)):
                raise ValueError(
                    "--subsample must be a fraction in (0, 1) or a count of at least 1, "
                    f"got {self.subsample:g}"
                )
            if self.subsample >= 1 and self.subsample != int(self.subsample):
                raise ValueError(
                    f"--subsample {self.subsample:g}: a count of jobs must be a whole number"
                )
        for flag, factor in (
            ("--submit-scale", self.submit_scale),
            ("--duration-scale", self.duration_scale),
        ):
            if not (math.isfinite(factor) and factor > 0):
                raise ValueError(f"{flag} must be a positive number, got {factor:g}")

    def deadline_bounds(self) -> tuple[float, float] | None:
        """``deadlines`` as (LOW, HIGH), None when not given; ValueError naming the flag for a
        value :func:`~dlsched.trace.transforms.with_deadlines` refuses."""
        if self.deadlines is None:
            if self.best_effort != 0.0:
                raise ValueError(
                    "--best-effort is the share of jobs --deadlines leaves without one; give "
                    "--deadlines LOW:HIGH"
                )
            return None
        return parse_deadline_bounds(self.deadlines, self.best_effort)

    def apply(self, trace: Trace, seed: int) -> Trace:
        self.check()
        if self.start is not None or self.end is not None:
            trace = _nonempty(_window(trace, self.start, self.end), trace, self._window_text)
        if self.vcs:
            trace = _nonempty(transforms.filter_vcs(trace, self.vcs), trace, self._vcs_text)
        if self.gpu_only:
            kept = transforms.gpu_jobs_only(trace)
            trace = _nonempty(kept, trace, lambda _: "--gpu-only: the trace has no GPU job")
        if self.subsample is not None:
            if self.subsample >= 1:
                count = int(self.subsample)
                if count > len(trace):
                    raise ValueError(
                        f"--subsample {count}: the selection holds only {len(trace):,} jobs"
                    )
                trace = transforms.subsample(trace, n=count, seed=seed)
            else:
                kept = transforms.subsample(trace, fraction=self.subsample, seed=seed)
                trace = _nonempty(kept, trace, self._subsample_text)
        if self.submit_scale != 1.0 or self.duration_scale != 1.0:
            trace = transforms.scale_time(trace, self.submit_scale, self.duration_scale)
        bounds = self.deadline_bounds()
        if bounds is not None:
            try:
                trace = transforms.with_deadlines(trace, *bounds, seed, self.best_effort)
            except ValueError as e:
                raise ValueError(f"--deadlines {self.deadlines}: {e}") from None
        if self.workloads is not None:
            trace = transforms.with_workloads(trace, self.workloads, seed)
        return trace

    def _window_text(self, trace: Trace) -> str:
        asked = " ".join(
            f"{flag} {value}"
            for flag, value in (("--start", self.start), ("--end", self.end))
            if value is not None
        )
        return f"{asked}: no job of the trace was submitted then; its jobs span {_span(trace)}"

    def _vcs_text(self, trace: Trace) -> str:
        vcs = sorted({v for v in trace.column("vc").to_pylist() if v is not None})
        shown = ", ".join(vcs[:12]) + (f", ... ({len(vcs)} VCs)" if len(vcs) > 12 else "")
        held = f"its VCs: {shown}" if vcs else "its jobs name no VC"
        return f"--vc {','.join(self.vcs)}: no job of the trace is in these VCs; {held}"

    def _subsample_text(self, trace: Trace) -> str:
        return (
            f"--subsample {self.subsample:g} keeps no job of {len(trace):,}; give a larger "
            "fraction or a count"
        )


def parse_deadline_bounds(text: str, best_effort: float = 0.0) -> tuple[float, float]:
    """``LOW:HIGH`` of ``--deadlines`` as two numbers with ``0 < LOW <= HIGH`` (finite), and
    ``best_effort`` a probability; ValueError naming the flag otherwise."""
    low_text, _, high_text = text.partition(":")
    try:
        low, high = float(low_text), float(high_text)
    except ValueError:
        raise ValueError(
            f"--deadlines {text}: expected LOW:HIGH, two numbers (deadline = submit + "
            "U(LOW, HIGH) × run time), e.g. 0.5:1.5"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
        raise ValueError(
            f"--deadlines {text}: expected finite bounds with 0 < LOW <= HIGH, e.g. 0.5:1.5"
        )
    if not 0.0 <= best_effort <= 1.0:
        raise ValueError(f"--best-effort must be a probability within 0..1, got {best_effort:g}")
    return low, high


def _span(trace: Trace) -> str:
    """The submit times of ``trace`` (not empty), as dates when it has wall-clock times."""
    submit = trace.column("submit_time").to_numpy()
    first, last = float(submit.min()), float(submit.max())
    if trace.origin_unix is None:
        return f"{first:,.0f} s to {last:,.0f} s from its start"
    return f"{format_utc(trace.origin_unix + first)} to {format_utc(trace.origin_unix + last)}"


def _nonempty(kept: Trace, before: Trace, explain: Callable[[Trace], str]) -> Trace:
    if len(before) and not len(kept):
        raise ValueError(explain(before))
    return kept


def _as_seconds(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _window(trace: Trace, start: str | None, end: str | None) -> Trace:
    """Seconds when both bounds are numbers (or absent), else wall-clock dates (then a number
    is refused as not a date); a bound left out is open."""
    s, e = _as_seconds(start), _as_seconds(end)
    if (start is None or s is not None) and (end is None or e is not None):
        low, high = -math.inf if s is None else s, math.inf if e is None else e
    elif trace.origin_unix is None:
        asked = " ".join(f"{f} {v}" for f, v in (("--start", start), ("--end", end)) if v)
        raise ValueError(
            f"{asked}: {trace.source} has no wall-clock times (its format gives only seconds "
            "from its start); give the window in seconds"
        )
    else:
        # A bound left out is open: from the trace's first job, or to its last.
        low = -math.inf if start is None else parse_date_or_time(start) - trace.origin_unix
        high = math.inf if end is None else parse_date_or_time(end) - trace.origin_unix
    if high < low:
        raise ValueError(f"--end {end} is before --start {start}")
    return transforms.time_window(trace, low, high)


def _absolute_if_file(text: str) -> str:
    path = Path(text).expanduser()
    return str(path.resolve()) if path.is_file() else text


@dataclass(frozen=True)
class Experiment:
    """Everything needed to rerun a simulation (this is what ``config.json`` holds)."""

    trace: str
    cluster: str
    sim: SimConfig = field(default_factory=SimConfig)
    selection: Selection = field(default_factory=Selection)
    trace_format: str | None = None
    skip_bad_rows: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record. Paths that exist are made absolute, so a rerun works from any
        working directory."""
        sim = self.sim.to_dict()
        for key in ("queues", "queue_map"):
            if sim[key] is not None:
                sim[key] = _absolute_if_file(sim[key])
        return {
            "dlsched_version": __version__,
            "trace": _absolute_if_file(self.trace),
            "trace_format": self.trace_format,
            "skip_bad_rows": self.skip_bad_rows,
            "cluster": _absolute_if_file(self.cluster),
            "selection": asdict(self.selection),
            "sim": sim,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        sel = dict(data.get("selection", {}))
        sel["vcs"] = tuple(sel.get("vcs", ()))
        return cls(
            trace=data["trace"],
            cluster=data["cluster"],
            sim=SimConfig.from_dict(data.get("sim", {})),
            selection=Selection(**sel),
            trace_format=data.get("trace_format"),
            skip_bad_rows=bool(data.get("skip_bad_rows", False)),
        )


def read_selected(exp: Experiment) -> tuple[Trace, ReadResult]:
    """The experiment's trace after selection, and the raw read result (rows read, rejected)."""
    result = read_trace(exp.trace, exp.trace_format, skip_bad_rows=exp.skip_bad_rows)
    check_has_jobs(exp.trace, result)
    return exp.selection.apply(result.trace, exp.sim.seed), result


def check_has_jobs(path: str, result: ReadResult) -> None:
    """ValueError when a read trace holds no job: a header only, or every row rejected (a run
    of nothing is never a result)."""
    if len(result.trace):
        return
    if not result.rows_read:
        raise ValueError(f"{path}: no job rows (the file holds a header only)")
    raise ValueError(
        f"{path}: every one of its {result.rows_read:,} rows was rejected as bad; first: "
        f"{result.errors[0] if result.errors else '?'}"
    )


def load_trace(exp: Experiment) -> Trace:
    """The experiment's trace after selection."""
    return read_selected(exp)[0]


def check_extras(sim: SimConfig) -> None:
    """:class:`dlsched.extras.MissingExtra` if a component ``sim`` names needs an extra that is
    not installed (checked before any work, not when the component is first used)."""
    require_components(
        [
            ("--policy", sim.policy),
            ("--estimator", sim.estimator),
            ("--power-manager", sim.power.manager),
        ]
    )
    if sim.queues is not None:
        require("--queues", "tenancy")


class NothingRan(ValueError):
    """Every job of the trace was set aside: the run measured nothing (the message gives the
    reasons and what to change)."""


def _nothing_ran(summary: dict[str, Any], cluster: str) -> NothingRan:
    reasons: dict[str, int] = summary.get("set_aside_reasons") or {}
    shown = "; ".join(f"{reason} ({count:,} jobs)" for reason, count in reasons.items())
    if any("not in cluster" in reason for reason in reasons):
        fix = (
            f"The jobs name VCs that cluster {cluster!r} has no partition for: simulate on a "
            "cluster with those VCs as partitions (dlsched list clusters) or give "
            "--no-partitions to pool the cluster"
        )
    else:
        fix = (
            f"No job fits cluster {cluster!r}: simulate on a larger cluster (dlsched list "
            "clusters, or a shorthand such as 64x8)"
        )
    return NothingRan(
        f"all {summary['jobs_in_trace']:,} jobs were set aside, none ran: {shown}. {fix}"
    )


def run_experiment(
    exp: Experiment,
    out: str | Path | None = None,
    progress: ProgressFn | None = None,
    force: bool = False,
) -> RunResult:
    """Simulate ``exp``; with ``out``, also write the run directory there (atomically; an
    earlier run there is replaced only with ``force``). The summary records how many trace
    rows were read and how many were rejected as bad (only possible with ``skip_bad_rows``),
    with the first rejection. Raises :class:`NothingRan` (nothing is written) when every job
    was set aside, and :class:`dlsched.extras.MissingExtra` up front when a component needs an
    extra that is not installed."""
    check_extras(exp.sim)
    trace, read = read_selected(exp)
    cluster = resolve_cluster(exp.cluster)
    result = simulate(trace, cluster, exp.sim, progress=progress)
    summary = result.summary
    if summary["jobs_in_trace"] and summary["jobs_set_aside"] == summary["jobs_in_trace"]:
        raise _nothing_ran(summary, exp.cluster)
    summary["trace_rows_read"] = read.rows_read
    summary["trace_rows_rejected"] = len(read.errors)
    summary["trace_first_rejection"] = str(read.errors[0]) if read.errors else None
    if out is not None:
        write_run(
            out,
            result.jobs,
            result.timeline,
            summary,
            exp.to_dict(),
            force,
            result.tenants,
            result.kueue_metrics,
        )
    return result


DEMO_POLICIES = ("fifo", "sjf", "srtf", "tiresias")


def demo_experiments() -> list[tuple[str, Experiment]]:
    """The quick-start grid: Philly VC 0e4a51 (bundled) on its 32 × 8-GPU VC, four policies."""
    from dlsched.trace.bundled import bundled_trace_path

    trace = str(bundled_trace_path("vc_0e4a51"))
    return [
        (policy, Experiment(trace, "32x8", SimConfig(policy=policy))) for policy in DEMO_POLICIES
    ]
