"""``dlsched ps``: parameter-server jobs — the model zoo and the SMD scheduler's simulations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ForceOpt, split_list

TRACE_FILE = "trace.parquet"
DEFAULT_TRACE = "philly_jobs_2000"
"""The bundled trace whose arrivals and GPU requests a PS workload takes by default (the same
as :data:`dlsched.ps.workload.DEFAULT_TRACE`; a test keeps them equal). The PS model loads when
a command runs, not for --help."""
DEFAULT_POLICIES = ("smd", "optimus", "fifo", "tiresias")

ps_app = typer.Typer(
    help="Parameter-server jobs: the layered model zoo and SMD scheduling.", no_args_is_help=True
)


@ps_app.command("zoo")
def zoo() -> None:
    """Print every network of the zoo: layers, parameters, forward GFLOPs per sample."""
    from dlsched.ps.zoo import MODEL_NAMES, network

    typer.echo(f"{'model':<18} {'layers':>6} {'params (M)':>11} {'GFLOPs':>8} {'batch':>5}  sample")
    for name in MODEL_NAMES:
        net = network(name)
        typer.echo(
            f"{name:<18} {len(net.layers):>6} {net.params / 1e6:>11.2f} {net.flops / 1e9:>8.2f} "
            f"{net.batch:>5}  {net.sample}"
        )


@ps_app.command("workload")
def workload_cmd(
    out: Annotated[Path, typer.Option("--out", help="Parquet trace to write (atomically).")],
    jobs: Annotated[int, typer.Option("--jobs", help="Jobs taken from the trace.")] = 200,
    cluster: Annotated[
        str, typer.Option(help="Cluster the jobs' work is sized on (shorthand, TOML, name).")
    ] = "8x4",
    time_scale: Annotated[
        float, typer.Option(help="Multiply the trace's inter-arrival times (below 1: more load).")
    ] = 0.01,
    seed: Annotated[int, typer.Option(help="Seed of the model draw.")] = 0,
    trace: Annotated[
        str, typer.Option(help="Trace giving arrivals and GPUs: a file, or a bundled name.")
    ] = DEFAULT_TRACE,
    force: ForceOpt = False,
) -> None:
    """Write a PS workload as a trace of `ps` jobs (arrivals and GPU requests from a trace,
    networks from the zoo), to simulate alone or merged with other traces."""
    from dlsched.cluster.parse import resolve_cluster
    from dlsched.ps.machines import machines_from_cluster
    from dlsched.ps.workload import build_workload, workload_trace
    from dlsched.sim.simulator import with_task_resources
    from dlsched.trace.io import PARQUET_FILE, write_parquet

    with user_errors():
        PARQUET_FILE.check(out, force, inputs=[trace])
        machines = machines_from_cluster(with_task_resources(resolve_cluster(cluster)))
        workload = build_workload(jobs, machines, seed=seed, trace=trace, time_scale=time_scale)
        write_parquet(workload_trace(workload, f"ps-workload:{trace}"), out)
    typer.echo(f"{jobs} PS jobs; wrote {out}")


@ps_app.command("simulate")
def simulate_cmd(
    out: Annotated[Path, typer.Option("--out", help="Directory of the runs (one per policy).")],
    jobs: Annotated[int, typer.Option("--jobs", help="Jobs taken from the trace.")] = 200,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            help="Policies to compare, repeated or comma-separated (dlsched list policies; "
            "kind ps). Default: smd, optimus, fifo, tiresias.",
        ),
    ] = None,
    cluster: Annotated[
        str, typer.Option(help="Cluster: built-in name, TOML file, or shorthand 8x4.")
    ] = "8x4",
    time_scale: Annotated[
        float, typer.Option(help="Multiply the trace's inter-arrival times (below 1: more load).")
    ] = 0.01,
    seed: Annotated[int, typer.Option(help="Seed of the model draw and of the runs.")] = 0,
    trace: Annotated[
        str, typer.Option(help="Trace giving arrivals and GPUs: a file, or a bundled name.")
    ] = DEFAULT_TRACE,
    force: ForceOpt = False,
) -> None:
    """Simulate a PS workload (arrivals from the Philly trace, networks from the zoo) under
    each policy. Writes OUT/trace.parquet and one standard run directory per policy
    (OUT/POLICY: jobs, timeline, config, summary), which `dlsched compare` and `sweep` read."""
    from dlsched.cluster.parse import resolve_cluster
    from dlsched.metrics.rundir import write_run
    from dlsched.outdir import DirKind
    from dlsched.perf.model import PS
    from dlsched.ps.machines import machines_from_cluster
    from dlsched.ps.workload import build_workload, workload_trace
    from dlsched.runner import Experiment, run_experiment
    from dlsched.sim.config import SimConfig
    from dlsched.sim.groups import check_choice
    from dlsched.sim.simulator import with_task_resources
    from dlsched.trace.io import write_parquet

    with user_errors():
        names = list(split_list(policy, "--policy")) or list(DEFAULT_POLICIES)
        for name in names:
            check_choice({PS}, name, {}, {})
        kind = DirKind("ps simulate output", {TRACE_FILE, *names})
        kind.check(out, force, inputs=[trace])
        spec = resolve_cluster(cluster)
        machines = machines_from_cluster(with_task_resources(spec))
        workload = build_workload(jobs, machines, seed=seed, trace=trace, time_scale=time_scale)
        final_trace = str((out / TRACE_FILE).resolve())
        summaries: list[dict[str, Any]] = []

        def fill(tmp: Path) -> None:
            write_parquet(workload_trace(workload, f"ps-workload:{trace}"), tmp / TRACE_FILE)
            for name in names:
                exp = Experiment(str(tmp / TRACE_FILE), cluster, SimConfig(policy=name, seed=seed))
                result = run_experiment(exp)
                config = {**exp.to_dict(), "trace": final_trace}
                write_run(tmp / name, result.jobs, result.timeline, result.summary, config)
                summaries.append(result.summary)

        kind.write(out, fill, force)
    base = summaries[0]["avg_jct_s"]
    for name, s in zip(names, summaries, strict=True):
        ratio = "" if not base or s["avg_jct_s"] is None else f"  ({s['avg_jct_s'] / base:.2f}x)"
        # No job finished: no mean JCT, shown as such rather than as 0.
        jct = "n/a" if s["avg_jct_s"] is None else f"{s['avg_jct_s']:,.0f} s"
        typer.echo(
            f"{name:<9} mean JCT {jct:>14}  run {s['jobs']}  set aside {s['jobs_set_aside']}{ratio}"
        )
    typer.echo(f"wrote {out} (compare: dlsched compare {' '.join(str(out / n) for n in names)})")
