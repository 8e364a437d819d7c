"""Real run directories for the tests of ``compare`` and ``analyze``, made by the real
commands on the bundled traces (each a second or two)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.trace.bundled import bundled_trace_path
from tests.tenancy.kueue_manifests import documents, write

VC_SLICE = bundled_trace_path("vc_0e4a51")
PHILLY_2000 = bundled_trace_path("philly_jobs_2000")
POLLUX = bundled_trace_path("pollux_workload-6")
# Two busy VCs of philly_jobs_2000, so that a partitioned run stays small.
TWO_VCS = ("2869ce", "103959")
# b0 holds the whole 8-GPU cluster; b1 is admitted by borrowing a's quota but cannot be
# placed; a1 reclaims that quota, so b1 is evicted before it ever ran.
RECLAIM_TRACE = (
    "job_id,submit_time,num_gpus,duration,vc\nb0,0,8,1000,b\nb1,1,4,50,b\na1,61,8,30,a\n"
)


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def summary_of(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "summary.json").read_text())
    return data


def simulate(out: Path, *args: str | Path) -> Path:
    ok(invoke("simulate", *args, "--out", out, "--no-progress"))
    return out


def rigid_run(out: Path, policy: str = "fifo", *extra: str) -> Path:
    """The bundled Philly VC slice (990 rigid jobs) on 32 nodes of 8 GPUs."""
    return simulate(out, "--trace", VC_SLICE, "--cluster", "32x8", "--policy", policy, *extra)


def partitioned_run(out: Path) -> Path:
    """Two VCs of philly_jobs_2000, each its own partition of philly-vcs."""
    vcs = [a for vc in TWO_VCS for a in ("--vc", vc)]
    return simulate(out, "--trace", PHILLY_2000, "--cluster", "philly-vcs", *vcs)


def reclaim_run(root: Path) -> Path:
    """A run with queues in which reclaim evicts an admitted job that never started: its
    ``preemptions_by_cause.reclaim`` is 1 and its ``preemptions`` 0."""
    root.mkdir(parents=True, exist_ok=True)
    trace = root / "reclaim.csv"
    trace.write_text(RECLAIM_TRACE)
    queues = write(
        root / "queues.yaml",
        documents(
            {"a": {"gpu": 8, "cohort": "pool", "reclaim": "Any"}, "b": {"gpu": 8, "cohort": "pool"}}
        ),
    )
    return simulate(
        root / "queues", "--trace", trace, "--cluster", "2x4", "--no-partitions", "--queues", queues
    )


def elastic_run(out: Path) -> Path:
    """Twelve Pollux jobs (elastic) under Tiresias."""
    return simulate(
        out, "--trace", POLLUX, "--cluster", "pollux", "--policy", "tiresias", "--subsample", "12"
    )


def ps_run(root: Path) -> Path:
    """Five parameter-server jobs under SMD."""
    ok(invoke("ps", "workload", "--jobs", "5", "--cluster", "2x4", "--out", root / "ps.parquet"))
    return simulate(
        root / "ps", "--trace", root / "ps.parquet", "--cluster", "2x4", "--policy", "smd"
    )


def mixed_run(root: Path) -> Path:
    """Rigid, elastic and PS jobs in one run, each kind under its own policy."""
    ok(invoke("ps", "workload", "--jobs", "5", "--cluster", "2x4", "--out", root / "ps5.parquet"))
    rigid = root / "rigid.parquet"
    ok(invoke("trace", "convert", VC_SLICE, "--subsample", "30", "--out", rigid))
    merged = root / "mixed.parquet"
    ok(
        invoke(
            "trace", "merge", rigid, POLLUX, root / "ps5.parquet", "--name", "rigid",
            "--name", "elastic", "--name", "ps", "--out", merged,
        )
    )  # fmt: skip
    return simulate(
        root / "mixed", "--trace", merged, "--cluster", "16x4", "--no-partitions",
        "--policy", "tiresias", "--kind-policy", "ps=fifo",
    )  # fmt: skip


def serving_run(out: Path, *extra: str) -> Path:
    """The bundled Azure code slice (3,000 requests) on two replicas."""
    ok(invoke("serve-sim", "azure_code_3000", "--replicas", "2", *extra, "--out", out))
    return out


def sweep(out: Path, *args: str | Path) -> Path:
    """A real ``dlsched sweep`` into ``out`` (one worker: the tests share the machine)."""
    ok(invoke("sweep", *args, "--out", out, "--no-progress", "--workers", "1"))
    return out
