"""The top-level ``dlsched`` group: each subcommand's module is imported only when that
subcommand runs, and what the user sees when something goes wrong outside a command's own
error handling.

Listing the commands (``dlsched --help``) needs only :data:`COMMANDS`, so it imports no
simulator, numpy, pyarrow or scipy; ``dlsched jobs`` imports the service client and nothing
of the simulator.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from dlsched import __version__
from dlsched.cli.errors import USER_ERROR, print_error
from dlsched.extras import explain

BUG_EXIT = 70  # EX_SOFTWARE (sysexits.h): an internal error, as distinct from bad input

BLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "10")
"""OpenBLAS's idle threads spin 2**28 cycles (its default) before they sleep, from the moment
numpy loads: on a command that never multiplies a large matrix that is a tenth of a CPU-second
per other core, more than the whole simulation of a small trace. 2**10 cycles keeps every
thread for the products that need them."""


def calm_blas_threads(environ: Mapping[str, str] = os.environ) -> bool:
    """Give this process :data:`BLAS_SPIN` unless ``environ`` names the variable already (the
    user's choice stands); whether it was set. It goes to the C environment only, which OpenBLAS
    reads when numpy loads, not to ``os.environ``: the jobs a service starts (their environment
    is a copy of ``os.environ``) keep the default."""
    name, value = BLAS_SPIN
    if name in environ:
        return False
    os.putenv(name, value)
    return True


@dataclass(frozen=True)
class Subcommand:
    """Where a subcommand lives (``module.attr``: a command function or a ``typer.Typer``)
    and its one-line help for the command list (kept equal to the command's own by a test)."""

    module: str
    attr: str
    help: str


COMMANDS: dict[str, Subcommand] = {
    "demo": Subcommand(
        "dlsched.cli.demo_cmd",
        "demo",
        "Simulate the bundled Philly VC 0e4a51 slice (990 jobs, 32 nodes x 8 GPUs) under "
        "FIFO, SJF, SRTF and Tiresias, write a run directory for each, and compare them.",
    ),
    "simulate": Subcommand(
        "dlsched.cli.simulate_cmd",
        "simulate",
        "Replay a trace on a cluster under a policy; write jobs, timeline, config and summary "
        "to OUT.",
    ),
    "serve-sim": Subcommand(
        "dlsched.cli.serve_sim_cmd",
        "serve_sim",
        "Serve a request trace on LLM replicas (vLLM's, Sarathi-Serve's or Orca's iteration-level "
        "scheduling over paged KV memory, or static batching) and write requests, replica "
        "timeline, config and summary to OUT.",
    ),
    "compare": Subcommand(
        "dlsched.cli.compare_cmd",
        "compare",
        "Compare run directories side by side; ratios are to the first run.",
    ),
    "sweep": Subcommand(
        "dlsched.cli.sweep_cmd",
        "sweep",
        "Run every combination of the axis options' values not already in OUT, then write "
        "OUT/results.csv, OUT/table.md (means with 95% CIs over seeds) and figures.",
    ),
    "trace": Subcommand(
        "dlsched.cli.trace_cmd",
        "trace_app",
        "Validate, convert, merge and synthesize job traces.",
    ),
    "analyze": Subcommand(
        "dlsched.cli.analyze_cmd",
        "analyze",
        "Characterize a trace (run times, GPU demand, states, submissions, queueing, cluster "
        "demand, users, recurrence, VCs) or report a run directory (job or serving run): "
        "writes index.html, PNG figures and stats.json to --out.",
    ),
    "predict": Subcommand(
        "dlsched.cli.predict_cmd",
        "predict_app",
        "Evaluate job-duration estimators.",
    ),
    "preset": Subcommand(
        "dlsched.cli.preset_cmd",
        "preset_app",
        "Named experiment setups from the literature.",
    ),
    "energy": Subcommand(
        "dlsched.cli.energy_cmd",
        "energy_app",
        "Cluster energy saving (CES): forecast busy nodes and power idle ones off.",
    ),
    "perf": Subcommand(
        "dlsched.cli.perf_cmd",
        "perf_app",
        "Performance models fitted to measured training profiles.",
    ),
    "ps": Subcommand(
        "dlsched.cli.ps_cmd",
        "ps_app",
        "Parameter-server jobs: the layered model zoo and SMD scheduling.",
    ),
    "list": Subcommand(
        "dlsched.cli.list_cmd",
        "list_app",
        "List policies, placements, power managers and built-in clusters.",
    ),
    "serve": Subcommand(
        "dlsched.cli.service_cmd",
        "serve",
        "Run the live scheduler service (REST API, dashboard, control loop).",
    ),
    "submit": Subcommand(
        "dlsched.cli.service_cmd",
        "submit",
        "Submit a job: dlsched submit --gpus 2 --name x -- python train.py ...",
    ),
    "jobs": Subcommand(
        "dlsched.cli.service_cmd",
        "jobs",
        "List jobs: queue, running and finished, with the GPUs they hold (an elastic job: its "
        "current count, and the requested one beside it when they differ) and their nodes.",
    ),
    "cancel": Subcommand(
        "dlsched.cli.service_cmd",
        "cancel",
        "Cancel a job (a running one is stopped first).",
    ),
}


def load_command(name: str) -> Any:
    """The click command of subcommand ``name`` (imports its module)."""
    sub = COMMANDS[name]
    target = getattr(importlib.import_module(sub.module), sub.attr)
    # Built under a completion-less parent, as when it was added to the top-level app: a
    # Typer converted on its own would offer shell completion options of its own.
    parent = typer.Typer(add_completion=False)
    if isinstance(target, typer.Typer):
        parent.add_typer(target, name=name)
        return reflowed(typer.main.get_command(parent).commands[name])  # type: ignore[attr-defined]
    parent.command(name=name)(target)
    return reflowed(typer.main.get_command(parent))


def reflow(text: str) -> str:
    """``text`` with each paragraph on one line (paragraphs apart by a blank line); a paragraph
    that starts with ``\\b`` keeps its lines, as click's convention has it."""
    paragraphs = [p for p in text.strip().split("\n\n") if p.strip()]
    return "\n\n".join(
        p if p.lstrip().startswith("\b") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def reflowed(command: Any) -> Any:
    """``command`` (and its subcommands) with reflowed help: typer prints a docstring's later
    paragraphs with the line breaks of the source, which the terminal then wraps again."""
    if getattr(command, "help", None):
        command.help = reflow(command.help)
    for sub in getattr(command, "commands", {}).values():
        reflowed(sub)
    return command


def bug_report(exc: BaseException) -> str:
    """What follows the traceback of an internal error."""
    return (
        f"dlsched {__version__} stopped on an internal error ({type(exc).__name__}), a bug in "
        "dlsched rather than a problem with your input: please report it on dlsched's issue "
        "tracker with the command you ran and the traceback above."
    )


class LazyGroup(TyperGroup):
    """A TyperGroup whose :data:`COMMANDS` are imported when run (module docstring); errors
    that escape a command become one line (a missing extra, an operating-system error such as
    a full disk) or, for a bug, the traceback and where to report it."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        calm_blas_threads()
        return super().main(*args, **kwargs)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in COMMANDS:
            # A stand-in carrying the help line: listing commands must not import them.
            return TyperCommand(name=cmd_name, help=COMMANDS[cmd_name].help)
        return found

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if name in COMMANDS and name not in self.commands:
            command = load_command(name)
        return name, command, rest

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except ModuleNotFoundError as exc:
            message = explain(exc, f"dlsched {ctx.invoked_subcommand or ''}".strip())
            if message is None:
                raise self._bug(exc) from exc
            print_error(message)
            raise typer.Exit(USER_ERROR) from exc
        except BrokenPipeError as exc:
            # The reader went away (``dlsched ... | head``): stop quietly, and keep Python's
            # final flush of stdout from failing again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(1) from exc
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            print_error(f"{where}{exc.strerror or exc}")
            raise typer.Exit(USER_ERROR) from exc
        except Exception as exc:
            raise self._bug(exc) from exc

    @staticmethod
    def _bug(exc: BaseException) -> typer.Exit:
        traceback.print_exception(exc, file=sys.stderr)
        print(bug_report(exc), file=sys.stderr)
        return typer.Exit(BUG_EXIT)
