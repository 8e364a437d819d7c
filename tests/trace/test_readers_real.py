"""Each reader on the real public trace files: row counts, mapping of fields, speed."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from dlsched.trace import TraceError, read_trace
from tests.trace.helpers import TRACES, requires_traces

pytestmark = requires_traces


@pytest.mark.parametrize(
    ("relative", "fmt", "rows"),
    [
        ("philly/philly_jobs.csv", "philly", 82_247),
        ("philly-gavel/philly_gavel_seed0.csv", "gavel-philly", 15_264),
        ("philly-gavel/vc_0e4a51.csv", "gavel-philly", 990),
        ("alibaba-gpu-2023/openb_pod_list_default.csv", "alibaba-2023", 8_152),
        ("alibaba-gpu-2023/openb_pod_list_gpuspec33.csv", "alibaba-2023", 8_152),
        ("alibaba-gpu-2023/openb_pod_list_gpushare40.csv", "alibaba-2023", 8_152),
        ("pollux-workloads/workloads/workload-1.csv", "pollux", 160),
        ("pollux-workloads/workloads-realistic/workload-8.csv", "pollux", 160),
    ],
)
def test_real_file_reads_completely(relative: str, fmt: str, rows: int) -> None:
    result = read_trace(TRACES / relative)
    assert result.format == fmt
    assert result.rows_read == rows
    assert len(result.trace) == rows
    assert result.errors == ()
    submit = result.trace.column("submit_time").to_numpy()
    assert np.all(np.diff(submit) >= 0)
    assert read_trace(TRACES / relative, format=fmt).rows_read == rows


def test_every_pollux_workload_reads_without_durations() -> None:
    for path in sorted((TRACES / "pollux-workloads").glob("workloads*/workload-*.csv")):
        result = read_trace(path)
        assert result.format == "pollux"
        assert result.errors == ()
        assert result.trace.column("duration").null_count == len(result.trace)


def test_philly_fields_and_origin() -> None:
    trace = read_trace(TRACES / "philly/philly_jobs.csv").trace
    assert trace.origin_unix == datetime(2017, 9, 4, 10, 30, 41, tzinfo=UTC).timestamp()
    first = next(trace.jobs())
    assert (first.job_id, first.submit_time, first.duration, first.num_gpus, first.vc) == (
        "31566",
        0.0,
        2240194.0,
        8,
        "7f04ca",
    )
    assert first.user is None and first.state is None
    assert trace.column("vc").null_count == 0
    assert len(set(trace.column("vc").to_pylist())) == 15


def test_gavel_work_and_missing_columns() -> None:
    full = read_trace(TRACES / "philly-gavel/philly_gavel_seed0.csv").trace
    job = next(full.jobs())
    assert job.work_unit == "iterations" and job.work == 95121.0
    assert job.application == "Transformer (batch size 128)"
    assert job.duration == 17466.0 and job.vc == "0e4a51"

    per_vc = read_trace(TRACES / "philly-gavel/vc_0e4a51.csv").trace
    assert per_vc.column("vc").null_count == len(per_vc)
    assert per_vc.column("work").null_count == len(per_vc)
    assert per_vc.column("application").null_count == 0


def test_alibaba_pending_pods_and_cpu_pods() -> None:
    trace = read_trace(TRACES / "alibaba-gpu-2023/openb_pod_list_default.csv").trace
    rows = trace.table.to_pylist()
    states = {row["state"] for row in rows}
    assert states == {"RUNNING", "FAILED", "PENDING", "COMPLETED"}
    pending = [row for row in rows if row["state"] == "PENDING"]
    assert len(pending) == 897
    assert all(row["start_time"] is None and row["duration"] is None for row in pending)
    assert all(row["end_time"] is not None for row in pending)
    cpu = [row for row in rows if row["num_gpus"] == 0]
    assert len(cpu) == 1088
    assert all(row["gpu_milli"] is None for row in cpu)
    pod = next(row for row in rows if row["job_id"] == "openb-pod-0001")
    assert (pod["num_cpus"], pod["memory_mib"], pod["gpu_milli"]) == (6.0, 12288.0, 460)
    assert pod["duration"] == 12902960 - 427061


def test_alibaba_gpu_spec_alternatives_are_kept() -> None:
    trace = read_trace(TRACES / "alibaba-gpu-2023/openb_pod_list_gpuspec33.csv").trace
    types = set(trace.column("gpu_type").to_pylist())
    assert "V100M16|V100M32" in types and "T4" in types and None in types


def test_alibaba_variant_without_times_is_refused() -> None:
    path = TRACES / "alibaba-gpu-2023/openb_pod_list_multigpu50.csv"
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    assert f"{path}:1: creation_time: required column missing" in str(caught.value)
    assert "multigpu50" in str(caught.value)
