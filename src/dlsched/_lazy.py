"""Re-exports imported on first use (PEP 562), for package ``__init__`` modules.

A package that re-exports names of its heavy submodules would otherwise import all of them
whenever any one submodule is imported (Python runs the package's ``__init__`` first), and every
command would pay for the simulator, numpy, pyarrow and scipy just to print its help.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str], name: str) -> Any:
    """The value of ``name`` for the module-level ``__getattr__`` of ``package``: imported from
    the module ``exports[name]`` names, then kept in the package so later lookups are plain
    attribute reads. AttributeError for a name not exported."""
    if name not in exports:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(exports[name]), name)
    setattr(sys.modules[package], name, value)
    return value
