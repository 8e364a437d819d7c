"""Discovery of plugins (policies, placers) by name: adding one is adding one module.

Each module of a plugin package may define subclasses of the package's base class with a
``name`` class attribute; :func:`discover` imports every module of the package and maps each name
to its class. Other installed distributions add plugins through an entry-point group (e.g.
``[project.entry-points."dlsched.policies"]`` in their ``pyproject.toml``, each entry naming a
class). Nothing is registered at import time, so there is no global mutable registry.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import pkgutil
import types
import typing
from typing import Any, TypeGuard, TypeVar

T = TypeVar("T")


def discover(package: str, base: type[T], group: str | None = None) -> dict[str, type[T]]:
    """Map ``name`` to class for every concrete subclass of ``base`` defined in ``package``, and
    for every class the installed distributions list under the entry-point ``group``. A name
    given twice, or an entry point that is not such a class, is a RuntimeError naming it."""
    pkg = importlib.import_module(package)
    found: dict[str, type[T]] = {}

    def add(obj: type[T], origin: str) -> None:
        name = obj.name  # type: ignore[attr-defined]
        if name in found:
            raise RuntimeError(f"two {base.__name__} plugins are named {name!r} ({origin})")
        found[name] = obj

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and _is_plugin(obj, base):
                add(obj, module.__name__)
    if group is not None:
        for entry in sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name):
            obj = entry.load()
            if not (inspect.isclass(obj) and _is_plugin(obj, base)):
                raise RuntimeError(
                    f"entry point {entry.name!r} of group {group!r} ({entry.value}) is not a "
                    f"concrete {base.__name__} subclass with a name"
                )
            add(obj, f"entry point {entry.value}")
    return found


def _is_plugin(obj: type, base: type[T]) -> TypeGuard[type[T]]:
    return (
        issubclass(obj, base)
        and not inspect.isabstract(obj)
        and isinstance(getattr(obj, "name", None), str)
    )


def lookup(found: dict[str, type[T]], name: str, kind: str) -> type[T]:
    """The class registered as ``name``; a ValueError naming every ``kind`` available if none."""
    if name not in found:
        raise ValueError(f"unknown {kind} {name!r}; available: {', '.join(sorted(found))}")
    return found[name]


def _convert(text: str, annotation: Any, field: str) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is bool:
        low = text.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"option {field}: expected true/false, got {text!r}")
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if text.lower() in ("none", ""):
            return None
        inner = next(a for a in args if a is not type(None))
        return _convert(text, inner, field)
    if origin is tuple:
        inner = args[0] if args else str
        return tuple(_convert(p.strip(), inner, field) for p in text.split(",") if p.strip())
    try:
        return annotation(text)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"option {field}: expected {_expected(annotation)}, got {text!r}") from exc


_EXPECTED = {int: "a whole number", float: "a number", str: "text"}


def _expected(annotation: Any) -> str:
    """What a value of ``annotation`` looks like, in words a command-line user reads."""
    return _EXPECTED.get(annotation, getattr(annotation, "__name__", str(annotation)))


def build(cls: type[T], options: dict[str, str]) -> T:
    """Instantiate a dataclass plugin from text options, checking names and types."""
    # Messages name the plugin as the user named it, and list names as plain text.
    name = getattr(cls, "name", cls.__name__)
    if not dataclasses.is_dataclass(cls):
        if options:
            raise ValueError(f"{name!r} takes no options, got {', '.join(sorted(options))}")
        return cls()
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = set(options) - known
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(sorted(unknown))} of {name!r}; its options: "
            f"{', '.join(sorted(known)) or 'none'}"
        )
    kwargs = {k: _convert(v, hints[k], k) for k, v in options.items()}
    return cls(**kwargs)
