"""``dlsched demo``: the quick start — four policies on a bundled real Philly slice, compared."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ForceOpt


def demo(
    out: Annotated[Path, typer.Option(help="Directory for the run directories.")] = Path(
        "runs/demo"
    ),
    force: ForceOpt = False,
) -> None:
    """Simulate the bundled Philly VC 0e4a51 slice (990 jobs, 32 nodes x 8 GPUs) under FIFO,
    SJF, SRTF and Tiresias, write a run directory for each, and compare them."""
    from dlsched.cli.compare_cmd import compare
    from dlsched.metrics.rundir import RUN_DIR
    from dlsched.runner import demo_experiments, run_experiment

    runs = []
    with user_errors():
        experiments = demo_experiments()
        for name, _ in experiments:
            RUN_DIR.check(out / name, force)
        for name, exp in experiments:
            result = run_experiment(exp, out / name, force=force)
            s = result.summary
            typer.echo(
                f"{name:9s} jobs={s['jobs']} avg JCT={s['avg_jct_s']:,.0f}s "
                f"avg queue={s['avg_queue_s']:,.0f}s wall={s['sim_wall_s']:.2f}s"
            )
            runs.append(out / name)
    compare(runs)
