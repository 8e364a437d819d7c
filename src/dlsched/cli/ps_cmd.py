"""``dlsched ps``: parameter-server jobs — the model zoo and the SMD scheduler's simulations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.ps.machines import uniform_machines
from dlsched.ps.policies import POLICY_NAMES, make_policy
from dlsched.ps.report import summarize, write_run
from dlsched.ps.simulator import simulate
from dlsched.ps.workload import DEFAULT_TRACE, build_workload
from dlsched.ps.zoo import MODEL_NAMES, network

ps_app = typer.Typer(
    help="Parameter-server jobs: the layered model zoo and SMD scheduling.", no_args_is_help=True
)


@ps_app.command("zoo")
def zoo() -> None:
    """Print every network of the zoo: layers, parameters, forward GFLOPs per sample."""
    typer.echo(f"{'model':<18} {'layers':>6} {'params (M)':>11} {'GFLOPs':>8} {'batch':>5}  sample")
    for name in MODEL_NAMES:
        net = network(name)
        typer.echo(
            f"{name:<18} {len(net.layers):>6} {net.params / 1e6:>11.2f} {net.flops / 1e9:>8.2f} "
            f"{net.batch:>5}  {net.sample}"
        )


@ps_app.command("simulate")
def simulate_cmd(
    out: Annotated[Path, typer.Option("--out", help="Run directory to write.")],
    jobs: Annotated[int, typer.Option("--jobs", help="Jobs taken from the trace.")] = 200,
    policy: Annotated[
        str, typer.Option("--policy", help=f"Comma-separated, from {', '.join(POLICY_NAMES)}.")
    ] = ",".join(POLICY_NAMES),
    machines: Annotated[int, typer.Option(help="Identical machines.")] = 8,
    gpus: Annotated[int, typer.Option(help="GPUs per machine.")] = 4,
    bandwidth: Annotated[float, typer.Option(help="NIC bandwidth per machine, Gbit/s.")] = 25.0,
    time_scale: Annotated[
        float, typer.Option(help="Multiply the trace's inter-arrival times (below 1: more load).")
    ] = 0.01,
    seed: Annotated[int, typer.Option(help="Seed of the model draw.")] = 0,
    trace: Annotated[str, typer.Option(help="Bundled trace giving arrivals.")] = DEFAULT_TRACE,
) -> None:
    """Simulate a PS workload (arrivals from the Philly trace, networks from the zoo) under
    each policy; write jobs.csv, summary.json and config.json to OUT."""
    with user_errors():
        names = [p.strip() for p in policy.split(",") if p.strip()]
        policies = [make_policy(n) for n in names]
        cluster = uniform_machines(machines, gpus=gpus, bandwidth_gbps=bandwidth)
        workload = build_workload(jobs, cluster, seed=seed, trace=trace, time_scale=time_scale)
        results = []
        for p in policies:
            results.append(simulate(workload, cluster, p))
            typer.echo(f"{p.name}: mean JCT {results[-1].mean_jct:,.0f} s", err=True)
        config = {
            "jobs": jobs, "policies": names, "machines": machines, "gpus": gpus,
            "bandwidth_gbps": bandwidth, "time_scale": time_scale, "seed": seed, "trace": trace,
        }  # fmt: skip
        write_run(out, results, config)
    summary = summarize(results)
    for name, figures in summary.items():
        ratio = figures.get("jct_over_smd")
        shown = "" if ratio is None else f"  ({ratio:.2f}x SMD)"
        typer.echo(
            f"{name:<9} mean JCT {figures['mean_jct_s']:>12,.0f} s  run {figures['jobs_run']}  "
            f"infeasible {figures['infeasible']}{shown}"
        )
    typer.echo(f"wrote {out}")
