"""Plugins (policies, placers) by name.

Each module of a plugin package may define subclasses of the package's base class with a
``name`` class attribute; :func:`discover` imports every module of the package and maps each name
to its class (adding a plugin is adding one module). Other installed distributions add plugins
through an entry-point group (e.g. ``[project.entry-points."dlsched.policies"]`` in their
``pyproject.toml``, each entry naming a class).

Where importing every module would be slow (the elastic policies pull in numpy, scipy's
optimizers and scikit-learn), :class:`Plugins` maps the built-ins :class:`Declared` by name,
module and description to their classes, importing a module only when its class is looked up,
so listing them and running with one of them import none of the others. A test keeps each
declaration equal to what its class says of itself. Nothing is registered at import time, so
there is no global mutable registry.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import pkgutil
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
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


@dataclasses.dataclass(frozen=True)
class Declared:
    """A built-in plugin known before it is imported: its ``name``, where its class is
    (``module``, ``attr``) and the ``description`` listings show, equal to the class's own
    ``name`` and ``description`` (tests/test_plugins.py checks every declaration)."""

    name: str
    module: str
    attr: str
    description: str


def load(target: str) -> Any:
    """The object ``"package.module:attr"`` names (its module imported)."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class Plugins(Mapping[str, type[T]]):
    """Plugin classes by name, each imported when it is looked up (module docstring).

    The names are the ``declared`` built-ins (known without importing anything), then those of
    the classes the installed distributions list under the entry-point ``group``; those are
    loaded, as only a loaded class tells its name, the first time a name not declared is looked
    up or the names are listed (with no such distribution installed, that imports nothing).
    Every class must be a concrete subclass of ``base`` (``"module:attr"``, imported with the
    first class) named as it is looked up; a class that is not, or a name given twice, is a
    RuntimeError naming it, as for :func:`discover`. ``kind`` names the plugins in messages."""

    def __init__(
        self, declared: Iterable[Declared], base: str, group: str | None, kind: str
    ) -> None:
        self.declared: Mapping[str, Declared] = types.MappingProxyType(
            {d.name: d for d in declared}
        )
        self.base = base
        self.group = group
        self.kind = kind
        self._installed: dict[str, type[T]] | None = None

    def _base(self) -> type[T]:
        base: type[T] = load(self.base)
        return base

    def installed(self) -> Mapping[str, type[T]]:
        """The classes of the entry-point group by name, loaded on the first call."""
        if self._installed is None:
            found: dict[str, type[T]] = {}
            entries = (
                () if self.group is None else importlib.metadata.entry_points(group=self.group)
            )
            for entry in sorted(entries, key=lambda e: e.name):
                base = self._base()
                obj = entry.load()
                if not (inspect.isclass(obj) and _is_plugin(obj, base)):
                    raise RuntimeError(
                        f"entry point {entry.name!r} of group {self.group!r} ({entry.value}) is "
                        f"not a concrete {base.__name__} subclass with a name"
                    )
                name = obj.name  # type: ignore[attr-defined]
                if name in self.declared or name in found:
                    raise RuntimeError(
                        f"two {base.__name__} plugins are named {name!r} "
                        f"(entry point {entry.value})"
                    )
                found[name] = obj
            self._installed = found
        return self._installed

    def __getitem__(self, name: str) -> type[T]:
        declared = self.declared.get(name)
        if declared is None:
            return self.installed()[name]
        obj = load(f"{declared.module}:{declared.attr}")
        base = self._base()
        if not (inspect.isclass(obj) and _is_plugin(obj, base) and obj.name == name):  # type: ignore[attr-defined]
            raise RuntimeError(
                f"{self.kind} {name!r} is declared as {declared.module}:{declared.attr}, which "
                f"is not a concrete {base.__name__} subclass named {name!r}"
            )
        return obj

    def __contains__(self, name: object) -> bool:
        return name in self.declared or name in self.installed()

    def __iter__(self) -> Iterator[str]:
        return iter([*self.declared, *self.installed()])

    def __len__(self) -> int:
        return len(self.declared) + len(self.installed())

    def description(self, name: str) -> str:
        """What the plugin ``name`` does, in one line (a built-in's without importing it)."""
        declared = self.declared.get(name)
        if declared is not None:
            return declared.description
        return str(getattr(self[name], "description", ""))


def lookup(found: Mapping[str, type[T]], name: str, kind: str) -> type[T]:
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
