"""The ``dlsched`` command: thin wrappers over the library."""

from __future__ import annotations

import typer

from dlsched.cli.analyze_cmd import analyze
from dlsched.cli.compare_cmd import compare
from dlsched.cli.demo_cmd import demo
from dlsched.cli.energy_cmd import energy_app
from dlsched.cli.list_cmd import list_app
from dlsched.cli.perf_cmd import perf_app
from dlsched.cli.predict_cmd import predict_app
from dlsched.cli.preset_cmd import preset_app
from dlsched.cli.ps_cmd import ps_app
from dlsched.cli.service_cmd import cancel, jobs, serve, submit
from dlsched.cli.simulate_cmd import simulate
from dlsched.cli.sweep_cmd import sweep
from dlsched.cli.synth_cmd import synth
from dlsched.cli.trace_cmd import trace_app

app = typer.Typer(
    name="dlsched",
    help="Scheduling deep-learning workloads in GPU datacenters: traces, simulation, policies.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(trace_app, name="trace")
app.add_typer(list_app, name="list")
app.add_typer(preset_app, name="preset")
app.add_typer(predict_app, name="predict")
app.add_typer(perf_app, name="perf")
app.add_typer(energy_app, name="energy")
app.add_typer(ps_app, name="ps")
trace_app.command(name="synth")(synth)
app.command()(simulate)
app.command()(sweep)
app.command()(compare)
app.command()(demo)
app.command()(analyze)
app.command()(serve)
app.command()(submit)
app.command()(jobs)
app.command()(cancel)


if __name__ == "__main__":
    app()
