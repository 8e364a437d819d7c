"""The options every command shares, and how their values are read (README, "Command-line
conventions"): one name and one meaning per option across commands; a list is the option
repeated or a comma-separated value; every command that writes takes ``--out`` and ``--force``.

Light on purpose (typer only): the service client commands import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from dlsched.keyvalue import parse_pairs

FORCE_HELP = "Replace an existing output of the same kind (never an input, never anything else)."
ForceOpt = Annotated[bool, typer.Option("--force", help=FORCE_HELP)]
ProgressOpt = Annotated[
    bool, typer.Option(help="Report progress (a bar on a terminal, else a line every 30 s).")
]
QueueMapOpt = Annotated[
    str | None,
    typer.Option(help="With --queues: TOML mapping VCs/users to LocalQueues (default: by VC)."),
]
TRACE_HELP = "Trace file (any supported format, or Parquet)."
TraceOpt = Annotated[str | None, typer.Option("--trace", help=TRACE_HELP)]
TraceArg = Annotated[
    str | None,
    typer.Argument(help=f"{TRACE_HELP} The same as --trace.", show_default=False, metavar="TRACE"),
]


def one_trace(argument: str | Path | None, option: str | None) -> str:
    """The trace given as the command's argument or as ``--trace`` (either, not both)."""
    if argument is not None and option is not None and str(argument) != option:
        raise ValueError("give the trace once: as the argument or as --trace, not both")
    given = option if option is not None else argument
    if given is None:
        raise ValueError("give a trace: --trace FILE")
    return str(given)


def split_list(values: Sequence[str] | None, flag: str) -> tuple[str, ...]:
    """The values of a list option given repeated and/or comma-separated, in order; a value
    given twice is an error naming ``flag``."""
    items = [part.strip() for value in values or () for part in value.split(",")]
    items = [item for item in items if item]
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ValueError(f"{flag} lists {', '.join(repeated)} more than once")
    return tuple(items)


def single(value: str, flag: str, several: str) -> str:
    """``value`` of an option this command takes once; a comma-separated list is refused,
    pointing at ``several``, the command that runs several."""
    if "," in value:
        raise ValueError(f"{flag} takes one value here, got {value!r}; {several}")
    return value


def seeds(values: Sequence[str] | None, flag: str = "--seed") -> tuple[int, ...]:
    """Integer seeds of a list option (:func:`split_list`)."""
    out = []
    for item in split_list(values, flag):
        try:
            out.append(int(item))
        except ValueError:
            raise ValueError(f"{flag} expects whole numbers, got {item!r}") from None
    return tuple(out)


def parse_options(items: Sequence[str], flag: str = "--policy-opt") -> dict[str, str]:
    """Repeated ``KEY=VALUE`` items of ``flag`` (:func:`dlsched.keyvalue.parse_pairs`)."""
    return parse_pairs(items, flag)
