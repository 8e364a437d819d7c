"""``dlsched trace synth``: write a Helios-like synthetic trace and the cluster it runs on."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ForceOpt
from dlsched.trace.synth.choices import HELIOS_CLUSTERS, REFERENCE_DAY

_SHOWN = (
    "gpu_jobs_per_day",
    "avg_run_s",
    "median_run_s",
    "avg_gpus",
    "gpu_time_per_job_s",
    "share_COMPLETED",
    "share_CANCELLED",
    "share_FAILED",
    "top10_users_gpu_time_share",
    "recurrence_same_name",
)


def synth(
    like: Annotated[
        str, typer.Option(help=f"Helios cluster to resemble: {', '.join(HELIOS_CLUSTERS)}.")
    ],
    days: Annotated[float, typer.Option(help="Length of the trace in days (from 2020-04-01).")],
    out: Annotated[
        Path, typer.Option(help="Directory for trace.parquet, cluster.toml, calibration.json.")
    ],
    seed: Annotated[int, typer.Option(help="Seed; the same seed gives the same trace.")] = 0,
    vc_day: Annotated[
        str, typer.Option(help="Day (YYYY-MM-DD) whose VC sizes make the cluster.")
    ] = REFERENCE_DAY,
    rate_scale: Annotated[
        float, typer.Option(help="Factor on the published job rate (1 = published load).")
    ] = 1.0,
    force: ForceOpt = False,
) -> None:
    """Generate a Helios-like trace (users, recurring job names, run times, GPUs, states)
    calibrated to the published statistics of a Helios cluster, with its VC cluster, and
    print generated versus published statistics."""
    from dlsched.trace.synth.helios import (
        SYNTH_DIR,
        HeliosSynthConfig,
        synthesize_helios,
        write_helios_synth,
    )

    with user_errors():
        SYNTH_DIR.check(out, force)
        config = HeliosSynthConfig(like, days, seed, vc_day=vc_day, rate_scale=rate_scale)
        result = synthesize_helios(config)
        paths = write_helios_synth(result, out, force)
    report = result.calibration
    typer.echo(
        f"{len(result.trace)} jobs ({report['like']}-like, {days:g} days, seed {seed}) -> "
        f"{paths['trace.parquet']}"
    )
    typer.echo(
        f"cluster {result.cluster.total_gpus} GPUs in {len(result.cluster.partitions)} VCs -> "
        f"{paths['cluster.toml']}"
    )
    typer.echo(f"{'statistic':28s} {'generated':>12s} {'published':>12s}")
    rows = {row["name"]: row for row in report["statistics"]}
    for name in _SHOWN:
        row = rows[name]
        typer.echo(f"{name:28s} {_number(row['generated']):>12s} {_number(row['published']):>12s}")
    typer.echo(f"calibration -> {paths['calibration.json']}")


def _number(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
