"""Job traces: the canonical record, readers for public formats, checks, transforms, storage."""

import typing as _typing

from dlsched._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from dlsched.trace.bundled import bundled_trace_names, bundled_trace_path
    from dlsched.trace.errors import RowError, TraceError
    from dlsched.trace.io import read_parquet, write_parquet
    from dlsched.trace.read import ReadResult, detect_format, read_trace
    from dlsched.trace.readers import FORMAT_NAMES
    from dlsched.trace.schema import COLUMN_NAMES, SCHEMA, JobSpec, Trace, empty_trace
    from dlsched.trace.synth.philly_like import synthetic_trace
    from dlsched.trace.transforms import (
        filter_vcs,
        gpu_jobs_only,
        rebase,
        scale_time,
        subsample,
        time_window,
        window_by_dates,
        with_deadlines,
    )
    from dlsched.trace.validate import FileReport, render_reports, validate_files

_EXPORTS = {
    "bundled_trace_names": "dlsched.trace.bundled",
    "bundled_trace_path": "dlsched.trace.bundled",
    "RowError": "dlsched.trace.errors",
    "TraceError": "dlsched.trace.errors",
    "read_parquet": "dlsched.trace.io",
    "write_parquet": "dlsched.trace.io",
    "ReadResult": "dlsched.trace.read",
    "detect_format": "dlsched.trace.read",
    "read_trace": "dlsched.trace.read",
    "FORMAT_NAMES": "dlsched.trace.readers",
    "COLUMN_NAMES": "dlsched.trace.schema",
    "SCHEMA": "dlsched.trace.schema",
    "JobSpec": "dlsched.trace.schema",
    "Trace": "dlsched.trace.schema",
    "empty_trace": "dlsched.trace.schema",
    "synthetic_trace": "dlsched.trace.synth.philly_like",
    "filter_vcs": "dlsched.trace.transforms",
    "gpu_jobs_only": "dlsched.trace.transforms",
    "rebase": "dlsched.trace.transforms",
    "scale_time": "dlsched.trace.transforms",
    "subsample": "dlsched.trace.transforms",
    "time_window": "dlsched.trace.transforms",
    "window_by_dates": "dlsched.trace.transforms",
    "with_deadlines": "dlsched.trace.transforms",
    "FileReport": "dlsched.trace.validate",
    "render_reports": "dlsched.trace.validate",
    "validate_files": "dlsched.trace.validate",
}

__all__ = [
    "COLUMN_NAMES",
    "FORMAT_NAMES",
    "SCHEMA",
    "FileReport",
    "JobSpec",
    "ReadResult",
    "RowError",
    "Trace",
    "TraceError",
    "bundled_trace_names",
    "bundled_trace_path",
    "detect_format",
    "empty_trace",
    "filter_vcs",
    "gpu_jobs_only",
    "read_parquet",
    "read_trace",
    "rebase",
    "render_reports",
    "scale_time",
    "subsample",
    "synthetic_trace",
    "time_window",
    "validate_files",
    "window_by_dates",
    "with_deadlines",
    "write_parquet",
]


def __getattr__(name: str) -> _typing.Any:
    return _lazy_exports(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
