"""The run options of :mod:`dlsched.run_options` as typer options, for every command at once.

``@with_run_options()`` gives a command every run option (``simulate``); with ``axes=True`` an
axis option takes several values, repeated or comma-separated (``sweep``: one cell per value;
``--cluster`` only repeated, since a shorthand such as ``v100:16x4,k80:8x4`` holds commas);
``names`` limits the options to some of them (``serve`` takes the cluster, the policy and its
options, the placement and its options, and the queues, by the same definitions). The command
is written as ``def command(values: dict[str, Any], <its own parameters>)``: the decorated
function has the command's own parameters followed by the run options (in their help panels),
and calls the command with ``values`` holding each run option's value as given (a list option
as a tuple of its items, read by :func:`dlsched.cli.options.split_list`; an axis option of a
sweep as the tuple of its values, or ``None`` when not given).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import split_list
from dlsched.run_options import BY_NAME, RUN_OPTIONS, RunOption

_TYPES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool}
_PANELS = {
    "trace": "Trace and cluster",
    "selection": "Job selection",
    "policy": "Policy",
    "placement": "Placement",
    "faults": "Faults and restarts",
    "output": "Output",
    "power": "Power",
    "queues": "Queues and quotas",
}


def _several(option: RunOption, axes: bool) -> bool:
    return axes and option.axis


def _parameter(option: RunOption, axes: bool, default_here: Any) -> inspect.Parameter:
    help_text = option.help
    several = _several(option, axes)
    if several or option.kind in ("list", "pairs"):
        annotation: Any = list[str] | None
        default: Any = None
        if several:
            how = "repeated" if option.name == "cluster" else "repeated or comma-separated"
            help_text += f" Several ({how}): one cell each."
    elif option.kind == "bool":
        annotation, default = bool, option.default
    else:
        base = _TYPES[option.kind]
        annotation = base if default_here is not None else base | None
        default = default_here
    if option.kind == "bool" and option.flag is None:
        names = [f"{option.cli_flag}/--no-{option.cli_flag[2:]}"]
    else:
        names = [option.cli_flag]
    info = typer.Option(*names, help=help_text, rich_help_panel=_PANELS[option.section])
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[annotation, info],
    )


def read_values(given: dict[str, Any], axes: bool) -> dict[str, Any]:
    """The run options' values as a command receives them (module docstring)."""
    out: dict[str, Any] = {}
    for name, value in given.items():
        option = BY_NAME[name]
        if _several(option, axes):
            if value is None:
                out[name] = None
            elif option.name == "cluster":
                out[name] = tuple(value)
            else:
                out[name] = split_list(value, option.cli_flag)
        elif option.kind == "list":
            out[name] = split_list(value, option.cli_flag)
        elif option.kind == "pairs":
            out[name] = tuple(value or ())
        else:
            out[name] = value
    return out


def with_run_options(
    *,
    axes: bool = False,
    names: Sequence[str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a command to take the run options (module docstring); ``defaults`` gives some
    of them another default in this command (a scalar option only: ``serve`` runs a 2x4
    cluster unless told otherwise)."""
    chosen = [o for o in RUN_OPTIONS if names is None or o.name in names]
    if names is not None and len(chosen) != len(names):
        raise ValueError(f"unknown run options: {sorted(set(names) - set(BY_NAME))}")
    here = dict(defaults or {})
    if set(here) - {o.name for o in chosen}:
        raise ValueError(f"defaults for options not taken: {sorted(set(here) - set(BY_NAME))}")

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        hints = typing.get_type_hints(command, include_extras=True)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(command).parameters.values()
            if p.name != "values"
        ]
        run = [_parameter(o, axes, here.get(o.name, o.default)) for o in chosen]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            given = {o.name: kwargs.pop(o.name) for o in chosen}
            with user_errors():
                values = read_values(given, axes)
            command(values, **kwargs)

        parameters = own + run
        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        del wrapper.__wrapped__
        return wrapper

    return decorate
