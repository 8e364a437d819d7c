"""The optional extras (``pip install 'dlsched[EXTRA]'``): which modules each provides, which
components need them, and the one check every command makes before it starts work.

The core (numpy, pyarrow, scipy, typer, rich) is always there; everything else is an extra.
A missing extra is reported as :class:`MissingExtra` (a ModuleNotFoundError naming the module)
whose message is one line ending in the install command. The CLI turns that error, and any
ModuleNotFoundError for a module an extra provides, into that line and exit status 2.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

EXTRAS: dict[str, tuple[str, ...]] = {
    "analysis": ("matplotlib",),
    "predict": ("lightgbm",),
    "elastic": ("sklearn",),
    # The service's client (dlsched submit, jobs, cancel) is on the standard library.
    "service": ("fastapi", "uvicorn"),
    "postgres": ("psycopg",),
    "ray": ("ray",),
    "train": ("torch",),
    "tenancy": ("yaml",),
}
"""Extra name -> the top-level modules of it that dlsched imports (see pyproject.toml)."""

PROVIDER = {module: extra for extra, modules in EXTRAS.items() for module in modules}
"""Module -> the extra to install for it, for a hint after an unexpected import failure."""

DISTRIBUTIONS = {"sklearn": "scikit-learn", "torch": "PyTorch", "yaml": "PyYAML"}
"""Module -> the name users know it by, where they differ."""

INSTALL_NOTES = {
    "train": "pip install 'dlsched[train]' --extra-index-url https://download.pytorch.org/whl/cpu "
    "(the CPU build of torch; without the index URL pip fetches the much larger CUDA build)",
}

COMPONENT_EXTRAS: dict[tuple[str, str], str] = {
    ("--policy", "ones"): "elastic",
    ("--estimator", "lgbm"): "predict",
    ("--estimator", "combined"): "predict",
    ("--power-manager", "ces"): "predict",
    ("--backend", "ray"): "ray",
}
"""(option, value) -> the extra that value needs; every other value needs only the core."""


class MissingExtra(ModuleNotFoundError):
    """``purpose`` needs ``module``, which the extra ``extra`` installs; ``str()`` is the
    one-line message with the install command."""

    def __init__(self, purpose: str, module: str, extra: str) -> None:
        super().__init__(_message(purpose, module, extra), name=module)
        self.purpose = purpose
        self.extra = extra


def install_hint(extra: str) -> str:
    """The command that installs ``extra``."""
    return INSTALL_NOTES.get(extra, f"pip install 'dlsched[{extra}]'")


def _message(purpose: str, module: str, extra: str) -> str:
    shown = DISTRIBUTIONS.get(module, module)
    return f"{purpose} needs {shown} (the '{extra}' extra): {install_hint(extra)}"


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (found without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(purpose: str, *extras: str) -> None:
    """Raise :class:`MissingExtra` for the first module of ``extras`` that is not installed;
    ``purpose`` names what needs it (``"dlsched analyze"``, ``"--policy ones"``)."""
    for extra in extras:
        for module in EXTRAS[extra]:
            if not installed(module):
                raise MissingExtra(purpose, module, extra)


def require_components(choices: Iterable[tuple[str, str | None]]) -> None:
    """:func:`require` the extras of the chosen components, ``(option, value)`` pairs such as
    ``("--policy", "ones")``; a None value or one not in :data:`COMPONENT_EXTRAS` needs
    nothing beyond the core."""
    for option, value in choices:
        extra = COMPONENT_EXTRAS.get((option, value)) if value is not None else None
        if extra is not None:
            require(f"{option} {value}", extra)


def explain(exc: ModuleNotFoundError, purpose: str) -> str | None:
    """The one-line message for ``exc`` if an extra provides the module it could not import
    (``purpose`` names what was running), else None: a missing core module is a broken
    installation, not a missing extra."""
    if isinstance(exc, MissingExtra):
        return str(exc)
    top = (exc.name or "").partition(".")[0]
    extra = PROVIDER.get(top)
    return None if extra is None else _message(purpose, top, extra)
