"""Composition of a whole experiment: load a trace, select jobs, resolve the cluster, simulate,
and write the run directory. The CLI and the benchmarks call this; it holds no policy logic."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dlsched import __version__
from dlsched.cluster.parse import resolve_cluster
from dlsched.metrics.rundir import write_run
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import ProgressFn, RunResult, simulate
from dlsched.trace import transforms
from dlsched.trace.read import ReadResult, read_trace
from dlsched.trace.schema import Trace


@dataclass(frozen=True)
class Selection:
    """Which jobs of a trace to replay. ``start``/``end`` are submit-time bounds: seconds from
    the trace origin, or dates (YYYY-MM-DD) when the trace has wall-clock times. Applied in
    field order: window, VCs, GPU jobs only, subsample, time scaling."""

    start: str | None = None
    end: str | None = None
    vcs: tuple[str, ...] = ()
    gpu_only: bool = False
    subsample: float | None = None
    submit_scale: float = 1.0
    duration_scale: float = 1.0

    def apply(self, trace: Trace, seed: int) -> Trace:
        if self.start is not None or self.end is not None:
            trace = _window(trace, self.start, self.end)
        if self.vcs:
            trace = transforms.filter_vcs(trace, self.vcs)
        if self.gpu_only:
            trace = transforms.gpu_jobs_only(trace)
        if self.subsample is not None:
            if self.subsample >= 1:
                trace = transforms.subsample(trace, n=int(self.subsample), seed=seed)
            else:
                trace = transforms.subsample(trace, fraction=self.subsample, seed=seed)
        if self.submit_scale != 1.0 or self.duration_scale != 1.0:
            trace = transforms.scale_time(trace, self.submit_scale, self.duration_scale)
        return trace


def _as_seconds(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _window(trace: Trace, start: str | None, end: str | None) -> Trace:
    """Seconds when both bounds are numbers (or absent), else wall-clock dates."""
    s, e = _as_seconds(start), _as_seconds(end)
    if (start is None or s is not None) and (end is None or e is not None):
        return transforms.time_window(
            trace, -math.inf if s is None else s, math.inf if e is None else e
        )
    if start is None or end is None:
        raise ValueError("a window by dates needs both --start and --end")
    return transforms.window_by_dates(trace, start, end)


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
        return {
            "dlsched_version": __version__,
            "trace": _absolute_if_file(self.trace),
            "trace_format": self.trace_format,
            "skip_bad_rows": self.skip_bad_rows,
            "cluster": _absolute_if_file(self.cluster),
            "selection": asdict(self.selection),
            "sim": self.sim.to_dict(),
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
    return exp.selection.apply(result.trace, exp.sim.seed), result


def load_trace(exp: Experiment) -> Trace:
    """The experiment's trace after selection."""
    return read_selected(exp)[0]


def run_experiment(
    exp: Experiment, out: str | Path | None = None, progress: ProgressFn | None = None
) -> RunResult:
    """Simulate ``exp``; with ``out``, also write the run directory there (atomically). The
    summary records how many trace rows were read and how many were rejected as bad (only
    possible with ``skip_bad_rows``), with the first rejection."""
    trace, read = read_selected(exp)
    cluster = resolve_cluster(exp.cluster)
    result = simulate(trace, cluster, exp.sim, progress=progress)
    result.summary["trace_rows_read"] = read.rows_read
    result.summary["trace_rows_rejected"] = len(read.errors)
    result.summary["trace_first_rejection"] = str(read.errors[0]) if read.errors else None
    if out is not None:
        write_run(out, result.jobs, result.timeline, result.summary, exp.to_dict())
    return result


DEMO_POLICIES = ("fifo", "sjf", "srtf", "tiresias")


def demo_experiments() -> list[tuple[str, Experiment]]:
    """The quick-start grid: Philly VC 0e4a51 (bundled) on its 32 × 8-GPU VC, four policies."""
    from dlsched.trace.bundled import bundled_trace_path

    trace = str(bundled_trace_path("vc_0e4a51"))
    return [
        (policy, Experiment(trace, "32x8", SimConfig(policy=policy))) for policy in DEMO_POLICIES
    ]
