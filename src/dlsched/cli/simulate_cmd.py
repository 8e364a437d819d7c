"""``dlsched simulate``: replay a trace on a cluster under a policy and write a run directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import ForceOpt, ProgressOpt, TraceArg, one_trace, single
from dlsched.cli.progress import job_progress
from dlsched.cli.run_options import with_run_options
from dlsched.run_options import experiment_from

POWER_KEYS = (
    "energy_kwh",
    "energy_saved_fraction",
    "mean_powered_off_nodes",
    "wakeups",
    "extra_queue_fraction",
)


@with_run_options()
def simulate(
    values: dict[str, Any],
    trace_arg: TraceArg = None,
    *,
    out: Annotated[Path, typer.Option(help="Run directory to write.")],
    progress: ProgressOpt = True,
    force: ForceOpt = False,
) -> None:
    """Replay a trace on a cluster under a policy; write jobs, timeline, config and summary to
    OUT. With --preset, the preset fixes trace, cluster, job selection and placement. The
    options are those of dlsched sweep, one value each."""
    from dlsched.metrics.rundir import RUN_DIR
    from dlsched.runner import check_extras, run_experiment

    with user_errors(BAD_ROWS_HINT):
        if trace_arg is not None or values["trace"] is not None:
            values["trace"] = one_trace(trace_arg, values["trace"])
        single(values["policy"], "--policy", "to compare policies, run dlsched sweep --policy A,B")
        exp = experiment_from(values)
        inputs = (exp.trace, exp.cluster, exp.sim.faults.file, exp.sim.queues, exp.sim.queue_map)
        RUN_DIR.check(out, force, inputs=[p for p in inputs if p])
        check_extras(exp.sim)
        with job_progress(f"simulating {exp.sim.policy}, jobs finished", progress) as bar:
            result = run_experiment(exp, out, progress=bar, force=force)
    s = result.summary
    shown = {
        k: s[k]
        for k in (
            "policy",
            "jobs",
            "jobs_set_aside",
            "avg_jct_s",
            "avg_queue_s",
            "makespan_s",
            "gpu_utilization",
            "preemptions",
            "sim_wall_s",
            *POWER_KEYS,
        )
        if k in s
    }
    typer.echo(json.dumps(shown, indent=2))
    if s["trace_rows_rejected"]:
        typer.echo(
            f"skipped {s['trace_rows_rejected']} bad rows of {exp.trace}; "
            f"first: {s['trace_first_rejection']}",
            err=True,
        )
    if s["jobs_set_aside"]:
        typer.echo(f"set aside: {json.dumps(s['set_aside_reasons'])}", err=True)
    typer.echo(f"wrote {out}")
