"""Job traces: the canonical record, readers for public formats, checks, transforms, storage."""

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
)
from dlsched.trace.validate import FileReport, render_reports, validate_files

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
    "write_parquet",
]
